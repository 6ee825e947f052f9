"""The config's `engine` choices, checked when the config is read (blurbflow.options.engine):
the lists agree with the installed torch, and a typo names the key and the choices."""

from __future__ import annotations

import pytest
import torch._dynamo
import torch._inductor

from blurbflow.config.validate import check_config
from blurbflow.options import engine as choices
from blurbflow.plan import gpus
from blurbflow.util.errors import ConfigError


def test_compile_backends_and_modes_are_torchs_own():
    installed = set(torch._dynamo.list_backends(exclude_tags=()))
    assert set(choices.COMPILE_BACKENDS) <= installed
    assert set(torch._dynamo.list_backends()) <= set(choices.COMPILE_BACKENDS)  # the usual ones
    assert set(choices.COMPILE_MODES) <= set(torch._inductor.list_mode_options())


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"compile": "inductr"}, r"engine.compile: 'inductr' is no torch.compile backend; use "),
        ({"compile_mode": "fast"}, r"engine.compile_mode: unknown 'fast'; use one of default, "),
        ({"gpu": "z999"}, r"engine.gpu: 'z999' is no GPU type the plan knows; use one of v100"),
        ({"cells_per_gpu": 0}, r"engine.cells_per_gpu: 0 is not auto or a whole number ≥ 1"),
        ({"cells_per_gpu": None}, r"engine.cells_per_gpu: null; use auto or a whole number"),
        ({"compile_cache": ""}, r"engine.compile_cache: ''; use auto, a folder, or null"),
        (
            {"compile": "aot_eager", "compile_mode": "reduce-overhead"},
            r"engine.compile_mode: 'reduce-overhead' is a mode of inductor's; use compile: true",
        ),
    ],
)
def test_a_bad_engine_setting_names_the_key_and_the_choices(given, message):
    with pytest.raises(ConfigError, match=message):
        choices.Settings.from_config(given)


def test_good_settings_pass_and_a_site_gpu_name_is_known():
    settings = choices.Settings.from_config(
        {"compile": "inductor", "compile_mode": "reduce-overhead", "gpu": "NVIDIA H200"}
    )
    assert (settings.compile, settings.compile_mode, settings.cells_per_gpu) == (
        "inductor",
        "reduce-overhead",
        "auto",
    )
    assert choices.Settings.from_config({"compile": True}).compile is True
    assert gpus.known("nvidia_h100_80gb_hbm3") == "h100" and gpus.PEAK_TFLOPS["h200"] == 989.0


def test_the_config_check_runs_the_engine_check(monkeypatch):
    """check_config stops on the engine's choices after the schema (whose types pass them)."""
    import blurbflow.config.validate as validate

    for step in ("check_keys", "check_safe_names", "check_finite", "check_values"):
        monkeypatch.setattr(validate, step, lambda *args: None)
    with pytest.raises(ConfigError, match="engine.compile: 'no_such_backend'"):
        check_config({"engine": {"compile": "no_such_backend"}}, {})
