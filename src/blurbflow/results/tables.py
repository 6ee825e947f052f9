"""Per-study tables like the papers': test metric mean (std) and median over seeds, best per
row marked, BLURB score row (DESIGN §8). Written as CSV (numbers), Markdown and LaTeX."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from blurbflow.io import write_text_atomic
from blurbflow.metrics.blurb import BLURB_TYPES, blurb_label, blurb_score, types_present
from blurbflow.results.aggregate import select_hparams
from blurbflow.results.selection import (
    choose_recipes,
    run_recipes,
    scope_mask,
    select_on_reference,
    shown_study,
)
from blurbflow.tasks.registry import get_task

DIMS = ("model", "task", "recipe")
STATS = ("mean", "std", "median", "n", "diverged", "best")
BLURB_KEY = "BLURB"  # comparison group of BLURB entries when marking the best


def study_layout(study: dict) -> tuple[str, list[str]]:
    """(rows dimension, column dimensions); every dimension with several values must be shown
    (a `choose` group counts as the one recipe it shows)."""
    study = shown_study(study)
    missing = [f"{d}s" for d in DIMS if not study.get(f"{d}s")]
    if missing:
        raise ValueError(f"study needs a non-empty list of {', '.join(missing)}")
    table = study.get("table") or {"rows": "task", "columns": ["model", "recipe"]}
    rows, columns = table.get("rows", "task"), list(table.get("columns", []))
    for dim in [rows, *columns]:
        if dim not in DIMS:
            raise ValueError(f"study table dimension {dim!r} is not one of {', '.join(DIMS)}")
    if rows in columns or len(set(columns)) != len(columns):
        raise ValueError(f"study table uses a dimension twice: rows={rows!r} columns={columns}")
    hidden = [d for d in DIMS if d != rows and d not in columns and len(study[f"{d}s"]) > 1]
    if hidden:
        raise ValueError(f"study table must show {', '.join(hidden)} (several values) in rows or "
                         "columns")
    return rows, columns


def ordered_tasks(tasks: Sequence[str]) -> list[str]:
    """Tasks grouped by BLURB type order, keeping the study's order within a type."""
    return sorted(tasks, key=lambda task: BLURB_TYPES.index(get_task(task).type))


