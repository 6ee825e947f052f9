"""A study's table (results/tables.py `study_table`) as text: CSV with every number, and
Markdown and LaTeX with 'mean (std)' per entry, the best in bold, then the medians; a study with
`statistic: median` shows 'median (IQR)' first, then the means (each statistic's spread and
second: results/statistics.py)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from blurbflow.util.io import write_text_atomic
from blurbflow.results.statistics import REGISTRY
from blurbflow.results.tables import BLURB_KEY, column_labels, table_entries


def format_entry(mean: float, std: float, n: int, digits: int = 1, diverged: int = 0) -> str:
    """'84.3 (1.2)'; no std with one seed; an en dash with no successful seed; ' [k diverged]'
    when seeds diverged (they are not in the mean)."""
    note = f" [{diverged} diverged]" if diverged else ""
    if n == 0 or math.isnan(mean):
        return f"–{note}"
    if math.isnan(std):
        return f"{mean:.{digits}f}{note}"
    return f"{mean:.{digits}f} ({std:.{digits}f}){note}"


def entry_text(entry: dict, statistic: str = "mean") -> str:
    """format_entry of one `table_entries` entry ('median (IQR)' for `statistic` median), then
    `via {recipe}` where a `choose` group picked that recipe on dev."""
    spread = REGISTRY[statistic].spread
    text = format_entry(
        entry[statistic],
        entry[spread] if spread else math.nan,
        int(entry["n"]),
        diverged=int(entry["diverged"]),
    )
    return f"{text} via {entry['chosen']}" if entry.get("chosen") else text


def format_table(table: pd.DataFrame, bold: tuple[str, str] = ("**", "**")) -> pd.DataFrame:
    """Strings 'mean (std)' (or 'median (IQR)') per table cell, the best entries wrapped in
    `bold` (Markdown)."""
    labels = column_labels(table)
    entries = table_entries(table)
    statistic = table.attrs.get("statistic", "mean")
    grid = []
    for row in table.index:
        texts = []
        for label in labels:
            cell = entries[(row, label)]
            text = entry_text(cell, statistic)
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
    (no n on BLURB entries, which summarise several tasks); the means instead in a table whose
    statistic is the median."""
    labels = column_labels(table)
    entries = table_entries(table)
    blurb_rows = set(table.attrs.get("blurb_rows", []))
    other = REGISTRY[table.attrs.get("statistic", "mean")].second
    grid = []
    for row in table.index:
        texts = []
        for label in labels:
            median, n = entries[(row, label)][other], int(entries[(row, label)]["n"])
            if n == 0 or math.isnan(median):
                texts.append("–")
            elif row in blurb_rows or label.startswith(BLURB_KEY):
                texts.append(f"{median:.1f}")
            else:
                texts.append(f"{median:.1f} (n={n})")
        grid.append(texts)
    return pd.DataFrame(grid, index=table.index, columns=labels, dtype="object")


def _captions(table: pd.DataFrame) -> tuple[list[str], str]:
    """(lines before the first grid, caption of the second) for the table's statistic: e.g.
    'Median (IQR: …) over seeds; bold: the best median.' (mean tables have no first line)."""
    notes = [table.attrs.get(key) for key in ("folds", "select")]  # cross-validation, epochs
    notes = [line for note in notes if note for line in (note, "")]
    statistic = REGISTRY[table.attrs.get("statistic", "mean")]
    second = f"{statistic.second.capitalize()} over seeds (n = seeds that finished ok):"
    if not statistic.first_line:
        return notes, second
    words = statistic.words[0].upper() + statistic.words[1:]
    return [f"{words} over seeds; bold: the best {statistic.name}.", *notes], second


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
    first, second = _captions(table)
    lines = [*first, *_markdown_grid(corner, format_table(table))]
    lines += ["", second, "", *_markdown_grid(corner, format_medians(table))]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
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
    first, second = _captions(table)
    lines = [f"% {line}" for line in first if line]
    lines += _latex_grid(table, format_table(table, bold=("", "")), bold=True)
    lines += [
        "",
        r"\par\medskip",
        f"% {second}",
        *_latex_grid(table, format_medians(table), bold=False),
    ]
    return "\n".join(lines) + "\n"


def write_table(table: pd.DataFrame, stem: str | os.PathLike) -> None:
    """Write `{stem}.csv`, `{stem}.md` and `{stem}.tex`, each atomically."""
    stem = Path(stem)
    write_text_atomic(stem.with_name(stem.name + ".csv"), to_csv(table))
    write_text_atomic(stem.with_name(stem.name + ".md"), to_markdown(table))
    write_text_atomic(stem.with_name(stem.name + ".tex"), to_latex(table))
