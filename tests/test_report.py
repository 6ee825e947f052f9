import json
import re

from results_helpers import load_cells

from blurbflow.report import render_report


def cell_path(root, model, task, recipe, hparams, seed):
    return root / "cells" / model / task / recipe / hparams / f"seed{seed}" / "result.json"


def write_result(root, model, task, recipe, hparams, seed, test, status="ok", error=None):
    path = cell_path(root, model, task, recipe, hparams, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "cell": {
                    "model": model,
                    "task": task,
                    "recipe": recipe,
                    "hparams": hparams,
                    "seed": seed,
                },
                "status": status,
                "error": error,
                "epochs": [],
                "selected_epoch": 1,
                "dev": 50.0 if test is not None else None,
                "test": test,
                "chance_dev": 0.0,
                "chance_test": 0.0,
                "wall_seconds": 60.0,
                "gpu_hours": 0.5,
                "peak_memory_mb": 900.0,
                "device": "NVIDIA H100",
                "versions": {"torch": "2.13.0"},
                "git_commit": "abc123",
                "started": "2025-01-01T00:00:00",
                "finished": "2025-01-01T00:01:00",
            }
        )
    )
    return path


STUDIES = {
    "recipes": {
        "title": "Recipes & stability",
        "models": ["pubmedbert"],
        "tasks": ["bc5chem", "biosses"],
        "recipes": ["standard", "llrd"],
        "seeds": [1, 2],
        "baseline": "standard",
        "table": {"rows": "task", "columns": ["recipe"]},
    }
}
SCORES = {
    ("bc5chem", "standard"): [91.25, 92.75],
    ("bc5chem", "llrd"): [93.5, 94.5],
    ("biosses", "standard"): [71.0, 81.0],
    ("biosses", "llrd"): [88.0],
}


def make_cells(root):
    paths = []
    for (task, recipe), values in SCORES.items():
        for seed, value in enumerate(values, start=1):
            paths.append(write_result(root, "pubmedbert", task, recipe, "lr3e-5", seed, value))
    paths.append(
        write_result(
            root,
            "pubmedbert",
            "biosses",
            "llrd",
            "lr3e-5",
            2,
            None,
            status="failed",
            error="CUDA <out of memory> & friends",
        )
    )
    paths.append(cell_path(root, "pubmedbert", "bc5chem", "llrd", "lr5e-5", 1))  # missing
    return load_cells(paths)


def render(tmp_path):
    out = tmp_path / "report" / "report.html"
    provenance = {
        "config_hash": "cafe1234",
        "git_commit": "abc123",
        "versions": {"torch": "2.13.0", "transformers": "5.23.0"},
        "date": "2025-01-02",
    }
    render_report(make_cells(tmp_path), STUDIES, out, provenance)
    return out.read_text(encoding="utf-8")


def test_report_has_tables_seeds_and_provenance(tmp_path):
    html = render(tmp_path)
    assert html.startswith("<!DOCTYPE html>")
    assert "Recipes &amp; stability" in html
    assert "92.0 (1.1)" in html  # bc5chem standard: mean 92.0, std 1.06
    assert "94.0 (0.7)" in html
    assert "BLURB-style average (ner, sts)" in html
    for value in ("91.2", "92.8", "93.5", "94.5", "71.0", "81.0", "88.0"):  # every seed
        assert value in html
    assert "<svg" in html and "<circle" in html
    assert "NVIDIA H100" in html  # device read off the cells
    assert "cafe1234" in html and "versions.torch" in html and "2.13.0" in html
    assert re.search(r">\s*1\s*</b>\s*failed", html) and re.search(r">\s*1\s*</b>\s*missing", html)


def test_report_is_offline(tmp_path):
    html = render(tmp_path)
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"""(src|href)\s*=\s*["'](?!#)""", html)  # only in-page anchors


def test_report_escapes_error_text(tmp_path):
    html = render(tmp_path)
    assert "CUDA &lt;out of memory&gt; &amp; friends" in html
    assert "<out of memory>" not in html