def _seed_list(seeds) -> list[int]:
    return list(range(1, seeds + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]


def study_seeds(study: dict, task: str | None = None) -> list[int] | None:
    """The study's seeds (None: any seed). `seeds` is a count, a list, or a mapping task → count
    or list with a `default`; with a mapping and no `task`, the union over the study's tasks."""
    seeds = study.get("seeds")
    if seeds is None:
        return None
    if not isinstance(seeds, dict):
        return _seed_list(seeds)
    if task is None:
        return sorted({s for t in study["tasks"] for s in study_seeds(study, t) or []})
    entry = seeds.get(task, seeds.get("default"))
    if entry is None:
        raise ValueError(f"study seeds: no entry for task {task!r} and no `default`")
    return _seed_list(entry)


def in_study(cells: pd.DataFrame, study: dict) -> pd.Series:
    """Mask of the study's cells (every status and hyperparameters; every recipe of a `choose`
    group, each only where its `recipe_scope` runs it)."""
    keep = (
        cells["model"].isin(study["models"])
        & cells["task"].isin(study["tasks"])
        & cells["recipe"].isin(run_recipes(study))
        & scope_mask(cells, study)
    )
    seeds = study.get("seeds")
    if isinstance(seeds, dict):
        allowed = pd.Series(False, index=cells.index)
        for task in study["tasks"]:
            allowed |= (cells["task"] == task) & cells["seed"].isin(study_seeds(study, task))
        keep &= allowed
    elif seeds is not None:
        keep &= cells["seed"].isin(study_seeds(study))
    return keep.fillna(False).astype(bool)


# The columns the per-study tables and statistics read: filtering 20k rows of these is several
# times cheaper than of every column (options, per-epoch records, versions, paths …).
STUDY_COLUMNS = [
    "model", "task", "recipe", "hparams", "seed", "status", "dev", "test", "chance_dev",
    "chance_test", "gpu_hours", "wall_seconds",
]


def study_cells(cells: pd.DataFrame, study: dict) -> pd.DataFrame:
    """The study's cells (every status), at the hyperparameters selected on dev over the
    study's seeds (on its `reference_models` when it names them), each `choose` group reduced
    to its recipe best on dev (see `results.selection`); only the STUDY_COLUMNS that `cells`
    has (and `chosen` with groups)."""
    light = cells[[c for c in STUDY_COLUMNS if c in cells.columns]]
    light = light[in_study(light, study)]
    reference = study.get("reference_models")
    selected = select_on_reference(light, reference) if reference else select_hparams(light)
    return choose_recipes(selected, study)


def compared_dimension(study: dict) -> str | None:
    """What the best mark compares: the recipes (for the same model and task) when the study
    has several, else the models (for the same task); None when each task has one entry."""
    if len(study["recipes"]) > 1:
        return "recipe"
    if len(study["models"]) > 1:
        return "model"
    return None


def best_rule(study: dict) -> str:
    """The best mark in words, for captions."""
    return {
        "recipe": "best mean among the recipes, for the same model and task",
        "model": "best mean among the models, for the same task",
        None: "no mark (one entry per task)",
    }[compared_dimension(study)]


def seed_summary(values: Sequence[float]) -> dict:
    """Mean, sample std (ddof=1; NaN with one seed), median and count of per-seed scores."""
    series = pd.Series(list(values), dtype="float64")
    return {
        "mean": series.mean() if len(series) else math.nan,
        "std": series.std(ddof=1) if len(series) > 1 else math.nan,
        "median": series.median() if len(series) else math.nan,
        "n": len(series),
    }


def _label(values: Sequence[str]) -> str:
    return " / ".join(values) if values else "test"


def _mark_best(entries: list[dict], compared: str | None) -> None:
    """Best = highest mean among the entries that differ only in the `compared` dimension (the
    same task, or both BLURB; and the same model when recipes are compared)."""
    if compared is None:
        return
    groups: dict[tuple, list[dict]] = {}
    for entry in entries:
        if math.isnan(entry["mean"]):
            continue
        key = tuple(entry.get(d) for d in DIMS if d != compared)
        groups.setdefault(key, []).append(entry)
    for group in groups.values():
        if len(group) < 2:
            continue
        top = max(e["mean"] for e in group)
        for entry in group:
            entry["best"] = entry["mean"] == top


def _blurb_entry(parts: list[dict]) -> dict:
    """One BLURB entry from the per-task entries it summarises (BLURB of means and of medians)."""
    entry = {
        "mean": blurb_score({p["task"]: p["mean"] for p in parts}),
        "std": math.nan,  # seeds are not paired across tasks, so there is no per-seed BLURB
        "median": blurb_score({p["task"]: p["median"] for p in parts}),
        "n": min(p["n"] for p in parts),  # the weakest support among the tasks
        "diverged": sum(p["diverged"] for p in parts),
        "task": BLURB_KEY,
    }
    for dim in ("model", "recipe"):  # the dimension its parts share, for the best mark
        values = {p[dim] for p in parts}
        entry[dim] = values.pop() if len(values) == 1 else None
    return entry


def study_table(
    cells: pd.DataFrame, name: str, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The study's table: index = row labels, columns = (column label, stat) with stats
    mean, std, median, n (seeds ok) and best (see `compared_dimension`). `selected`: the
    study's cells already through `study_cells`, when the caller has them."""
    study = shown_study(study)
    rows_dim, column_dims = study_layout(study)
    order = {dim: list(study[f"{dim}s"]) for dim in DIMS}
    order["task"] = ordered_tasks(order["task"])
    selected = study_cells(cells, study) if selected is None else selected
    scores, diverged = seed_scores(selected), diverged_counts(selected)

    column_keys = list(itertools.product(*(order[d] for d in column_dims)))
    entries = []
    for row in order[rows_dim]:
        for column in column_keys:
            key = {rows_dim: row, **dict(zip(column_dims, column, strict=True))}
            key.update({d: order[d][0] for d in DIMS if d not in key})
            summary = seed_summary(scores.get(tuple(key[d] for d in DIMS), []))
            summary["diverged"] = diverged.get(tuple(key[d] for d in DIMS), 0)
            entries.append({**key, **summary, "row": row, "column": _label(column)})
    entries += _blurb_entries(entries, rows_dim, column_dims, order)
    _mark_best(entries, compared_dimension(study))

    row_labels = list(dict.fromkeys(e["row"] for e in entries))
    column_labels = list(dict.fromkeys(e["column"] for e in entries))
    empty = {
        "mean": math.nan, "std": math.nan, "median": math.nan, "n": 0, "diverged": 0, "best": False
    }
    data = {(c, stat): [empty[stat]] * len(row_labels) for c in column_labels for stat in STATS}
    position = {row: i for i, row in enumerate(row_labels)}
    for entry in entries:
        for stat in STATS:
            data[(entry["column"], stat)][position[entry["row"]]] = entry.get(stat, False)
    table = pd.DataFrame(
        data,
        index=pd.Index(row_labels, name=rows_dim),
        columns=pd.MultiIndex.from_product([column_labels, STATS], names=["column", "stat"]),
    )
    table = _typed(table, column_labels)
    table.attrs.update({
        "chosen": chosen_recipes(selected, rows_dim, column_dims),
        "study": name, "title": study.get("title", name), "rows": rows_dim,
        "columns": column_dims, "blurb_rows": [r for r in row_labels if r.startswith(BLURB_KEY)],
        "best_rule": best_rule(study),
    })
    return table


def chosen_recipes(selected: pd.DataFrame, rows_dim: str, column_dims: list[str]) -> dict:
    """(row, column label) → the recipe a `choose` group picked there ('' when none)."""
    if "chosen" not in selected.columns:
        return {}
    picked = selected.dropna(subset=["chosen"]).drop_duplicates(list(DIMS))
    return {
        (row[rows_dim], _label([row[d] for d in column_dims])): row["chosen"]
        for row in picked.to_dict("records")
    }


def seed_scores(selected: pd.DataFrame) -> dict[tuple, list[float]]:
    """(model, task, recipe) → the test scores of its ok seeds, in seed order."""
    ok = selected[(selected["status"] == "ok") & selected["test"].notna()]
    if not len(ok):
        return {}
    ok = ok.sort_values("seed", kind="stable")
    return {key: list(group) for key, group in ok.groupby(list(DIMS), sort=False)["test"]}


def diverged_counts(selected: pd.DataFrame) -> dict[tuple, int]:
    """(model, task, recipe) → how many of its seeds diverged (counted, never averaged in)."""
    bad = selected[selected["status"] == "diverged"]
    return {key: len(group) for key, group in bad.groupby(list(DIMS), sort=False)}


def _blurb_entries(entries, rows_dim, column_dims, order) -> list[dict]:
    """A BLURB row (tasks as rows) or BLURB columns (tasks among the columns)."""
    tasks = order["task"]
    if rows_dim == "task" and len(tasks) > 1:
        label = blurb_label(tasks)
        return [
            {**_blurb_entry([e for e in entries if e["column"] == column]),
             "row": label, "column": column}
            for column in dict.fromkeys(e["column"] for e in entries)
        ]
    if "task" in column_dims and len(tasks) > 1:
        others = [d for d in column_dims if d != "task"]
        blurb = []
        for row in order[rows_dim]:
            for other in itertools.product(*(order[d] for d in others)):
                parts = [e for e in entries if e["row"] == row
                         and all(e[d] == v for d, v in zip(others, other, strict=True))]
                label = _label([blurb_label(tasks), *other])
                blurb.append({**_blurb_entry(parts), "row": row, "column": label})
        return blurb
    return []


def _typed(table: pd.DataFrame, column_labels: list[str]) -> pd.DataFrame:
    for label in column_labels:
        for stat in ("mean", "std", "median"):
            table[(label, stat)] = table[(label, stat)].astype("float64")
        table[(label, "n")] = table[(label, "n")].astype("int64")
        table[(label, "diverged")] = table[(label, "diverged")].astype("int64")
        table[(label, "best")] = table[(label, "best")].astype("bool")
    return table


def column_labels(table: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(table.columns.get_level_values("column")))


def format_entry(mean: float, std: float, n: int, digits: int = 1, diverged: int = 0) -> str:
    """'84.3 (1.2)'; no std with one seed; an en dash with no successful seed; ' [k diverged]'
    when seeds diverged (they are not in the mean)."""
    note = f" [{diverged} diverged]" if diverged else ""
    if n == 0 or math.isnan(mean):
        return f"–{note}"
    if math.isnan(std):
        return f"{mean:.{digits}f}{note}"
    return f"{mean:.{digits}f} ({std:.{digits}f}){note}"


def table_entries(table: pd.DataFrame) -> dict[tuple[str, str], dict]:
    """(row, column label) → {stat: value, and `chosen`: the recipe a `choose` group picked
    or ''}, read in one pass (`.loc` per entry is slow)."""
    columns = {column: table[column].tolist() for column in table.columns}
    chosen = table.attrs.get("chosen") or {}
    return {
        (row, label): {**{stat: columns[(label, stat)][i] for stat in STATS},
                       "chosen": chosen.get((row, label), "")}
        for i, row in enumerate(table.index) for label in column_labels(table)
    }


def entry_text(entry: dict) -> str:
    """format_entry of one `table_entries` entry, then `via {recipe}` where a `choose` group
    picked that recipe on dev."""
    text = format_entry(
        entry["mean"], entry["std"], int(entry["n"]), diverged=int(entry["diverged"])
    )
    return f"{text} via {entry['chosen']}" if entry.get("chosen") else text


def format_table(table: pd.DataFrame, bold: tuple[str, str] = ("**", "**")) -> pd.DataFrame:
    """Strings 'mean (std)' per table cell, the best entries wrapped in `bold` (Markdown)."""
    labels = column_labels(table)
    entries = table_entries(table)
    grid = []
    for row in table.index:
        texts = []
        for label in labels:
            cell = entries[(row, label)]
            text = entry_text(cell)
            texts.append(f"{bold[0]}{text}{bold[1]}" if cell["best"] else text)
        grid.append(texts)
    return pd.DataFrame(grid, index=table.index, columns=labels, dtype="object")


def to_csv(table: pd.DataFrame) -> str:
    """Machine-readable: one column per (table column, stat), named 'label:stat'."""
    flat = table.copy()
    flat.columns = [f"{label}:{stat}" for label, stat in table.columns]
    return flat.to_csv()


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def format_medians(table: pd.DataFrame) -> pd.DataFrame:
    """Strings 'median (n=k)' per table cell: the median over seeds and the number of ok seeds
    (no n on BLURB entries, which summarise several tasks)."""
    labels = column_labels(table)
    entries = table_entries(table)
    blurb_rows = set(table.attrs.get("blurb_rows", []))
    grid = []
    for row in table.index:
        texts = []
        for label in labels:
            median, n = entries[(row, label)]["median"], int(entries[(row, label)]["n"])
            if n == 0 or math.isnan(median):
                texts.append("–")
            elif row in blurb_rows or label.startswith(BLURB_KEY):
                texts.append(f"{median:.1f}")
            else:
                texts.append(f"{median:.1f} (n={n})")
        grid.append(texts)
    return pd.DataFrame(grid, index=table.index, columns=labels, dtype="object")


MEDIAN_CAPTION = "Median over seeds (n = seeds that finished ok):"


def _markdown_grid(corner: str, formatted: pd.DataFrame) -> list[str]:
    header = [corner, *formatted.columns]
    lines = [
        "| " + " | ".join(_md_escape(h) for h in header) + " |",
        "|" + "|".join(["---", *["---:"] * len(formatted.columns)]) + "|",
    ]
    for row, values in formatted.iterrows():
        lines.append("| " + " | ".join(_md_escape(v) for v in [row, *values]) + " |")
    return lines


def to_markdown(table: pd.DataFrame) -> str:
    """Mean (std) over seeds with the best entries in bold, then the medians."""
    corner = table.index.name or ""
    lines = _markdown_grid(corner, format_table(table))
    lines += ["", MEDIAN_CAPTION, "", *_markdown_grid(corner, format_medians(table))]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def _tex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def _latex_grid(table: pd.DataFrame, formatted: pd.DataFrame, bold: bool) -> list[str]:
    labels = list(formatted.columns)
    lines = [
        r"\begin{tabular}{l" + "r" * len(labels) + "}",
        r"\toprule",
        " & ".join(_tex_escape(h) for h in [table.index.name or "", *labels]) + r" \\",
        r"\midrule",
    ]
    blurb_rows = set(table.attrs.get("blurb_rows", []))
    for row in formatted.index:
        if row in blurb_rows:
            lines.append(r"\midrule")
        cells = [
            r"\textbf{" + _tex_escape(formatted.loc[row, label]) + "}"
            if bold and table.loc[row, (label, "best")]
            else _tex_escape(formatted.loc[row, label])
            for label in labels
        ]
        lines.append(" & ".join([_tex_escape(row), *cells]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def to_latex(table: pd.DataFrame) -> str:
    """Booktabs tabulars: mean (std) with the best entries in \\textbf, then the medians."""
    lines = _latex_grid(table, format_table(table, bold=("", "")), bold=True)
    lines += ["", r"\par\medskip", f"% {MEDIAN_CAPTION}",
              *_latex_grid(table, format_medians(table), bold=False)]
    return "\n".join(lines) + "\n"


def write_table(table: pd.DataFrame, stem: str | os.PathLike) -> None:
    """Write `{stem}.csv`, `{stem}.md` and `{stem}.tex`, each atomically."""
    stem = Path(stem)
    write_text_atomic(stem.with_name(stem.name + ".csv"), to_csv(table))
    write_text_atomic(stem.with_name(stem.name + ".md"), to_markdown(table))
    write_text_atomic(stem.with_name(stem.name + ".tex"), to_latex(table))


def blurb_overview(
    cells: pd.DataFrame, study: dict, selected: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The overview's BLURB table of a study spanning several task types: one row per
    (model, recipe) entry, one column per task type (the mean over that type's tasks of the
    per-task mean over seeds), then the BLURB score (the mean of the type columns) and `n`,
    the fewest ok seeds behind any task. Empty when the study has one task type."""
    study = shown_study(study)
    types = types_present(study["tasks"])
    if len(types) < 2:
        return pd.DataFrame()
    scores = seed_scores(study_cells(cells, study) if selected is None else selected)
    label = blurb_label(study["tasks"])
    rows, index = [], []
    for model in study["models"]:
        for recipe in study["recipes"]:
            by_type: dict[str, list[float]] = {t: [] for t in types}
            counts = []
            for task in study["tasks"]:
                values = scores.get((model, task, recipe), [])
                counts.append(len(values))
                mean = sum(values) / len(values) if values else math.nan
                by_type[get_task(task).type].append(mean)
            row = {t: sum(v) / len(v) for t, v in by_type.items()}
            row[label] = sum(row.values()) / len(types)  # NaN if any task has no ok seed
            row["n"] = min(counts)
            rows.append(row)
            index.append(entry_label(study, model, recipe))
    frame = pd.DataFrame(rows, index=pd.Index(index, name="entry"))
    frame.attrs["blurb"] = label
    return frame


def entry_label(study: dict, model: str, recipe: str) -> str:
    """'model / recipe', naming only the dimensions the study varies (the model if neither)."""
    parts = [v for v, d in ((model, "models"), (recipe, "recipes")) if len(study[d]) > 1]
    return " / ".join(parts) or model
