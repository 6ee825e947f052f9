"""The architecture matrix (issue 33, item 2): tiny random checkpoints of bert, roberta, electra,
deberta-v2, modernbert and llama (built here from configs, each with a real tokenizer of its kind:
tests/arch_helpers.py), through every task type on generated data: encoded with the project's
encoder, trained one short epoch with the real cell function, each result `ok`, verified as the
aggregation verifies it (test re-scored from its predictions) and shown in a study table.

Llama's own sequence classifier (the last real token, found by the pad id the cell sets) and
its sequence tasks with `pooling: mean` (MEAN) both run. The full matrix is `slow`; `make
test-fast` keeps one task type per architecture (FAST) and the tokenizer unit tests."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from arch_helpers import ARCHITECTURES, build_checkpoint, corpus, prepare_data

from blurbflow.models.tokenizer import (
    ENTITY_MARKERS,
    load_tokenizer,
    lowercases,
    tokenizer_settings,
)
from blurbflow.qa import make_windows
from blurbflow.record.verify import verify_result
from blurbflow.results.aggregate import COLUMNS, load_cell, normalise_types
from blurbflow.results.tables import study_table
from blurbflow.tasks import get_task
from blurbflow.train.cell import train_cell
from blurbflow.train.encode import encode_task

from model_helpers import make_options

# task type → (task, recipe name, input options)
CASES = {
    "ner": ("bc5chem", "standard", {}),
    "pico": ("ebmpico", "standard", {}),
    "re-dummify": ("chemprot", "standard", {"re_input": "dummify"}),
    "re-markers": ("chemprot", "markers", {"re_input": "markers"}),
    "sts": ("biosses", "standard", {}),
    "doccls": ("hoc", "standard", {}),
    "yesno-qa": ("pubmedqa", "standard", {}),
    "extractive-qa": ("squad", "standard", {}),
}
# the fast subset: one task type per architecture, every task type at least once
FAST = {
    "bert": "extractive-qa",
    "roberta": "ner",
    "electra": "sts",
    "deberta-v2": "re-markers",
    "modernbert": "doccls",
    "llama": "pico",
}
# Llama's sequence classifier reads the last token that is not padding: the cell sets
# config.pad_token_id to the encoder's pad id, as Llama checkpoints ship none (train/cell.py)
SEQUENCE = ("re-dummify", "re-markers", "sts", "doccls", "yesno-qa")
XFAIL: dict[tuple[str, str], str] = {}  # (architecture, task type) → why it fails today
# Llama's sequence tasks with `pooling: mean` (blurbflow's own head over the bare decoder,
# which needs no pad token): what a Llama recipe runs today
MEAN = {
    f"{case}+mean": (task, f"{recipe}-mean", {**inputs, "pooling": "mean"})
    for case, (task, recipe, inputs) in CASES.items()
    if case in SEQUENCE
}
ALL_CASES = {**CASES, **MEAN}


def cases_of(arch: str) -> list[str]:
    return list(CASES) + (list(MEAN) if arch == "llama" else [])


MAX_LENGTH = 64


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("matrix")
    data = prepare_data(root)
    return {"root": root, "data": data, "texts": corpus(data), "folders": {}, "cells": {}}


def folder_of(project, arch):
    """The architecture's checkpoint folder, built on first use."""
    folders = project["folders"]
    if arch not in folders:
        folders[arch] = build_checkpoint(arch, project["texts"], project["root"] / "models" / arch)
    return folders[arch]


def run_case(project, arch: str, case: str):
    """Encode, train one epoch; (result path, options, result)."""
    task, recipe, inputs = ALL_CASES[case]
    root, folder = project["root"], folder_of(project, arch)
    options = make_options(
        model=arch,
        model_source=str(folder),
        task=task,
        recipe=recipe,
        lr=1e-3,
        batch_size=8,
        epochs=1,
        max_length=MAX_LENGTH,
        seed=1,
        **inputs,
    )
    encoded = root / "encoded" / arch / case
    tokenizer = load_tokenizer(folder, **tokenizer_settings(options.model_options))
    encode_task(get_task(task), project["data"][task], tokenizer, options.inputs, encoded)
    path = root / "cells" / arch / task / recipe / options.hparams / "seed1" / "result.json"
    result = train_cell(options, encoded, project["data"][task], path)
    return path, options, result


def check_cell(project, arch: str, case: str):
    """The case's cell, trained once per module (the table test reuses it), checked."""
    done = project["cells"]
    if (arch, case) not in done:
        done[arch, case] = run_case(project, arch, case)
    path, options, result = done[arch, case]
    if ALL_CASES[case][2].get("re_input") == "markers":  # 4 new special tokens: embeddings grew
        meta = json.loads((project["root"] / "encoded" / arch / case / "meta.json").read_text())
        assert list(meta["added_tokens"]) == list(ENTITY_MARKERS)
        assert meta["vocab_size"] == len(load_tokenizer(folder_of(project, arch))) + 4
    assert result["status"] == "ok", (arch, case, result.get("error"))
    assert result["error"] is None and len(result["epochs"]) == 1
    assert verify_result(path, result, options, rescore=True) is None
    return path, options, result


