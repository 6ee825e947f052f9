"""`snakemake --report` of the finished demo (the shared `demo` fixture in conftest.py): the
study tables and the HTML report are its items (report() outputs, captions in workflow/report/)."""

from __future__ import annotations

import zipfile
from pathlib import PurePosixPath

import pytest

from workflow_helpers import snakemake

pytestmark = pytest.mark.e2e


def test_snakemake_report_carries_the_tables_and_the_html_report(demo, tmp_path):
    archive_path = tmp_path / "snakemake-report.zip"
    run = snakemake(demo, "--configfile", "config/demo.yaml", "--report", str(archive_path))
    assert run.returncode == 0, run.stderr[-3000:]
    with zipfile.ZipFile(archive_path) as archive:
        names = archive.namelist()
        # items are stored as <root>/data/raw/<hash>/<file name>; the viewer as <root>/report.html
        items = {PurePosixPath(n).name: archive.read(n) for n in names if "/data/raw/" in n}
        viewer = archive.read(next(n for n in names if n.count("/") == 1)).decode()
    tables = sorted((demo / "results/tables").iterdir())
    assert tables and set(items) == {path.name for path in tables} | {"report.html"}
    for path in tables:
        assert items[path.name] == path.read_bytes(), path.name
    assert items["report.html"] == (demo / "results/report.html").read_bytes()
    # the categories, the study label and the captions reach the viewer
    shown = ('"Tables"', '"Report"', '"study": "demo"', "One study's table", "run's own report")
    for text in shown:
        assert text in viewer, text
