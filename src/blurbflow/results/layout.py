"""A study's table layout: which dimension is the rows, which are the columns, and the check that
a table shows every dimension with several values (a `choose` group counts as the one recipe it
shows). Plain Python, no pandas: workflow/rules/validate.smk checks every study with it while
Snakemake reads the workflow, on every start and in every SLURM job."""

from __future__ import annotations

DIMS = ("model", "task", "recipe")


def choice_groups(study: dict) -> dict[str, list[str]]:
    """recipe → the `choose` labels it is chosen under (a recipe may be a candidate of several
    groups: Tinn et al. Table 9's LARGE "Standard" run is also a candidate of "Optimal")."""
    groups: dict[str, list[str]] = {}
    for label, members in (study.get("choose") or {}).items():
        for member in members:
            groups.setdefault(member, []).append(label)
    return groups


def shown_study(study: dict) -> dict:
    """The study as its table shows it: each `choose` group replaced by its label, where its
    first recipe was. Idempotent: a shown study comes back unchanged."""
    groups = choice_groups(study)
    if not groups:
        return study
    shown = (label for r in study["recipes"] for label in groups.get(r, [r]))
    return {**study, "recipes": list(dict.fromkeys(shown))}


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
        raise ValueError(
            f"study table must show {', '.join(hidden)} (several values) in rows or columns"
        )
    return rows, columns