def test_report_is_written_atomically(tmp_path):
    render(tmp_path)
    assert [p.name for p in (tmp_path / "report").iterdir()] == ["report.html"]


def test_report_with_no_cells(tmp_path):
    empty = load_cells([])
    out = tmp_path / "report.html"
    render_report(empty, STUDIES, out, {})
    assert "None: every cell finished ok." in out.read_text()


def test_report_from_the_parquet_file(tmp_path):
    # the report step reads results/cells.parquet, not the in-memory frame
    import pandas as pd

    from blurbflow.results.aggregate import write_cells

    write_cells(make_cells(tmp_path), tmp_path / "cells.parquet")
    cells = pd.read_parquet(tmp_path / "cells.parquet")
    out = tmp_path / "report.html"
    render_report(cells, STUDIES, out, {"first cell started": "given"})
    html = out.read_text()
    assert "92.0 (1.1)" in html and "CUDA &lt;out of memory&gt;" in html
    assert html.count("first cell started") == 1  # the caller's provenance wins, once


def test_report_explains_the_statistics_and_shows_failure_rates(tmp_path):
    html = render(tmp_path)
    assert "Welch" in html and "Mann–Whitney U" in html and "Holm–Bonferroni" in html
    assert "unequal" in html or "does not assume equal variances" in html
    assert 'class="failures"' in html and "failure rate %" in html
    assert 'class="tests"' in html and "p (Welch)" in html and "p (MWU)" in html
    # compute spent: 9 cells (7 ok, 1 failed, 1 missing), 8 of them with 0.5 GPU-hours
    assert "9 cells, 4.00 GPU-hours" in html


def test_report_groups_missing_cells_and_lists_errors(tmp_path):
    html = render(tmp_path)
    assert "Missing cells (1)" in html
    missing = html.split("Missing cells (1)")[1]
    assert "bc5chem" in missing and "lr5e-5" in missing


def test_report_flags_collapsed_seeds(tmp_path):
    paths = [
        write_result(tmp_path, "pubmedbert", "biosses", r, "h", seed, value)
        for r, values in (("standard", [80.0, 82.0]), ("llrd", [84.0, 1.0]))
        for seed, value in enumerate(values, start=1)
    ]
    # seed 2 of llrd collapsed: dev at chance (the helper writes dev 50, chance 0: rewrite it)
    collapsed = json.loads(paths[-1].read_text())
    collapsed.update(dev=0.0)
    paths[-1].write_text(json.dumps(collapsed))
    study = {**STUDIES["recipes"], "tasks": ["biosses"]}
    out = tmp_path / "r.html"
    render_report(load_cells(paths), {"s": study}, out, {})
    html = out.read_text()
    assert 'class="seed-collapsed"' in html and "(dev at or below chance)" in html
    assert 'fill="#b42323"' in html  # the collapsed dot is red
    failures = html.split('class="failures"')[1].split("</table>")[0]
    assert "<td>llrd</td><td>50.0</td><td>2</td><td>0</td><td>1</td>" in failures


def test_report_overview_blurb_table_for_broad_studies(tmp_path):
    tasks = {"ncbidisease": 85.0, "gad": 80.0, "biosses": 90.0, "hoc": 82.0, "pubmedqa": 60.0}
    paths = [
        write_result(tmp_path, model, task, "standard", "h", seed, score + seed + bonus)
        for model, bonus in (("a", 0.0), ("b", 1.0))
        for task, score in tasks.items()
        for seed in (1, 2)
    ]
    study = {
        "title": "Broad",
        "models": ["a", "b"],
        "tasks": list(tasks),
        "recipes": ["standard"],
        "seeds": 2,
        "table": {"rows": "task", "columns": ["model"]},
    }
    out = tmp_path / "r.html"
    render_report(load_cells(paths), {"broad": study}, out, {})
    html = out.read_text()
    overview = html.split('class="blurb-overview"')[1].split("</table>")[0]
    label = "BLURB-style average (ner, re, sts, doccls, qa)"
    assert label in overview
    # a: mean over types of 86.5, 81.5, 91.5, 83.5, 61.5 = 80.9; b: 81.9 (the best)
    assert '<td class="blurb">80.9</td>' in overview and "<th>model</th>" in overview
    assert '<td class="blurb best">81.9</td>' in overview


