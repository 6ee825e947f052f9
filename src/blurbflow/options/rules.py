"""The rules between a cell's options, run when the config is read (blurbflow.config); split
from blurbflow.options, which re-exports `check_options`."""

from __future__ import annotations

from blurbflow.util.errors import ConfigError


def check_options(options, where: str, *, entities: bool = False, span: bool = False) -> None:
    """The rules between a cell's options, run when the config is read (blurbflow.config);
    `options`: a blurbflow.options.CellOptions. `entities`: the task reads entity pairs (RE);
    `span`: extractive QA. Rules between recipes or studies are elsewhere: `hparams_from`
    (blurbflow.config.grid), `init_from` (blurbflow.config.init_from), cross-validation,
    adaptive seeds and `choose` (blurbflow.config.study_plan), `export_models` needs `keep_model`
    (blurbflow.export.check)."""
    if options.train_on == "train+dev" and options.patience:
        raise ConfigError(
            f"{where}.patience: early stopping needs a held-out dev set, but the recipe trains "
            "on train+dev; remove `patience` or use `train_on: train`"
        )
    if entities and options.re_pooling == "entity_start" and options.inputs.re_input != "markers":
        raise ConfigError(
            f"{where}.re_pooling: 'entity_start' reads the [E1]/[E2] marker tokens, so it needs "
            f"re_input: markers (got {options.inputs.re_input!r}); use re_pooling: max or cls"
        )
    if span and options.head != "linear":
        raise ConfigError(
            f"{where}.head: {options.head!r} does not apply to extractive QA ({options.task}), "
            "whose span head is already one linear layer per token (start and end logits) on "
            "every architecture; use head: linear, or leave the task out of this recipe (a "
            "study's recipe_scope)"
        )
