"""Per-cell cluster resources: by model size and task, more time on each retry."""

import pytest

from blurbflow.cluster import cell_resources

BASE = {"task": "jnlpba", "epochs": 20, "max_length": 512}


def test_large_models_get_more_memory_and_time():
    base, large = cell_resources(BASE, "base"), cell_resources(BASE, "large")
    assert base["gpu"] == large["gpu"] == 1
    assert large["mem_mb"] > base["mem_mb"] and large["runtime"] > base["runtime"]


def test_runtime_scales_with_attempt_and_has_a_floor():
    first, second = cell_resources(BASE, "base", 1), cell_resources(BASE, "base", 2)
    assert second["runtime"] == 2 * first["runtime"]
    small_task = {"task": "biosses", "epochs": 30, "max_length": 512}
    assert cell_resources(small_task, "base")["runtime"] == 15


def test_subsample_shortens_and_overrides_apply():
    subsampled = cell_resources({**BASE, "task": "chemprot", "train_subsample": 100}, "base")
    assert subsampled["runtime"] < cell_resources({**BASE, "task": "chemprot"}, "base")["runtime"]
    custom = cell_resources(BASE, "base", overrides={"base": [16, 48000, 0.6]})
    assert custom["cpus_per_task"] == 16 and custom["mem_mb"] == 48000


def test_unknown_size_is_named():
    with pytest.raises(KeyError, match="model size 'huge'"):
        cell_resources(BASE, "huge")
