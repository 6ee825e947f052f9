"""The plan's prior per GPU type (blurbflow.plan.gpus): `engine.gpu`, else the profile's
`slurm.gpu_model`, picks a row; measured rows (RTX 3090, H200) and rows scaled from them."""

from __future__ import annotations

import pytest
from test_plan import config

from blurbflow.plan import gpus
from blurbflow.plan.estimate import plan_config
from blurbflow.plan.params import FLOPS, LOAD_SECONDS_PER_PARAM, SEED_SECONDS
from blurbflow.plan.text import format_plan


def work_seconds(plan: dict) -> dict[str, float]:
    """Each job's seconds per seed beyond the per-seed overhead (which no GPU changes)."""
    out = {}
    for path, entry in plan["running"].items():
        params = 110e6 if entry["model"] == "m-base" else 335e6
        out[path] = entry["seed_seconds"] - SEED_SECONDS - LOAD_SECONDS_PER_PARAM * params
    return out


def test_the_configured_gpu_type_sets_the_priors_rate(tmp_path):
    unnamed = plan_config(config(), str(tmp_path))
    reference = work_seconds(unnamed)
    assert unnamed["prior_gpu"] == gpus.DEFAULT == "rtx3090"  # whose rate is FLOPS
    h200 = config()
    h200["engine"] = {"gpu": "h200"}
    plan = plan_config(h200, str(tmp_path))
    for path, seconds in work_seconds(plan).items():
        assert seconds == pytest.approx(reference[path] * 92.0 / 181.0, rel=1e-9), path
    assert "58.0 TFLOP/s on h200 (measured" in format_plan(plan) and plan["prior_gpu"] == "h200"

    site = config()
    site["slurm"] = {"gpu_model": "nvidia_a100_80gb"}  # the gres type, as a site names it
    a100 = gpus.row("a100")
    assert not a100.measured and FLOPS < a100.flops < gpus.row("h200").flops
    plan = plan_config(site, str(tmp_path))
    assert plan["prior_gpu"] == "a100"
    for path, seconds in work_seconds(plan).items():
        assert seconds == pytest.approx(reference[path] * FLOPS / a100.flops, rel=1e-9), path


def test_measured_rows_and_the_scaling_between_them():
    assert gpus.row("rtx3090").flops == pytest.approx(FLOPS)
    assert gpus.row("h200").flops / FLOPS == pytest.approx(181.0 / 92.0)
    assert gpus.row("h100").flops == pytest.approx(gpus.row("h200").flops)  # the same peak
    assert gpus.EXPONENT == pytest.approx(0.257, abs=1e-3)
    assert [gpus.known(n) for n in ("NVIDIA H200", "rtx_3090", "A100-SXM4-80GB", "gpu_big")] == [
        "h200",
        "rtx3090",
        "a100",
        None,
    ]


def test_an_unknown_gpu_type(tmp_path):
    site = config()
    site["slurm"] = {"gpu_model": "bigcard"}  # a site's own name: the published rate
    assert gpus.configured(site) is None
    site["engine"] = {"gpu": "bigcard"}  # asked for by name: it must be one the plan knows
    with pytest.raises(ValueError, match=r"engine.gpu: 'bigcard' is no GPU type the plan knows"):
        plan_config(site, str(tmp_path))
