"""What a cell reads: the training instances (train or train+dev, then a fixed subsample), the
checks that the tokenized data matches the options, and the splits, each read on first use.

Training-data options (docs/recipes.md): `train_on: train+dev` trains on both splits; nothing is
then held out for selection, so the cell selects the `last` epoch. `train_subsample: N` keeps N
training instances (questions, with all their windows, for extractive QA) drawn with
`subsample_seed` (default 0), independent of the cell's seed, so every seed sees the same subset.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from blurbflow.models.load import add_entity_markers, load_tokenizer, tokenizer_settings
from blurbflow.models.prefetch import model_folder
from blurbflow.options import CellOptions
from blurbflow.tasks import TaskSpec
from blurbflow.train.encode import load_encoded
from blurbflow.train.predict import gold_labels


def training_data(splits: dict[str, dict], options: CellOptions) -> dict[str, list]:
    """The training instances of the cell: train (or train+dev), then the fixed subsample."""
    train = splits["train"]
    if options.train_on == "train+dev":
        dev = splits["dev"]
        train = {k: list(v) + list(dev[k]) for k, v in train.items()}
    elif options.train_on != "train":
        raise ValueError(f"train_on: unknown {options.train_on!r}; use train or train+dev")
    wanted = options.train_subsample
    if wanted is not None:
        units = instances(train)
        if not 0 < int(wanted) <= len(units):
            raise ValueError(
                f"train_subsample={wanted}: task {options.task} has {len(units)} training "
                f"instances (train_on: {options.train_on}); use 1 … {len(units)}"
            )
        rng = random.Random(int(options.subsample_seed))
        keep = sorted(row for unit in rng.sample(units, int(wanted)) for row in unit)
        train = {k: [v[i] for i in keep] for k, v in train.items()}
    return train


def instances(split: dict[str, list]) -> list[list[int]]:
    """The split's rows grouped by training instance: a question's context windows are one
    instance (extractive QA), any other row is one of its own."""
    if "example" not in split:
        return [[row] for row in range(len(split["input_ids"]))]
    rows: dict[str, list[int]] = {}
    for row, question in enumerate(split["id"]):
        rows.setdefault(question, []).append(row)
    return list(rows.values())


def entity_pooling(spec: TaskSpec, options: CellOptions) -> str:
    entities = spec.kind.inputs == "entities"  # relation extraction
    return options.re_pooling if entities else "cls"


def uses_markers(spec: TaskSpec, options: CellOptions) -> bool:
    return spec.kind.inputs == "entities" and options.inputs.re_input == "markers"


def check_encoded(meta: dict, spec: TaskSpec, options: CellOptions, encoded_dir: Path) -> None:
    """The tokenized data must have been made with the cell's input options."""
    for name, value in (meta.get("inputs") or {}).items():
        asked = getattr(options.inputs, name, None)
        if asked != value:
            raise ValueError(
                f"{encoded_dir} was tokenized with {name}={value!r} but the cell asks for "
                f"{name}={asked!r}; tokenize again for these options"
            )
    pooling, re_input = entity_pooling(spec, options), options.inputs.re_input
    if pooling == "entity_start" and re_input != "markers":
        raise ValueError(
            f"task {spec.name}: re_pooling='entity_start' reads the [E1]/[E2] marker tokens, so it "
            f"needs re_input: markers (got {re_input!r}); use re_pooling: max or cls"
        )
    missing = sum(s.get("entities_not_found", 0) for s in meta.get("splits", {}).values())
    if pooling != "cls" and missing:
        raise ValueError(
            f"task {spec.name}: re_pooling={pooling!r} needs both entities in every instance, "
            f"but {missing} entity positions were not found with re_input="
            f"{re_input!r}; use re_pooling: cls for {spec.name}"
        )


def token_ids(meta: dict, spec: TaskSpec, options: CellOptions, encoded_dir: Path):
    """(padding id, vocabulary size when entity markers were added, else None). The tokenizer
    is loaded only when meta.json lacks the padding id or markers must be checked."""
    pad_id, markers = meta.get("pad_id"), uses_markers(spec, options)
    if pad_id is not None and not markers:
        return pad_id, None
    model = options.model_options
    tokenizer = load_tokenizer(
        model_folder(model), entity_markers=markers, **tokenizer_settings(model)
    )
    pad_id = tokenizer.pad_token_id or 0
    if not markers:
        return pad_id, None
    expected, added = meta.get("added_tokens"), add_entity_markers(tokenizer)
    if expected and expected != added:
        raise ValueError(
            f"{encoded_dir}: entity marker ids {expected} differ from the model tokenizer's "
            f"{added}; tokenize again with this model's tokenizer"
        )
    return pad_id, len(tokenizer)


class Splits:
    """The cell's tokenized splits, prepared frames and gold, each read once, on first use (the
    first step needs only train; evaluation data loads at the first evaluation)."""

    def __init__(self, spec: TaskSpec, encoded_dir: Path, data_dir: Path):
        self.spec, self.encoded_dir, self.data_dir = spec, Path(encoded_dir), Path(data_dir)
        self._read: dict[tuple[str, str], object] = {}

    def _once(self, what: str, split: str, read):
        if (what, split) not in self._read:
            self._read[(what, split)] = read()
        return self._read[(what, split)]

    def encoded(self, split: str) -> dict:
        return self._once("encoded", split, lambda: load_encoded(self.encoded_dir, split))

    def frame(self, split: str) -> pd.DataFrame:
        return self._once(
            "frame", split, lambda: pd.read_parquet(self.data_dir / f"{split}.parquet")
        )

    def gold(self, split: str) -> list:
        return self._once("gold", split, lambda: gold_labels(self.spec, self.frame(split)))
