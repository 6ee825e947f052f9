"""blurbflow.steps: what a rule's script does with its log and exit status, and the CLI reaching
the same steps."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
import yaml

from blurbflow import cli, steps

from workflow_helpers import REPO

SCRIPT = textwrap.dedent(
    """
    import os, subprocess, sys
    from blurbflow.steps import run_rule
    from blurbflow.train import CellsFailed, Preempted

    def finetune(kind):
        print("progress: epoch 1")
        print("a warning", file=sys.stderr)
        subprocess.run(["echo", "from a child process"], check=True)
        os.write(2, b"straight to fd 2\\n")
        if kind == "failed":
            raise CellsFailed("seeds 2, 3 failed")
        if kind == "preempted":
            raise Preempted("SIGTERM: checkpoint saved")
        if kind == "bug":
            raise RuntimeError("a bug")

    run_rule(sys.argv[1], finetune, kind=sys.argv[2])
    """
)


@pytest.mark.parametrize(
    "kind, status, message",
    [
        ("ok", 0, None),
        ("failed", 1, "blurbflow finetune: seeds 2, 3 failed (see their result.json)"),
        ("preempted", 143, "blurbflow finetune: SIGTERM: checkpoint saved"),
        ("bug", 1, "RuntimeError: a bug"),  # with its traceback
    ],
)
def test_a_rule_script_logs_everything_and_exits_with_the_steps_status(
    tmp_path, kind, status, message
):
    log = tmp_path / "logs/job.log"  # its folder does not exist yet
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log), kind], capture_output=True, text=True
    )
    assert run.returncode == status, run.stderr
    assert run.stdout == "" and run.stderr == ""  # all of it went to the log
    text = log.read_text()
    for line in ("progress: epoch 1", "a warning", "from a child process", "straight to fd 2"):
        assert line in text, text
    if message:
        assert message in text, text
    if kind == "bug":
        assert "Traceback (most recent call last)" in text


def test_a_step_in_process_logs_and_never_raises(tmp_path, capsys):
    def report_after_failure():
        print("tables of what finished")
        raise RuntimeError("the report broke")

    log = tmp_path / "results/logs/after.log"
    assert steps.run_in_process(str(log), report_after_failure) == 1
    assert capsys.readouterr().out == ""
    text = log.read_text()
    assert "tables of what finished" in text and "RuntimeError: the report broke" in text


def test_the_cli_takes_the_config_as_a_file_or_as_json(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(steps, "tables", lambda **kwargs: seen.append(kwargs))
    config = {"studies": {"demo": {"title": "a {brace} and 'quotes'"}}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for given in (str(tmp_path / "config.yaml"), '{"studies": {"demo": {"title": "x"}}}'):
        args = ["tables", "--config", given, "--cells", "c.parquet", "--out-dir", "t"]
        assert cli.main(args) == 0
    assert seen[0] == {"config": config, "cells": "c.parquet", "out_dir": "t"}
    assert seen[1]["config"]["studies"]["demo"]["title"] == "x"


def test_every_rule_runs_a_script_of_workflow_scripts_and_none_a_shell_command():
    """Rules hand Python values to the library (workflow/scripts/); no command line carries
    the config or options, and every entry point there belongs to a rule."""
    rules = REPO / "workflow/rules"
    text = "\n".join(path.read_text() for path in sorted(rules.glob("*.smk")))
    assert not re.search(r"^\s+shell:", text, re.M)
    used = set(re.findall(r'^\s+script:\s*\n\s+"\.\./scripts/([\w.]+)"', text, re.M))
    scripts = {path.name for path in (REPO / "workflow/scripts").glob("*.py")}
    assert used == scripts
    # every rule of workflow/rules/ runs its script (the Snakefile's targets only gather inputs)
    blocks = re.split(r"^\s*rule ", text, flags=re.M)[1:]
    assert len(blocks) >= 11
    for block in blocks:
        assert "script:" in block, block.split(":")[0]