HEADS = {  # model: (head, pooling of biosses, attention); bc5chem (NER) pools nothing
    "pubmedbert": ("cls_linear", "pooler", "sdpa"),
    "biolinkbert": ("cls_linear", "pooler", "sdpa"),
    "modernbert-base": ("linear", "mean", "sdpa"),
    "deberta-v3-base": ("linear", "cls", "eager"),
}


def test_report_states_each_studys_heads_pooling_and_attention(tmp_path):
    paths = []
    for model, (head, pooling, attention) in HEADS.items():
        for task in ("bc5chem", "biosses"):
            path = write_result(tmp_path, model, task, "standard", "h", 1, 80.0)
            result = json.loads(path.read_text())
            result.update(
                options={"head": head},
                pooling=pooling if task == "biosses" else None,
                attn_implementation=attention,
            )
            path.write_text(json.dumps(result))
            paths.append(path)
    study = {**STUDIES["recipes"], "models": list(HEADS), "recipes": ["standard"], "seeds": [1]}
    study["table"] = {"rows": "task", "columns": ["model"]}
    out = tmp_path / "r.html"
    render_report(load_cells(paths), {"s": study}, out, {})
    html = out.read_text()
    line = html.split('<p class="muted heads">')[1].split("</p>")[0]
    assert line == (
        "Heads: cls_linear reading the pooler (pubmedbert, biolinkbert), "
        "linear reading [CLS] (deberta-v3-base), linear reading the mean (modernbert-base); "
        "attention: sdpa (pubmedbert, biolinkbert, modernbert-base), eager (deberta-v3-base)."
    )
    assert "<b>Heads and attention.</b>" in html and "docs/recipes.md" in html
    old = render(tmp_path / "old").split('<p class="muted heads">')[1]  # cells written before
    assert old.startswith("Heads, pooling and attention: not recorded")


def test_heads_line_names_a_head_without_pooling_and_entity_poolings():
    import pandas as pd

    from blurbflow.report.heads import heads_line

    cells = pd.DataFrame(
        {
            "model": ["a", "a", "b", "c"],
            "head": ["bilstm", "linear", "linear", None],
            "pooling": [None, "max", None, None],
            "attn_implementation": [None, None, None, "flash_attention_2"],
        }
    )
    assert heads_line(cells, ["a", "b", "c"]) == (
        "Heads: bilstm and linear reading the entities' max (a), linear (b); "
        "attention: flash_attention_2 (c)."
    )
    assert heads_line(cells, ["a"], cells["model"] == "c") == "attention: flash_attention_2 (c)."
    assert heads_line(cells.drop(columns=["head", "pooling", "attn_implementation"]), []) == ""


def test_report_seed_columns_follow_each_tasks_seeds(tmp_path):
    paths = [
        write_result(tmp_path, "m", task, "standard", "h", seed, 50.0 + seed)
        for task, n in (("bc5chem", 2), ("biosses", 4))
        for seed in range(1, n + 1)
    ]
    study = {
        "models": ["m"],
        "tasks": ["bc5chem", "biosses"],
        "recipes": ["standard"],
        "seeds": {"default": 2, "biosses": 4},
        "table": {"rows": "task", "columns": []},
    }
    out = tmp_path / "r.html"
    render_report(load_cells(paths), {"s": study}, out, {})
    html = out.read_text()
    sections = html.split('<table class="seeds">')
    bc5chem, biosses = (section.split("</thead>")[0] for section in sections[1:])
    assert bc5chem.endswith("<th>seed 2</th></tr>\n  ") or "seed 2</th></tr>" in bc5chem
    assert "seed 3" not in bc5chem and "seed 4</th></tr>" in biosses


