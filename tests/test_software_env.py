"""envs/blurbflow.yaml as `--software-deployment-method conda` uses it, as far as this machine
allows (conda channels are unreachable): Snakemake copies the env file to
.snakemake/conda/<hash>.yaml, conda writes its pip section to a requirements file next to that
copy and runs pip there. The package must install from that place, into a fresh environment."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from workflow_helpers import REPO, _env

SHIPPED = ("Snakefile", "config.yaml", "config", "workflow", "envs", "pyproject.toml", "README.md")


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_env_file_installs_the_package_from_snakemakes_copy(tmp_path):
    repo = tmp_path / "clone"
    repo.mkdir()
    for name in SHIPPED:
        source = REPO / name
        copy = shutil.copytree if source.is_dir() else shutil.copy2
        copy(source, repo / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", repo / "src", ignore=ignore)

    # What the Snakefile exports for the env file: parsed by snakemake itself.
    (repo / "probe.smk").write_text(
        'include: "Snakefile"\nprint("BLURBFLOW_ROOT=" + os.environ["BLURBFLOW_ROOT"])\n'
    )
    snakemake = Path(sys.executable).parent / "snakemake"
    probe = subprocess.run(
        [snakemake, "-s", "probe.smk", "--configfile", "config/demo.yaml", "-n", "--quiet"],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    root = next(line for line in probe.stdout.splitlines() if line.startswith("BLURBFLOW_ROOT="))
    assert root.split("=", 1)[1] == str(repo.resolve())

    # Snakemake's copy, and the requirements file conda writes beside it (torch left out: the
    # package is the point, and its pin is PyPI's multi-GB CUDA build).
    conda_dir = repo / ".snakemake/conda"
    conda_dir.mkdir(parents=True, exist_ok=True)
    env_file = conda_dir / "0123abcd.yaml"
    shutil.copy(repo / "envs/blurbflow.yaml", env_file)
    spec = yaml.safe_load(env_file.read_text())
    (pip_section,) = [dep["pip"] for dep in spec["dependencies"] if isinstance(dep, dict)]
    assert not [line for line in pip_section if ".." in line or "./" in line], pip_section
    requirements = conda_dir / "condaenv.requirements.txt"
    requirements.write_text("\n".join(r for r in pip_section if not r.startswith("torch")) + "\n")

    venv = tmp_path / "env"
    subprocess.run([sys._base_executable, "-m", "venv", venv], check=True, timeout=120)
    python = venv / "bin/python"
    env = {**_env(), "BLURBFLOW_ROOT": str(repo.resolve())}
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "-r", requirements.name],
        cwd=conda_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-3000:]

    # The installed package is the clone's, and its CLI runs (dependencies lent by this venv).
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    fresh_site = Path(subprocess.check_output([python, "-c", purelib], text=True).strip())
    (fresh_site / "zz_lent_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    show = subprocess.run(
        [
            python,
            "-c",
            "import blurbflow, importlib.metadata as m; print(blurbflow.__file__); "
            "print(m.distribution('blurbflow').read_text('direct_url.json'))",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert show.returncode == 0, show.stderr[-3000:]
    module_file, direct_url = show.stdout.splitlines()[:2]
    assert Path(module_file).resolve().is_relative_to(repo.resolve() / "src")
    assert json.loads(direct_url)["url"] == repo.resolve().as_uri()
    cli = subprocess.run(
        [python, "-m", "blurbflow", "--help"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0 and "finetune" in cli.stdout, cli.stderr[-2000:]
