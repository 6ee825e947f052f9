"""The model card (README.md) of an exported model: the seed's own card (blurbflow.train.kept)
extended by its table entry — every seed's dev and test score, their mean and spread, which
seed this is and how it was chosen — the study, the recipe, the data's checksums and where the
data comes from, and the citation of the protocol (docs/models.md)."""

from __future__ import annotations

import json

from blurbflow.export.choose import TIE_RULE, Entry
from blurbflow.tasks import get_task

PIPELINE = {True: "token-classification", False: "text-classification"}


def auto_class(task: str, options: dict) -> str | None:
    """The transformers class the folder loads with; None for blurbflow's own heads (a
    BiLSTM head, entity pooling in relation tasks, extractive QA's span head)."""
    spec = get_task(task)
    if spec.kind.target == "span" or options.get("head", "linear") != "linear":
        return None
    if spec.type == "re" and options.get("re_pooling", "cls") != "cls":
        return None
    token = spec.kind.token_level
    return "AutoModelForTokenClassification" if token else "AutoModelForSequenceClassification"


def _score(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _spread(summary: dict) -> str:
    std = "" if summary["std"] is None else f" ({summary['std']:.2f})"
    return f"{_score(summary['mean'])}{std}"


def data_sources(task: str) -> list[str]:
    spec = get_task(task)
    urls = [url for source in spec.raw for url in source.urls]
    if urls:
        return urls
    files = (spec.data or {}).get("files") or {}
    dataset = (spec.data or {}).get("dataset") or {}
    if dataset:
        return [f"{dataset.get('path')} (revision {dataset.get('revision')})"]
    return [f"{split}: {path}" for split, path in sorted(files.items())]


def entry_card(
    entry: Entry, seed: int, result: dict, metrics: tuple[str, str], context: dict
) -> str:
    """The card's text. `context`: base_model (hub id or None), citation, selection
    (best_seed or all_seeds), title (the study's)."""
    options, dev_metric, test_metric = result.get("options") or {}, metrics[0], metrics[1]
    auto = auto_class(entry.task, options)
    front = {
        "library_name": "transformers",
        "tags": ["blurbflow", "biomedical", "blurb", entry.task],
        "metrics": sorted({dev_metric, test_metric}),
    }
    if context.get("base_model"):
        front["base_model"] = context["base_model"]
    if auto:
        front["pipeline_tag"] = PIPELINE[auto == "AutoModelForTokenClassification"]
    ours = entry.seed(seed)
    how = (
        f"the best dev score of the entry's {len(entry.seeds)} seeds ({TIE_RULE}; only seeds "
        "that finished ok are candidates, the test score plays no part)"
        if context["selection"] == "best_seed"
        else f"every seed of the entry that finished ok is exported; this is seed {seed}"
    )
    via = "" if entry.run_recipe == entry.recipe else f" (via recipe `{entry.run_recipe}`)"
    lines = ["---", *(f"{k}: {json.dumps(v)}" for k, v in front.items()), "---", ""]
    lines += [
        f"# {entry.model} fine-tuned on {entry.task}: study `{entry.study}`, "
        f"recipe `{entry.recipe}`{via}, seed {seed}",
        "",
        f"Fine-tuned by blurbflow for the table of the study `{entry.study}` "
        f"({context.get('title') or entry.study}).",
        "",
        "## Load",
        "",
        *(_load(auto) if auto else _custom(options)),
        "",
        "## Scores",
        "",
        f"This model is seed {seed}, chosen as {how}. Dev: {dev_metric}; test: {test_metric}; "
        "×100, at the evaluation the seed reports.",
        "",
        "| seed | status | dev | test | |",
        "|---|---|---|---|---|",
        *(
            f"| {s['seed']} | {s['status']} | {_score(s['dev'])} | {_score(s['test'])} | "
            f"{'this model' if s['seed'] == seed else ''} |"
            for s in entry.seeds
        ),
        "",
        f"Over the {entry.test['n']} seeds that finished ok: dev {_spread(entry.dev)}, test "
        f"{_spread(entry.test)} (mean (sample standard deviation)). This model: dev "
        f"{_score(ours['dev'])}, test {_score(ours['test'])}.",
        "",
        "## Task and data",
        "",
        f"Task `{entry.task}` ({get_task(entry.task).type}); data from:",
        "",
        *(f"- {source}" for source in data_sources(entry.task)),
        "",
        "Prepared splits the seed trained and was scored on (sha256 of each parquet file):",
        "",
        *(
            f"- {split}: `{digest}`"
            for split, digest in sorted(((result.get("identity") or {}).get("data") or {}).items())
        ),
        "",
        "## Recipe",
        "",
        f"Recipe `{entry.run_recipe}` at the grid point `{entry.hparams}` (chosen on mean dev "
        f"over seeds, as the table chooses it); the seed's options:",
        "",
        "```json",
        json.dumps(options, indent=1, sort_keys=True, default=str),
        "```",
        "",
        "## Provenance",
        "",
        f"- weights (model.safetensors) sha256: `{result.get('model_sha256')}`",
        f"- base model commit: `{result.get('model_commit')}`",
        f"- blurbflow commit: `{result.get('git_commit')}`; finished {result.get('finished')}",
        f"- versions: {json.dumps(result.get('versions') or {}, sort_keys=True)}",
        "",
        "## Citation",
        "",
        f"The protocol is that of {context['citation']}. Cite it, and blurbflow (its "
        "CITATION.cff), with this model.",
        "",
    ]
    return "\n".join(lines)


def _load(auto: str) -> list[str]:
    return [
        "```python",
        f"from transformers import AutoTokenizer, {auto}",
        "",
        'tokenizer = AutoTokenizer.from_pretrained("path/or/repo")',
        f'model = {auto}.from_pretrained("path/or/repo")',
        "```",
    ]


def _custom(options: dict) -> list[str]:
    return [
        f"The head (`head: {options.get('head', 'linear')}`, `re_pooling: "
        f"{options.get('re_pooling', 'cls')}`, or extractive QA's span head) is blurbflow's own "
        "module: the weights load with blurbflow, not with a transformers Auto class.",
    ]