def test_report_after_failure_leaves_the_aggregation_stale(tmp_path, monkeypatch):
    """The workflow's onerror step: report what finished, remove the complete table and date the
    report before its tables, so Snakemake re-runs the failed jobs next time."""
    import json as json_lib
    import os

    import pandas as pd
    import yaml

    from blurbflow.cli import STALE_MTIME, main

    from workflow_helpers import REPO

    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results/cells.parquet").write_text("complete table of an earlier run")
    code = main(
        [
            "report-after-failure",
            "--config-json",
            json_lib.dumps(config),
            "--config-hash",
            "abc",
            "--cells",
            "results/cells.parquet",
            "--partial",
            "results/cells.partial.parquet",
            "--out-dir",
            "results/tables",
            "--out",
            "results/report.html",
        ]
    )
    assert code == 0
    assert not (tmp_path / "results/cells.parquet").exists()
    partial = pd.read_parquet(tmp_path / "results/cells.partial.parquet")
    assert len(partial) == 20 and set(partial["status"]) == {"missing"}
    assert (tmp_path / "results/tables/demo.md").exists()
    report = tmp_path / "results/report.html"
    assert "Missing cells (20)" in report.read_text()
    assert os.stat(report).st_mtime == STALE_MTIME
    assert os.stat(tmp_path / "results/tables/demo.md").st_mtime > STALE_MTIME


def test_report_draws_every_seeds_dev_curve_and_marks_collapsed_runs(tmp_path):
    # biosses, two recipes × two seeds, 3 epochs each; llrd seed 2 collapses (dev ends at chance)
    curves = {
        ("standard", 1): [40.0, 70.0, 80.0],
        ("standard", 2): [30.0, 60.0, 75.0],
        ("llrd", 1): [50.0, 78.0, 84.0],
        ("llrd", 2): [20.0, 5.0, 0.0],
    }
    paths = []
    for (recipe, seed), devs in curves.items():
        path = write_result(tmp_path, "pubmedbert", "biosses", recipe, "h", seed, devs[-1] + 1)
        result = json.loads(path.read_text())
        result.update(
            dev=devs[-1],
            epochs=[
                {"epoch": e, "train_loss": 1.0, "dev": d, "test": d + 1}
                for e, d in enumerate(devs, start=1)
            ],
        )
        path.write_text(json.dumps(result))
        paths.append(path)
    import pandas as pd

    from blurbflow.results.aggregate import write_cells

    write_cells(load_cells(paths), tmp_path / "cells.parquet")  # the epochs as JSON text
    study = {**STUDIES["recipes"], "tasks": ["biosses"]}
    out = tmp_path / "r.html"
    render_report(pd.read_parquet(tmp_path / "cells.parquet"), {"s": study}, out, {})
    html = out.read_text()
    assert html.count('<svg class="curve-panel"') == 2  # one panel per recipe
    groups = re.findall(
        r'<g class="seed-curve( collapsed)?" data-seed="(\d)">'
        r'<title>([^<]*)</title>\s*<polyline points="([^"]*)"',
        html,
    )
    assert [(bool(c), seed) for c, seed, _, _ in groups] == [
        (False, "1"),
        (False, "2"),
        (False, "1"),
        (True, "2"),
    ]
    assert groups[3][2] == "seed 2: dev 20.0, 5.0, 0.0 (collapsed)"
    # one scale per task: dev 0 … 84 padded by 5 %; x: epochs 1 … 3 over the panel
    points = [[tuple(map(float, p.split(","))) for p in g[3].split()] for g in groups]
    assert all(len(p) == 3 for p in points)
    assert [x for x, _ in points[0]] == [36.0, 129.0, 222.0]
    lows = [y for p in points for _, y in p]
    assert max(lows) == points[3][2][1] and min(lows) == points[2][2][1]  # 0.0 lowest, 84 top
    assert "1 of 2 collapsed" in html and "2 seeds" in html


