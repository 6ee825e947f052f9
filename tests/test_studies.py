"""What a study runs: seeds per task (a count, a list, or a mapping task → either, as Gu et al.
use 10 seeds for the small sets and 5 for the others), expanded per task, and bad mappings named
by their key path."""

from __future__ import annotations

import pytest

from blurbflow.config import expand_cells
from blurbflow.config.study_plan import study_seeds
from blurbflow.config.validate import check_names
from blurbflow.util.errors import ConfigError


def _study(seeds, tasks=("bc5chem", "biosses")):
    return {"models": ["m"], "tasks": list(tasks), "recipes": ["r"], "seeds": seeds}


def test_seeds_count_list_and_mapping():
    assert study_seeds(_study(3)) == [1, 2, 3]
    assert study_seeds(_study([4, 7]), "biosses") == [4, 7]
    mapping = _study({"default": 5, "biosses": 10})
    assert study_seeds(mapping, "bc5chem") == [1, 2, 3, 4, 5]
    assert study_seeds(mapping, "biosses") == list(range(1, 11))
    assert study_seeds(mapping) == list(range(1, 11))  # no task: the union over the tasks
    assert study_seeds(_study({"bc5chem": [2], "biosses": 1})) == [1, 2]
    with pytest.raises(ConfigError, match="no entry for task 'bc5chem'"):
        study_seeds(_study({"biosses": 10}), "bc5chem")


def test_seed_mapping_expands_each_task_with_its_own_seeds():
    config = {
        "models": {"m": {"hub_id": "org/m"}},
        "recipes": {"r": {"lr": [1e-5, 3e-5], "batch_size": 16}},
        "studies": {"s": _study({"default": 5, "biosses": 10})},
    }
    cells = expand_cells(config)
    assert len(cells) == 2 * (5 + 10)
    seeds = {
        task: sorted({c.seed for c in cells.values() if c.task == task})
        for task in ("bc5chem", "biosses")
    }
    assert seeds == {"bc5chem": [1, 2, 3, 4, 5], "biosses": list(range(1, 11))}


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ({"default": 5, "gad": 10}, "studies.s.seeds.gad: not one of the study's tasks"),
        ({"biosses": 10}, "studies.s.seeds: no entry for task 'bc5chem'; add it or `default`"),
    ],
)
def test_bad_seed_mappings_are_named(seeds, message):
    config = {
        "models": {"m": {"hub_id": "org/m"}},
        "recipes": {"r": {}},
        "studies": {"s": _study(seeds)},
    }
    with pytest.raises(ConfigError) as error:
        check_names(config)
    assert message in str(error.value)
