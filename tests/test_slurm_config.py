"""Config `slurm` → the SLURM executor plugin's resources (blurbflow.cluster.slurm_resources),
and its errors naming the key. What a real sbatch records: tests/test_slurm.py."""

from __future__ import annotations

import re

import pytest
import yaml

from blurbflow.cluster import SBATCH_SET_BY, SIGNAL_LEAD, slurm_resources
from blurbflow.config.validate import ConfigError, check_config

from workflow_helpers import REPO

SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def test_defaults_ask_one_gpu_and_signal_before_the_limit():
    cpu, gpu = slurm_resources(None)
    assert cpu == {}
    assert gpu == {"gpu": 1, "slurm_extra": f"--signal=TERM@{SIGNAL_LEAD}"}


def test_every_key_reaches_the_plugins_resource():
    slurm = {
        "account": "lab",
        "partition": "cpu",
        "gpu_partition": "gpu",
        "qos": "normal",
        "gpu_qos": "gpu-long",
        "constraint": "cpu",
        "gpu_constraint": "a100|h100",
        "gpu_model": "a100",
        "sbatch": "--mail-type=FAIL --nice=10",
        "signal_lead": 300,
    }
    cpu, gpu = slurm_resources(slurm)
    assert cpu == {
        "slurm_account": "lab",
        "slurm_partition": "cpu",
        "qos": "normal",
        "constraint": "cpu",
        "slurm_extra": "--mail-type=FAIL --nice=10",
    }
    assert gpu == {
        "slurm_account": "lab",
        "slurm_partition": "gpu",
        "qos": "gpu-long",
        "constraint": "a100|h100",
        "slurm_extra": "--mail-type=FAIL --nice=10 --signal=TERM@300",
        "gpu": 1,
        "gpu_model": "a100",  # the plugin: --gpus=a100:1
    }


def test_gres_request_asks_no_gpus_and_the_gpu_keys_fall_back_to_every_jobs():
    cpu, gpu = slurm_resources(
        {"gpu_request": "gres", "gpu_model": "fake", "qos": "q", "signal_lead": None}
    )
    assert gpu == {"gres": "gpu:fake:1", "qos": "q"}  # no `gpu`: the plugin would add --gpus
    assert cpu == {"qos": "q"}
    assert slurm_resources({"gpu_request": "gres"})[1]["gres"] == "gpu:1"


@pytest.mark.parametrize(
    ("sbatch", "key"),
    [
        ("--qos=high", "slurm.qos / slurm.gpu_qos"),
        ("-q high", "slurm.qos / slurm.gpu_qos"),
        ("--gres=gpu:2", "slurm.gpu_request and slurm.gpu_model"),
        ("--mail-type=FAIL -t10", "the job's runtime (slurm.max_runtime)"),
        ("--constraint=a100", "slurm.constraint / slurm.gpu_constraint"),
        ("--job-name x", "the executor plugin"),
    ],
)
def test_sbatch_options_another_key_sets_are_refused_by_name(sbatch, key):
    with pytest.raises(ConfigError, match=rf"^slurm\.sbatch: -\S+ is set by {re.escape(key)};"):
        slurm_resources({"sbatch": sbatch})


def test_an_own_signal_needs_signal_lead_off():
    with pytest.raises(ConfigError, match=r"^slurm\.sbatch: --signal is set by slurm\.signal_lead"):
        slurm_resources({"sbatch": "--signal=B:USR1@60"})
    _, gpu = slurm_resources({"sbatch": "--signal=B:USR1@60", "signal_lead": None})
    assert gpu["slurm_extra"] == "--signal=B:USR1@60"


def test_a_signal_lead_as_long_as_the_time_limit_is_refused():
    with pytest.raises(ConfigError, match=r"^slurm\.signal_lead: 600 s is not shorter"):
        slurm_resources({"signal_lead": 600, "max_runtime": 10})


def test_every_option_the_plugin_refuses_in_slurm_extra_is_refused_here():
    validation = pytest.importorskip("snakemake_executor_plugin_slurm.validation")
    for pattern in validation.get_forbidden_slurm_options():
        ours = [option for option in SBATCH_SET_BY if re.search(pattern, option + "=1")]
        ours += [option for option in SBATCH_SET_BY if re.search(pattern, option + " 1")]
        assert ours, f"the plugin refuses {pattern!r} in slurm_extra; slurm.sbatch lets it through"


def _config(**slurm):
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    config["slurm"] = slurm
    return config


@pytest.mark.parametrize(
    ("slurm", "message"),
    [
        ({"gpu_request": "gpu"}, r"^slurm\.gpu_request: 'gpu' is not one of \['gpus', 'gres'\]"),
        ({"gpu_model": "'a100'"}, r"^slurm\.gpu_model: .*expected the GPU type"),
        ({"qos": "high; rm"}, r"^slurm\.qos: .*expected sbatch --qos"),
        ({"sbatch": "--mail-user='me'"}, r"^slurm\.sbatch: .*expected further sbatch options"),
        ({"signal_lead": 0}, r"^slurm\.signal_lead: 0 is less than the minimum of 1"),
        ({"gpu_mdoel": "a100"}, r"^slurm\.gpu_mdoel: unknown key \(did you mean 'gpu_model'\?\)"),
    ],
)
def test_schema_errors_name_the_key(slurm, message):
    with pytest.raises(ConfigError, match=message):
        check_config(_config(**slurm), SCHEMA)


def test_the_keys_validate():
    check_config(
        _config(gpu_request="gres", gpu_model="a100", qos="q", sbatch="--nice=1", signal_lead=60),
        SCHEMA,
    )
