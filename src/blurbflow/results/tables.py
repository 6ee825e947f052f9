"""Per-study tables like the papers': test metric mean (std) and median over seeds, best per
row marked, BLURB score row (DESIGN §8). Written as CSV (numbers), Markdown and LaTeX."""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from blurbflow.io import write_text_atomic
from blurbflow.metrics.blurb import BLURB_TYPES, blurb_label, blurb_score
from blurbflow.results.aggregate import select_hparams
from blurbflow.tasks.registry import get_task

DIMS = ("model", "task", "recipe")
STATS = ("mean", "std", "median", "n", "best")
BLURB_KEY = "BLURB"  # comparison group of BLURB entries when marking the best


def study_layout(study: dict) -> tuple[str, list[str]]:
    """(rows dimension, column dimensions); every dimension with several values must be shown."""
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


def study_seeds(study: dict) -> list[int] | None:
    seeds = study.get("seeds")
    if seeds is None:
        return None
    return list(range(1, seeds + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]


def study_cells(cells: pd.DataFrame, study: dict) -> pd.DataFrame:
    """The study's cells (every status), at the hyperparameters selected on dev over the
    study's seeds."""
    keep = (
        cells["model"].isin(study["models"])
        & cells["task"].isin(study["tasks"])
        & cells["recipe"].isin(study["recipes"])
    )
    seeds = study_seeds(study)
    if seeds is not None:
        keep &= cells["seed"].isin(seeds)
    return select_hparams(cells[keep])


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


def _mark_best(entries: list[dict]) -> None:
    """Best = highest mean among entries scoring the same task (or among BLURB entries)."""
    for key in {e["group"] for e in entries}:
        group = [e for e in entries if e["group"] == key and not math.isnan(e["mean"])]
        if len(group) < 2:
            continue
        top = max(e["mean"] for e in group)
        for entry in group:
            entry["best"] = entry["mean"] == top


def _blurb_entry(parts: list[dict]) -> dict:
    """One BLURB entry from the per-task entries it summarises (BLURB of means and of medians)."""
    return {
        "mean": blurb_score({p["task"]: p["mean"] for p in parts}),
        "std": math.nan,  # seeds are not paired across tasks, so there is no per-seed BLURB
        "median": blurb_score({p["task"]: p["median"] for p in parts}),
        "n": min(p["n"] for p in parts),  # the weakest support among the tasks
        "group": BLURB_KEY,
    }


def study_table(cells: pd.DataFrame, name: str, study: dict) -> pd.DataFrame:
    """The study's table: index = row labels, columns = (column label, stat) with stats
    mean, std, median, n (seeds ok) and best (the highest mean for that task)."""
    rows_dim, column_dims = study_layout(study)
    order = {dim: list(study[f"{dim}s"]) for dim in DIMS}
    order["task"] = ordered_tasks(order["task"])
    selected = study_cells(cells, study)
    ok = selected[(selected["status"] == "ok") & selected["test"].notna()]
    scores = ok.groupby(list(DIMS))["test"].apply(list).to_dict() if len(ok) else {}

    column_keys = list(itertools.product(*(order[d] for d in column_dims)))
    entries = []
    for row in order[rows_dim]:
        for column in column_keys:
            key = {rows_dim: row, **dict(zip(column_dims, column, strict=True))}
            key.update({d: order[d][0] for d in DIMS if d not in key})
            summary = seed_summary(scores.get(tuple(key[d] for d in DIMS), []))
            entries.append({**key, **summary, "group": key["task"], "row": row,
                            "column": _label(column)})
    entries += _blurb_entries(entries, rows_dim, column_dims, order)
    _mark_best(entries)

    row_labels = list(dict.fromkeys(e["row"] for e in entries))
    column_labels = list(dict.fromkeys(e["column"] for e in entries))
    table = pd.DataFrame(
        index=pd.Index(row_labels, name=rows_dim),
        columns=pd.MultiIndex.from_product([column_labels, STATS], names=["column", "stat"]),
        dtype="object",
    )
    for entry in entries:
        for stat in STATS:
            table.loc[entry["row"], (entry["column"], stat)] = entry.get(stat, False)
    table = _typed(table, column_labels)
    table.attrs.update({
        "study": name, "title": study.get("title", name), "rows": rows_dim,
        "columns": column_dims, "blurb_rows": [r for r in row_labels if r.startswith(BLURB_KEY)],
    })
    return table


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
        table[(label, "best")] = table[(label, "best")].astype("bool")
    return table


def column_labels(table: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(table.columns.get_level_values("column")))


def format_entry(mean: float, std: float, n: int, digits: int = 1) -> str:
    """'84.3 (1.2)'; no std with one seed; an en dash with no successful seed."""
    if n == 0 or math.isnan(mean):
        return "–"
    if math.isnan(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({std:.{digits}f})"


def format_table(table: pd.DataFrame, bold: tuple[str, str] = ("**", "**")) -> pd.DataFrame:
    """Strings 'mean (std)' per table cell, the best per task wrapped in `bold` (Markdown)."""
    formatted = pd.DataFrame(index=table.index, columns=column_labels(table), dtype="object")
    for row in table.index:
        for label in formatted.columns:
            cell = table.loc[row, label]
            text = format_entry(cell["mean"], cell["std"], int(cell["n"]))
            formatted.loc[row, label] = f"{bold[0]}{text}{bold[1]}" if cell["best"] else text
    return formatted


def to_csv(table: pd.DataFrame) -> str:
    """Machine-readable: one column per (table column, stat), named 'label:stat'."""
    flat = table.copy()
    flat.columns = [f"{label}:{stat}" for label, stat in table.columns]
    return flat.to_csv()


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def to_markdown(table: pd.DataFrame) -> str:
    formatted = format_table(table)
    header = [table.index.name or "", *formatted.columns]
    lines = [
        "| " + " | ".join(_md_escape(h) for h in header) + " |",
        "|" + "|".join(["---", *["---:"] * len(formatted.columns)]) + "|",
    ]
    for row, values in formatted.iterrows():
        lines.append("| " + " | ".join(_md_escape(v) for v in [row, *values]) + " |")
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def _tex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def to_latex(table: pd.DataFrame) -> str:
    """A booktabs tabular; the best entries in \\textbf."""
    formatted = format_table(table, bold=("", ""))
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
            if table.loc[row, (label, "best")] else _tex_escape(formatted.loc[row, label])
            for label in labels
        ]
        lines.append(" & ".join([_tex_escape(row), *cells]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_table(table: pd.DataFrame, stem: str | os.PathLike) -> None:
    """Write `{stem}.csv`, `{stem}.md` and `{stem}.tex`, each atomically."""
    stem = Path(stem)
    write_text_atomic(stem.with_name(stem.name + ".csv"), to_csv(table))
    write_text_atomic(stem.with_name(stem.name + ".md"), to_markdown(table))
    write_text_atomic(stem.with_name(stem.name + ".tex"), to_latex(table))


def baseline_tests(cells: pd.DataFrame, study: dict) -> pd.DataFrame:
    """Each recipe against the study's baseline recipe, per (model, task): difference of mean
    test scores and Welch's t-test p-value over seeds (unequal variances: recipes differ in
    stability, which is the point of the comparison). NaN p-value with fewer than 2 seeds."""
    from scipy.stats import ttest_ind

    columns = ["model", "task", "recipe", "baseline", "n", "n_baseline", "delta", "p_value"]
    baseline = study.get("baseline")
    if not baseline or baseline not in study["recipes"]:
        return pd.DataFrame(columns=columns)
    selected = study_cells(cells, study)
    ok = selected[(selected["status"] == "ok") & selected["test"].notna()]
    scores = ok.groupby(list(DIMS))["test"].apply(list).to_dict() if len(ok) else {}
    rows = []
    for model in study["models"]:
        for task in ordered_tasks(study["tasks"]):
            base = scores.get((model, task, baseline), [])
            for recipe in study["recipes"]:
                if recipe == baseline:
                    continue
                other = scores.get((model, task, recipe), [])
                delta = (sum(other) / len(other) - sum(base) / len(base)
                         if other and base else math.nan)
                p_value = math.nan
                if len(other) > 1 and len(base) > 1:
                    with warnings.catch_warnings():  # identical scores: NaN, not a warning
                        warnings.simplefilter("ignore")
                        p_value = float(ttest_ind(other, base, equal_var=False).pvalue)
                rows.append([model, task, recipe, baseline, len(other), len(base), delta, p_value])
    return pd.DataFrame(rows, columns=columns)