def _timed_cells():
    """A hand-made cells frame: pubmedbert on bc5chem (three ok runs over two hparams, one
    diverged, one failed without a time) and biosses (evaluating every N steps)."""
    import pandas as pd

    def epochs(*seconds, steps=False):
        return json.dumps(
            [
                {"epoch": e, **({"step": 10 * i} if steps else {}), "seconds": s}
                for i, (e, s) in enumerate(seconds, start=1)
            ]
        )

    rows = [
        # (task, recipe, hparams, seed, status, wall_seconds, epochs, device)
        ("bc5chem", "standard", "lr1", 1, "ok", 100.0, epochs((1, 30.0), (2, 32.0)), "NVIDIA A100"),
        ("bc5chem", "standard", "lr1", 2, "ok", 130.0, epochs((1, 40.0), (2, 44.0)), "NVIDIA A100"),
        ("bc5chem", "llrd", "lr2", 1, "ok", 160.0, epochs((1, 50.0), (2, 54.0)), "NVIDIA H100"),
        ("bc5chem", "llrd", "lr2", 2, "diverged", 20.0, epochs((1, 10.0)), "NVIDIA H100"),
        ("bc5chem", "llrd", "lr1", 1, "failed", None, None, None),
        # three evaluations over two epochs: (12 + 14 + 10) / 2 epochs
        (
            "biosses",
            "standard",
            "lr1",
            1,
            "ok",
            45.0,
            epochs((1, 12.0), (1, 14.0), (2, 10.0), steps=True),
            "cpu",
        ),
        ("biosses", "other", "lr1", 1, "ok", 999.0, epochs((1, 999.0)), "cpu"),  # not the study's
    ]
    columns = ["task", "recipe", "hparams", "seed", "status", "wall_seconds", "epochs", "device"]
    frame = pd.DataFrame(rows, columns=columns)
    frame.insert(0, "model", "pubmedbert")
    return frame


def test_fine_tuning_times_per_model_and_task():
    import math

    from blurbflow.results.stats import fine_tuning_times

    times = fine_tuning_times(_timed_cells(), STUDIES["recipes"])
    assert times[["model", "task"]].values.tolist() == [
        ["pubmedbert", "bc5chem"],
        ["pubmedbert", "biosses"],
    ]
    bc5chem, biosses = times.to_dict("records")
    assert bc5chem["runs"] == 3  # the ok runs; diverged and failed ones are not one run's time
    assert bc5chem["median_seconds"] == 130.0  # median of 100, 130, 160
    assert bc5chem["per_epoch_seconds"] == 42.0  # median of 31, 42, 52
    assert bc5chem["total_seconds"] == 410.0  # every cell with a time, the diverged one too
    assert bc5chem["device"] == "NVIDIA A100, NVIDIA H100"
    assert biosses == {
        "model": "pubmedbert",
        "task": "biosses",
        "runs": 1,
        "median_seconds": 45.0,
        "per_epoch_seconds": 18.0,
        "total_seconds": 45.0,
        "device": "cpu",
    }
    # a pair with no cell at all still has its row, without numbers
    study = {**STUDIES["recipes"], "models": ["pubmedbert", "biobert"]}
    empty = fine_tuning_times(_timed_cells(), study).iloc[-1]
    assert (empty["model"], empty["runs"], empty["total_seconds"]) == ("biobert", 0, 0.0)
    assert math.isnan(empty["median_seconds"]) and math.isnan(empty["per_epoch_seconds"])


