"""The statistics registry (results/statistics.py): every statistic a study may choose reaches
the csv/md/tex tables, results/{study}.json, the report and the config schema's enum from its
one entry; a statistic nobody chose stays out of the tables (they do not change) but is in the
JSON. A new statistic that misses one of those places fails here."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from test_statistic import frame, study

from blurbflow.config.schema import check_values
from blurbflow.config.validate import ConfigError
from blurbflow.results.formats import entry_text, to_csv, to_latex, to_markdown
from blurbflow.results.statistics import (
    REGISTRY,
    register_statistic,
    statistic_names,
    summarise,
    with_statistics,
)
from blurbflow.results.study_json import study_results
from blurbflow.results.tables import study_table, table_entries

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def test_the_built_in_statistics_and_their_properties():
    assert list(REGISTRY)[:5] == ["mean", "std", "median", "iqr", "n"]
    assert statistic_names()[:2] == ("mean", "median")
    assert (REGISTRY["mean"].spread, REGISTRY["median"].spread) == ("std", "iqr")
    assert not REGISTRY["std"].blurb and not REGISTRY["n"].blurb
    assert summarise([]) == {**summarise([]), "n": 0} and math.isnan(summarise([])["mean"])
    assert math.isnan(summarise([1.0])["std"]) and summarise([1.0, 3.0])["iqr"] == 1.0


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        register_statistic("mean")(len)


def test_the_schema_file_keeps_no_list_and_the_loaded_schema_takes_the_registry():
    assert "enum" not in SCHEMA["$defs"]["statistic"]
    study_node = SCHEMA["properties"]["studies"]["additionalProperties"]["properties"]
    assert study_node["statistic"] == {"$ref": "#/$defs/statistic"}
    assert with_statistics(SCHEMA)["$defs"]["statistic"]["enum"] == list(statistic_names())
    assert "enum" not in SCHEMA["$defs"]["statistic"]  # the file's copy is left as read
    # the workflow validates with the filled schema
    rules = (REPO / "workflow/rules/validate.smk").read_text()
    assert "with_statistics(yaml.load(_file, Loader=yaml.CSafeLoader))" in rules


def _config(statistic: str) -> dict:
    return {"studies": {"s": study(statistic)}, "models": {"m": None}}


def test_the_filled_schema_refuses_an_unknown_statistic_by_its_path():
    schema = with_statistics(SCHEMA)
    for name in statistic_names():
        check_values({"studies": {"s": study(name)}}, {**schema, "required": []})
    with pytest.raises(ConfigError, match=r"studies\.s\.statistic: 'mode' is not one of"):
        check_values({"studies": {"s": study("mode")}}, {**schema, "required": []})


def _rendered(tmp_path: Path, statistic: str) -> str:
    from test_report import STUDIES, make_cells

    from blurbflow.report import render_report

    out = tmp_path / statistic / "report.html"
    studies = {"recipes": {**STUDIES["recipes"], "statistic": statistic}}
    provenance = {"config_hash": "c", "versions": {}}
    render_report(make_cells(tmp_path / statistic), studies, out, provenance)
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", statistic_names())
def test_a_chosen_statistic_reaches_every_output(name, tmp_path):
    statistic = REGISTRY[name]
    table = study_table(frame(), "s", study(name))
    gad_a = table_entries(table)[("gad", "a")]
    # tables: its csv columns, its entry text in md and tex, its second grid, bold by it
    assert ("a", name) in table.columns and table.attrs["statistic"] == name
    assert str(table[("a", name)].dtype) == statistic.dtype
    assert f"a:{name}" in to_csv(table).splitlines()[0].split(",")
    assert entry_text(gad_a, name) in to_markdown(table)
    assert entry_text(gad_a, name) in to_latex(table)
    assert f"{statistic.second.capitalize()} over seeds" in to_markdown(table)
    assert f"best {name} among the recipes" in table.attrs["best_rule"]
    # results/{study}.json: in each task entry, in the BLURB block, as the score
    results = study_results(frame(), _config(name), "s")
    column = results["columns"][0]
    assert column["tasks"]["gad"][name] == pytest.approx(gad_a[name])
    assert column["blurb"]["score"] == column["blurb"][name] is not None
    # the report: its caption and entries
    html = _rendered(tmp_path, name)
    assert f"{statistic.words} over the seeds that finished ok" in html
    # the schema
    assert name in with_statistics(SCHEMA)["$defs"]["statistic"]["enum"]


def test_every_statistic_is_in_the_json_and_only_chosen_or_shown_ones_in_a_table():
    results = study_results(frame(), _config("mean"), "s")
    entry = results["columns"][0]["tasks"]["gad"]
    assert list(entry)[: len(REGISTRY)] == list(REGISTRY)
    blurb = results["columns"][0]["blurb"]
    assert {n for n in REGISTRY if REGISTRY[n].blurb} <= set(blurb)
    table = study_table(frame(), "s", study("mean"))
    stats = list(dict.fromkeys(table.columns.get_level_values("stat")))
    assert stats == [*(n for n, s in REGISTRY.items() if s.shown), "diverged", "best"]


# --- min: the statistic added by one registry entry (its commit touches only the registry and
# this file) ---------------------------------------------------------------------------------


def test_min_is_one_entry_that_a_study_may_choose():
    assert "min" in statistic_names() and not REGISTRY["min"].shown
    assert summarise([3.0, 1.0, 2.0])["min"] == 1.0 and math.isnan(summarise([])["min"])
    assert "min" in with_statistics(SCHEMA)["$defs"]["statistic"]["enum"]


def test_a_min_study_tables_show_the_lowest_seed_and_mark_it_best():
    table = study_table(frame(), "s", study("min"))
    # gad: a's seeds 60, 61, 95 and b's 64, 65, 66: b has the better worst seed
    assert table.loc["gad", ("a", "min")] == 60.0 and table.loc["gad", ("b", "min")] == 64.0
    best = table.xs("best", axis=1, level="stat")
    assert best["b"].all() and not best["a"].any()
    assert "a:min" in to_csv(table).splitlines()[0].split(",")
    markdown = to_markdown(table)
    assert markdown.startswith("Min (the lowest seed) over seeds; bold: the best min.")
    assert "| gad | 60.0 | **64.0** |" in markdown  # no spread beside a min
    assert "Mean over seeds" in markdown and "| gad | 72.0 (n=3) | 65.0 (n=3) |" in markdown
    assert r"\textbf{64.0}" in to_latex(table)
    blurb = [r for r in table.index if r.startswith("BLURB")][0]
    assert table.loc[blurb, ("b", "min")] == pytest.approx((64.0 + 75.0) / 2)


def test_min_is_in_every_json_but_in_no_table_of_a_study_that_does_not_choose_it():
    for statistic in ("mean", "median"):
        table = study_table(frame(), "s", study(statistic))
        assert "min" not in table.columns.get_level_values("stat")
        assert ":min" not in to_csv(table)
        results = study_results(frame(), _config(statistic), "s")
        b = next(c for c in results["columns"] if c["recipe"] == "b")
        assert b["tasks"]["gad"]["min"] == 64.0
        assert b["blurb"]["min"] == pytest.approx((64.0 + 75.0) / 2)
    results = study_results(frame(), _config("min"), "s")
    assert results["statistic"] == "min"
    assert results["columns"][1]["blurb"]["score"] == pytest.approx(69.5)


def test_the_report_of_a_min_study(tmp_path):
    html = _rendered(tmp_path, "min")
    assert "min (the lowest seed) over the seeds that finished ok, with the mean" in html
    assert "Bold: best min among the recipes" in html
    # biosses/standard: seeds 71 and 81: min 71.0, the mean 76.0 below it
    assert "71.0" in html and '<small class="median">mean 76.0' in html