def _param(arch: str, case: str):
    marks = (
        [pytest.mark.xfail(strict=True, reason=XFAIL[arch, case])] if (arch, case) in XFAIL else []
    )
    if FAST.get(arch) != case:
        marks.append(pytest.mark.slow)
    return pytest.param(arch, case, id=f"{arch}-{case}", marks=marks)


@pytest.mark.parametrize(
    ("arch", "case"), [_param(arch, case) for arch in ARCHITECTURES for case in cases_of(arch)]
)
def test_cell(project, arch, case):
    check_cell(project, arch, case)


def table_of(project, arch: str, cells: list[tuple]) -> pd.DataFrame:
    """The cells' rows as the aggregation reads them (each verified against its options) and
    the study table of one model, tasks as rows, recipes as columns."""
    rows = [load_cell(path, options, rescore=True) for path, options, _ in cells]
    frame = normalise_types(pd.DataFrame(rows, columns=COLUMNS))
    study = {
        "title": arch,
        "models": [arch],
        "tasks": sorted({options.task for _, options, _ in cells}),
        "recipes": sorted({options.recipe for _, options, _ in cells}),
        "seeds": [1],
        "table": {"rows": "task", "columns": ["recipe"]},
    }
    return frame, study_table(frame, arch, study)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_cells_reach_a_table(project, arch):
    """Every task type of one architecture: one verified row per cell in the cells frame and
    its score in the study table (tasks × recipes)."""
    cells = [check_cell(project, arch, c) for c in cases_of(arch) if (arch, c) not in XFAIL]
    frame, table = table_of(project, arch, cells)
    assert len(frame) == len(cells) and (frame["status"] == "ok").all(), frame["error"].tolist()
    assert frame["test"].notna().all()
    for _, options, result in cells:
        entry = table.loc[options.task][options.recipe]
        assert entry["n"] == 1 and entry["mean"] == pytest.approx(result["test"])


def test_a_sentencepiece_only_llama_folder_keeps_case(project, tmp_path):
    """A Llama folder with tokenizer.model and no tokenizer.json (transformers converts it): its
    normalizer turns spaces into "▁", which is not lower-casing (it used to be taken for it,
    and loading failed with 'could not make the tokenizer cased')."""
    folder = tmp_path / "llama"
    folder.mkdir()
    source = folder_of(project, "llama")
    for name in ("config.json", "model.safetensors", "tokenizer.model"):
        (folder / name).write_bytes((source / name).read_bytes())
    tokenizer = load_tokenizer(folder)
    assert not lowercases(tokenizer)
    assert tokenizer.tokenize("DNA") != tokenizer.tokenize("dna")
    assert lowercases(load_tokenizer(folder_of(project, "bert")))  # uncased BERT still is


def test_windows_of_a_left_padding_tokenizer(project):
    """Llama's tokenizer pads on the left (for generation); windows are unpadded and the
    batcher pads on the right, so they are made all the same, and the answer maps back."""
    tokenizer = load_tokenizer(folder_of(project, "llama"))
    assert tokenizer.padding_side == "left"
    context = "The kinase inhibits the receptor in vitro. " * 6
    example = {
        "id": "q",
        "question": "what does the kinase inhibit?",
        "context": context,
        "answer_texts": ["the receptor"],
        "answer_starts": [20],
        "is_impossible": False,
    }
    windows = make_windows(tokenizer, [example], 32, 8, 12)
    tokenizer.padding_side = "right"
    assert make_windows(tokenizer, [example], 32, 8, 12) == windows
    first = windows.offsets[0]
    span = (first[windows.start_positions[0]][0], first[windows.end_positions[0]][1])
    assert context[span[0] : span[1]].strip() == "the receptor"


def test_add_prefix_space_reaches_a_generic_byte_level_tokenizer(project):
    """ModernBERT's tokenizer.json (a generic fast tokenizer, byte-level BPE): the model entry's
    `add_prefix_space: true` tokenizes pre-split words (NER, PICO) as in running text, with the
    leading-space marker; transformers 5 records the keyword without applying it."""
    folder = folder_of(project, "modernbert")
    words = ["Mutations", "in", "IL-2"]
    plain = load_tokenizer(folder)
    assert "in" in plain(words, is_split_into_words=True).tokens()  # no marker: not as in text
    spaced = load_tokenizer(folder, add_prefix_space=True)
    encoded = spaced(words, is_split_into_words=True)
    assert encoded.tokens()[1:-1] == spaced.tokenize(" Mutations in IL-2")
    assert encoded.word_ids()[1:-1] == sorted(encoded.word_ids()[1:-1])
    assert plain(words, is_split_into_words=True).tokens() != encoded.tokens()