def test_report_shows_fine_tuning_time_per_model_and_task(tmp_path):
    paths = []
    for seed, (wall, per_epoch) in enumerate([(60.0, 20.0), (90.0, 30.0)], start=1):
        path = write_result(tmp_path, "pubmedbert", "biosses", "standard", "h", seed, 80.0)
        result = json.loads(path.read_text())
        result.update(
            wall_seconds=wall,
            epochs=[{"epoch": e, "dev": 50.0, "test": 80.0, "seconds": per_epoch} for e in (1, 2)],
        )
        path.write_text(json.dumps(result))
        paths.append(path)
    study = {**STUDIES["recipes"], "tasks": ["biosses"], "recipes": ["standard"]}
    out = tmp_path / "r.html"
    render_report(load_cells(paths), {"s": study}, out, {})
    html = out.read_text()
    table = html[html.index('<table class="times">') :]
    table = table[: table.index("</table>")]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table)
    # median of 60 and 90 s; median of 20 and 30 s per epoch; 150 s in hours; the device
    assert cells == ["pubmedbert", "biosses", "2", "75.0", "25.0", "0.04", "NVIDIA H100"]


def test_compute_shows_the_estimate_before_launch_beside_what_was_spent(tmp_path):
    import yaml

    from blurbflow.plan.before import table_hours

    from workflow_helpers import REPO

    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    hours = table_hours(demo)
    assert set(hours) == {"demo"} and hours["demo"] > 0
    out = tmp_path / "report.html"
    name = next(iter(STUDIES))
    render_report(make_cells(tmp_path), STUDIES, out, {}, {name: 12.3456})
    html = out.read_text(encoding="utf-8")
    assert "estimate before launch, hours" in html and "<td>12.35</td>" in html


def test_a_study_with_published_values_shows_them_beside_ours_with_the_counts(tmp_path):
    # bc5chem standard: seeds 91.25, 92.75 → mean 92.0, 95% t-interval [82.5, 101.5], shown
    # within the F1 range: [82.5, 100.0]; against 92.1 ± 1 inconclusive: the seeds whose
    # interval would lie within [91.15, 93.05] at sd 1.0607 are 9 (t(8) · 1.0607 / 3 = 0.815 <
    # 0.85; with 8, t(7) · 1.0607 / √8 = 0.887)
    published = {
        "source": "stand-in values, not from a paper",
        "values": {
            "bc5chem": {"standard": 92.1, "llrd": 80.0},
            "biosses": {"standard": "not printed"},
            "blurb": {"llrd": 80.0},
        },
    }
    studies = {"recipes": {**STUDIES["recipes"], "published": published}}
    out = tmp_path / "report.html"
    render_report(make_cells(tmp_path), studies, out, {"config_hash": "cafe1234"})
    html = out.read_text(encoding="utf-8")
    section = html[html.index('id="reproduction-recipes"') : html.index('class="failures"')]
    assert "stand-in values, not from a paper" in section
    assert (
        '3 of 6 entries have a published value: <b class="reproduced">0</b> reproduced, '
        '<b class="differs">1</b> differ, <b class="inconclusive">2</b> inconclusive, '
        "0 not comparable; 3 not printed." in section
    )
    assert "t-interval of the mean" in section
    # at the printed precision (one decimal): published, ours, interval, Δ, margin, verdict
    assert re.search(
        r"<td>bc5chem</td><td[^>]*>standard</td><td>92\.1</td><td>92\.0</td><td>2</td>"
        r"<td[^>]*>\[82\.5, 100\.0\]</td><td>-0\.1</td><td>±1\.0</td>"
        r"<td[^>]*>inconclusive</td><td[^>]*>9</td>",
        section,
    )
    assert re.search(r"<td>80\.0</td><td>94\.0</td>.*?<td[^>]*>differs</td>", section)
    # the BLURB score with one seed of biosses: inconclusive, and says why
    assert re.search(
        r'<tr class="blurb">.*?<td>80\.0</td><td>91\.0</td><td>1</td><td[^>]*>–</td>.*?'
        r"inconclusive <small>\(fewer than 2 ok seeds in a task: no interval\)</small>",
        section,
    )
    # a mean BLURB score with every task's seeds gets an interval, within the metrics' range
    assert re.search(r"BLURB-style average \(ner, sts\)</td>.*?\[55\.0, 100\.0\]", section)
    assert "not printed" in section and "<b>Reproduction.</b>" in html  # Methods explains it
    # a study without published values has no such section
    assert 'id="reproduction-' not in render(tmp_path / "plain")
