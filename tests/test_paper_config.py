"""The default config.yaml: the paper studies (Gu et al. 2021, Tinn et al. 2023, Lewis et al.
2020, Alrowili & Shanker 2021) expand to
cells as the papers ran them, and `snakemake -n all` plans every one without downloading."""

from __future__ import annotations

import copy
import re
import time

import pytest
import yaml
from paper_plan import paper_plan

from blurbflow.config import cell_jobs, cell_options, expand_cells
from blurbflow.config.grid import grid_points, search_jobs
from blurbflow.config.recipes import resolve_recipe
from blurbflow.config.study_plan import study_seeds
from blurbflow.options import options_json
from blurbflow.results.choices import shown_study
from blurbflow.results.tables import study_layout, study_table

from workflow_helpers import REPO, copy_workflow, snakemake

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SMALL_TASKS = {"biosses", "pubmedqa", "bioasq"}  # Gu et al.: 10 seeds; 5 for the others
PAPER_TABLES = [
    "gu-table6",
    "gu-table8-text",
    "gu-table10-head",
    "gu-table11-tagging",
    "gu-table12-re",
    "tinn-table2",
    "tinn-table3",
    "tinn-table4",
    "tinn-table5",
    "tinn-table6",
    "tinn-table7",
    "tinn-table8",
    "tinn-table9",
    "tinn-table9-biosses",
    "tinn-table10",
    "tinn-table11",
    "biolm-table2",
    "biolm-table3",
    "biolm-table6",
    "biolm-table7",
    "biom-table2",
]
# ours, not a paper's (docs/fidelity.md "encoders-2026"): after the paper tables
OWN_STUDIES = ["encoders-2026", "encoders-2026-lora", "encoders-2026-long"]


# --- the paper studies ------------------------------------------------------------------------


def _options(study, recipe, model=None, task=None):
    cells = expand_cells(CONFIG, [study]).values()
    return next(
        c.options
        for c in cells
        if c.recipe == recipe and model in (None, c.model) and task in (None, c.task)
    )


def _points(study, recipe, model=None):
    cells = expand_cells(CONFIG, [study]).values()
    return {c.hparams for c in cells if c.recipe == recipe and model in (None, c.model)}


def test_every_paper_table_has_a_study():
    assert list(CONFIG["studies"]) == PAPER_TABLES + OWN_STUDIES
    for name, study in CONFIG["studies"].items():
        assert study.get("title"), name
        if "baseline" in study:
            assert study["baseline"] in shown_study(study)["recipes"], name
        study_layout(study)  # every table shows each dimension that varies


def test_seeds_are_10_for_the_small_tasks_and_5_otherwise():
    for name, study in CONFIG["studies"].items():
        for task in study["tasks"]:
            small = task in SMALL_TASKS and name.startswith(("gu-", "tinn-", "encoders-"))
            expected = list(range(1, 11 if small else 6))
            assert study_seeds(study, task) == expected, (name, task)


def test_no_two_recipes_expand_to_identical_options():
    # the same model and task under every recipe: a recipe must change what is trained
    seen: dict[str, str] = {}
    for recipe in CONFIG["recipes"]:
        for lr, bs, axes in grid_points(resolve_recipe(CONFIG, recipe)):
            options = cell_options(CONFIG, "pubmedbert", "chemprot", recipe, lr, bs, axes).to_dict()
            for key in ("recipe", "description"):
                options.pop(key, None)
            key = options_json(options)
            assert key not in seen, f"{recipe} {options['hparams']} repeats {seen.get(key)}"
            seen[key] = recipe


def test_standard_is_the_original_bert_recipe_with_gus_grid():
    standard = resolve_recipe(CONFIG, "standard")
    assert standard["adam_bias_correction"] is False and standard["adam_epsilon"] == 1e-6
    cells = expand_cells(CONFIG, ["gu-table6"])
    grid = {(c.options.lr, c.options.batch_size) for c in cells.values() if c.model == "bert"}
    assert grid == {(lr, bs) for lr in (1e-5, 3e-5, 5e-5) for bs in (16, 32)}
    assert {c.options.adam_bias_correction for c in cells.values()} == {False}
    epochs = {c.task: c.options.epochs for c in cells.values()}
    assert epochs["biosses"] == 60 and epochs["bc5chem"] <= 60  # Gu: epochs 2-60


def test_gu_table6_has_the_nine_models_and_one_setting_per_dataset():
    study = CONFIG["studies"]["gu-table6"]
    hub = {m: CONFIG["models"][m]["hub_id"] for m in study["models"]}
    assert len(hub) == 9 and len(set(hub.values())) == 9
    assert hub["clinicalbert"] == "emilyalsentzer/Bio_ClinicalBERT"
    assert hub["bluebert"] == "bionlp/bluebert_pubmed_mimic_uncased_L-12_H-768_A-12"
    cased = {m for m in study["models"] if CONFIG["models"][m].get("cased")}
    assert cased == {"bert-cased", "biobert", "scibert-cased", "clinicalbert"}
    assert study["reference_models"] == ["bert", "biobert"]
    cells = expand_cells(CONFIG, ["gu-table6"])
    assert len({c.task for c in cells.values()}) == 13
    seeds = 10 * 5 + 3 * 10  # per model and grid point: 10 tasks x 5 seeds + 3 tasks x 10
    # the reference models train the 6-point grid; so does PubMedBERT, whose whole grid other
    # studies train anyway; the other six models train the one point chosen on the reference
    assert len(cells) == 3 * 6 * seeds + 6 * 1 * seeds == 1920
    chosen = {c.model for c in cells.values() if c.hparams == "on-bert+biobert"}
    assert chosen == set(study["models"]) - {"bert", "biobert", "pubmedbert"}
    alone = expand_cells({**CONFIG, "studies": {"gu-table6": study}})
    assert len(alone) == 2 * 6 * seeds + 7 * 1 * seeds == 1520  # the study on its own


def test_gu_ablation_tables_are_the_papers():
    studies = CONFIG["studies"]
    assert studies["gu-table10-head"]["tasks"] == [
        "bc5chem",
        "bc5disease",
        "jnlpba",
        "chemprot",
        "ddi",
        "gad",
    ]
    assert _options("gu-table10-head", "head-bilstm").head == "bilstm"
    assert studies["gu-table11-tagging"]["tasks"] == ["bc5chem", "bc5disease", "jnlpba"]
    assert {
        _options("gu-table11-tagging", r).inputs.tagging
        for r in studies["gu-table11-tagging"]["recipes"]
    } == {"BIO", "BIOUL", "IO"}
    combos = {
        (_options("gu-table12-re", r).inputs.re_input, _options("gu-table12-re", r).re_pooling)
        for r in studies["gu-table12-re"]["recipes"]
    }
    assert combos == {
        ("dummify", "cls"),
        ("dummify", "max"),
        ("original", "cls"),
        ("original", "max"),
        ("markers", "cls"),
        ("markers", "max"),
        ("markers", "entity_start"),
    }
    # Gu 6.2: each dataset's setting tuned on BERT and BioBERT, as Table 6 (whose PubMedBERT row
    # Tables 11 and 12 print as BIO / dummify-[CLS]): the reference models train the grid,
    # PubMedBERT the point they choose (its `standard` grid is trained for Table 6 anyway)
    for name, tasks, recipes in [("gu-table11-tagging", 3, 3), ("gu-table12-re", 2, 7)]:
        assert studies[name]["reference_models"] == ["bert", "biobert"]
        cells = expand_cells(CONFIG, [name]).values()
        narrowed = {c.recipe for c in cells if c.hparams == "on-bert+biobert"}
        assert {c.model for c in cells if c.hparams == "on-bert+biobert"} == {"pubmedbert"}
        assert narrowed == set(studies[name]["recipes"]) - {"standard"}
        assert len(cells) == 5 * tasks * (2 * recipes * 6 + 6 + (recipes - 1))


def test_tinn_optimisation_and_budgets_are_the_papers():
    improved = _options("tinn-table3", "tinn-improved")
    assert improved.adam_bias_correction is True and improved.epochs == 100
    short = _options("tinn-table3", "tinn-standard-epochs")
    assert short.adam_bias_correction is True and short.epochs == 5
    plain = _options("tinn-table3", "tinn-no-bias-correction")
    assert plain.adam_bias_correction is False and plain.epochs == 100
    for name in ("tinn-table3", "tinn-table4"):
        assert {CONFIG["models"][m]["size"] for m in CONFIG["studies"][name]["models"]} == {"base"}


def test_tinn_techniques_are_one_column_with_their_setting_on_dev():
    lr_bs = 6
    assert _options("tinn-table4", "tinn-freeze-half").freeze_lower == "half"
    assert len(_points("tinn-table4", "tinn-llrd")) == lr_bs * 2  # decay 0.8 or 0.9
    decays = {
        c.options.layerwise_lr_decay
        for c in expand_cells(CONFIG, ["tinn-table4"]).values()
        if c.recipe == "tinn-llrd"
    }
    assert decays == {0.8, 0.9}
    assert len(_points("tinn-table4", "tinn-reinit")) == lr_bs * 3  # up to 3 layers (BASE)
    # LARGE: up to 6 layers, one column chosen on dev
    assert (
        len(_points("tinn-table6", "tinn-reinit") | _points("tinn-table6", "tinn-reinit-deep"))
        == lr_bs * 6
    )
    assert shown_study(CONFIG["studies"]["tinn-table6"])["recipes"] == [
        "tinn-improved",
        "tinn-freeze-half",
        "tinn-llrd",
        "layer-reinit",
    ]
    large = CONFIG["studies"]["tinn-table6"]["models"]
    assert {CONFIG["models"][m]["hub_id"] for m in large} == {
        "dmis-lab/biobert-large-cased-v1.1",
        "bionlp/bluebert_pubmed_mimic_uncased_L-24_H-1024_A-16",
        "microsoft/BiomedNLP-BiomedBERT-large-uncased-abstract",
        "microsoft/BiomedNLP-BiomedELECTRA-large-uncased-abstract",
    }


def test_tinn_table5_is_sizes_by_techniques():
    study = CONFIG["studies"]["tinn-table5"]
    found = set()
    for recipe in study["recipes"]:
        options = _options("tinn-table5", recipe)
        technique = (
            "freeze"
            if options.freeze_lower
            else "llrd"
            if options.layerwise_lr_decay
            else "reinit"
            if options.reinit_top
            else "baseline"
        )
        found.add((options.train_subsample, technique))
    assert found == {
        (n, t) for n in (100, 500, 1000) for t in ("baseline", "freeze", "llrd", "reinit")
    }
    assert study["tasks"] == ["chemprot", "ddi"]


def test_tinn_tables_7_to_9_cover_blurb():
    studies = CONFIG["studies"]
    for name in ("tinn-table7", "tinn-table8", "tinn-table9"):
        assert len(studies[name]["tasks"]) == 13, name
    assert studies["tinn-table7"]["models"] == studies["tinn-table6"]["models"]
    cells = expand_cells(CONFIG, ["tinn-table7"]).values()
    searched = {c.task for c in cells if c.recipe != "tinn-improved"}
    assert searched == SMALL_TASKS  # techniques searched on the small tasks only
    assert {_options("tinn-table8", r).remove_top for r in studies["tinn-table8"]["recipes"]} == {
        0,
        2,
        4,
        6,
    }
    assert set(shown_study(studies["tinn-table9"])["recipes"]) == {"tinn-standard", "optimal"}
    cells = expand_cells(CONFIG, ["tinn-table9"]).values()
    reinit = {(c.model, c.options.reinit_top) for c in cells if c.options.reinit_top}
    assert max(d for m, d in reinit if m == "pubmedbert") == 3
    assert max(d for m, d in reinit if m == "pubmedbert-large") == 6
    final = _options("tinn-table9-biosses", "tinn-biosses-train-dev")
    assert final.train_on == "train+dev" and final.select == "last"
    # "Standard": Gu's for the BASE model, the improved optimisation for the LARGE ones (BERT
    # and BioBERT run `standard` alone: the reference models of its grid point)
    standard = {(c.model, c.recipe) for c in cells if c.recipe in ("standard", "tinn-improved")}
    assert standard == {
        ("pubmedbert", "standard"),
        ("pubmedbert-large", "tinn-improved"),
        ("pubmedelectra-large", "tinn-improved"),
        ("bert", "standard"),
        ("biobert", "standard"),
    }
    assert {c.model for c in cells if c.recipe != "standard"}.isdisjoint({"bert", "biobert"})
    single = {
        (c.model, c.task, c.options.inputs.segment_ids)
        for c in cells
        if c.recipe == "tinn-single-segment"
    }
    assert single == {("pubmedbert", "pubmedqa", "single")}
    # Table 2: BIOSSES and BioASQ with the improved optimisation (Tables 3 and 4), the rest Gu's
    table2 = {(c.task, c.recipe) for c in expand_cells(CONFIG, ["tinn-table2"]).values()}
    improved = {t for t, r in table2 if r == "tinn-improved"}
    assert improved == {"biosses", "bioasq"} and len({t for t, _ in table2}) == 13


def test_tinn_gu_protocol_runs_take_gus_selection():
    # Tinn's Table 2 adopts Gu's fine-tuning, and 11 of its 13 BASE Standard values are Gu
    # Table 6's, run at the point chosen on BERT and BioBERT: `standard` is chosen there in
    # every Tinn study that runs it; their cells are gu-table6's, so nothing trains twice
    gu6 = expand_cells(CONFIG, ["gu-table6"])
    for name in ("tinn-table2", "tinn-table8", "tinn-table9", "tinn-table10", "tinn-table11"):
        study = CONFIG["studies"][name]
        assert study["reference_models"] == ["bert", "biobert"], name
        cells = expand_cells(CONFIG, [name])
        reference = {k for k, c in cells.items() if c.model in ("bert", "biobert")}
        assert reference and reference <= set(gu6), name
        assert {c.recipe for k, c in cells.items() if k in reference} == {"standard"}, name
    # ELECTRA ("fine-tuned in an identical manner") trains the chosen point only
    table2 = expand_cells(CONFIG, ["tinn-table2"]).values()
    electra = {c.hparams for c in table2 if (c.model, c.recipe) == ("pubmedelectra", "standard")}
    assert electra == {"on-bert+biobert"}


def test_train_dev_recipe_takes_the_setting_its_reinit_search_selected():
    # nothing is held out to select on: one job per model, its setting chosen by the search
    cells = expand_cells(CONFIG)
    final = [c for c in cells.values() if c.recipe == "tinn-biosses-train-dev"]
    assert {(c.hparams, c.options.lr, tuple(c.options.hparams_from)) for c in final} == {
        ("selected", None, ("tinn-reinit", "tinn-reinit-deep"))
    } and len(final) == 3 * 10
    depths = {
        path.split("/")[2]: sorted({j.options.reinit_top for j in jobs})
        for path, jobs in search_jobs(cell_jobs(cells)).items()
        if "/biosses/" in path and "/reference/" not in path  # (Bio-LM's folds select too)
    }  # 6 grid points each
    assert depths == {
        "pubmedbert": [1, 2, 3],
        "pubmedbert-large": [1, 2, 3, 4, 5, 6],
        "pubmedelectra-large": [1, 2, 3, 4, 5, 6],
    }


def test_every_study_table_renders_before_any_cell_ran():
    import pandas as pd

    from blurbflow.results.aggregate import COLUMNS, normalise_types

    empty = normalise_types(pd.DataFrame(columns=COLUMNS))
    for name, study in CONFIG["studies"].items():
        table = study_table(empty, name, study)
        assert (table.xs("n", axis=1, level="stat") == 0).all().all(), name


# --- the dry run ------------------------------------------------------------------------------


@pytest.mark.slow  # runs snakemake or trains for long; `make test-fast` leaves it out
def test_dry_run_of_the_default_config_lists_every_studys_cells(tmp_path):
    workdir = copy_workflow(tmp_path)
    start = time.monotonic()
    # `all` first: `-q` takes the names after it as its own arguments
    run = snakemake(workdir, "all", "-n", "--quiet", "rules", timeout=300)
    seconds = time.monotonic() - start
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    stats = re.search(r"Job stats:\n(.*?)\n\n", run.stdout + run.stderr, re.S)
    assert stats, (run.stdout + run.stderr)[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", stats.group(1), re.M))
    cells = expand_cells(CONFIG)
    assert int(counts["finetune"]) == len(cell_jobs(cells))
    per_study = {name: set(expand_cells(CONFIG, [name])) for name in CONFIG["studies"]}
    assert all(per_study.values()) and set().union(*per_study.values()) == set(cells)
    assert int(counts["report"]) == 1 and int(counts["tables"]) == 1
    # the BIOSSES final model of three models; Bio-LM's GAD and EU-ADR tune folds of its six
    # public models and nine of its own
    assert int(counts["select_hparams"]) == 3 + 15 * 2
    print(f"dry run of {len(cells)} cells: {seconds:.1f} s (benchmarks/dag_scale.py measures)")


def test_config_is_not_changed_by_expansion():
    before = copy.deepcopy(CONFIG)
    expand_cells(CONFIG)
    assert CONFIG == before


# --- the fidelity map -------------------------------------------------------------------------

FIDELITY = (REPO / "docs" / "fidelity.md").read_text()


def test_fidelity_map_names_every_study_with_its_cell_count():
    mapped = {
        name: int(count.replace(",", ""))
        for name, count in re.findall(r"`([a-z0-9-]+)` \(([\d,]+) cells\)", FIDELITY)
    }
    assert set(mapped) == set(CONFIG["studies"])
    plan = paper_plan()  # the README's generated cost reads the same plan (tests/paper_plan.py)
    for name, count in mapped.items():
        assert plan["studies"][name]["total_cells"] == count, name
    total = f"{plan['cells']:,} cells in {plan['jobs']:,} jobs"
    assert total in FIDELITY
    assert "docs/fidelity.md" in (REPO / "README.md").read_text()


def test_fidelity_map_has_a_row_per_fine_tuning_table():
    sections = dict(re.findall(r"^## (\S+).*\n((?:(?!^## ).*\n?)*)", FIDELITY, re.M))

    def tables(paper: str) -> set[int]:
        rows = re.findall(r"^\| Tables? ([\d, ]+)", sections[paper], re.M)
        return {int(n) for row in rows for n in row.replace(",", " ").split()}

    assert tables("Gu") == set(range(6, 13))
    assert tables("Tinn") == set(range(2, 12))
    assert tables("Lewis") == {2, 3, 6, 7}  # Bio-LM's fine-tuning tables
    assert tables("Alrowili") == {2}  # BioM-Transformers' main table


# --- Bio-LM and BioM-Transformers -------------------------------------------------------------


def _job_options(study: str) -> dict:
    return {path: job.options for path, job in cell_jobs(expand_cells(CONFIG, [study])).items()}


def test_biolm_table2_is_the_papers_protocol():
    study = CONFIG["studies"]["biolm-table2"]
    assert study["statistic"] == "median" and study_seeds(study) == [1, 2, 3, 4, 5]
    assert study["cross_validation"] == {
        "tasks": ["gad", "euadr"],
        "tune_fold": 1,
        "statistic": "median",
    }
    tagging = resolve_recipe(CONFIG, "biolm-tagging")
    assert (tagging["lr"], tagging["batch_size"], tagging["epochs"]) == (1e-5, 32, 20)
    assert tagging["eval_every_steps"] == 500
    classification = resolve_recipe(CONFIG, "biolm-classification")
    assert (classification["batch_size"], classification["epochs"]) == (16, 10)
    assert classification["eval_every_steps"] == 200
    assert resolve_recipe(CONFIG, "biolm-classification-printed")["lr"] == 0.002
    # not printed: the defaults of Bio-LM's released run_classification.py
    for name in ("biolm-tagging", "biolm-classification"):
        recipe = resolve_recipe(CONFIG, name)
        assert (recipe["weight_decay"], recipe["adam_epsilon"], recipe["warmup_ratio"]) == (
            0.0,
            1e-8,
            0.0,
        )
    jobs = _job_options("biolm-table2")
    # per model and seed: GAD's tune fold searches, the other nine folds train once after it
    gad = [o for o in jobs.values() if o.model == "roberta" and o.task.startswith("gad-")]
    assert len(gad) == 10
    assert sum(o.train_on == "train+dev" for o in gad) == 9
    linnaeus = [o for o in jobs.values() if o.task == "linnaeus"]
    assert {o.recipe for o in linnaeus} == {"biolm-tagging"}


BIOLM_RELEASES = {  # the bio-lm repository's README: the Hugging Face tarball of each model
    "biolm-base-pm": "RoBERTa-base-PM",
    "biolm-base-pm-voc": "RoBERTa-base-PM-Voc",
    "biolm-base-pm-m3": "RoBERTa-base-PM-M3",
    "biolm-base-pm-m3-voc": "RoBERTa-base-PM-M3-Voc",
    "biolm-base-pm-m3-voc-longer": "RoBERTa-base-PM-M3-Voc-train-longer",
    "biolm-base-distill": "RoBERTa-base-PM-M3-Voc-distill",
    "biolm-base-distill-align": "RoBERTa-base-PM-M3-Voc-distill-align",
    "biolm-large-pm-m3": "RoBERTa-large-PM-M3",
    "biolm-large-pm-m3-voc": "RoBERTa-large-PM-M3-Voc",
}


def test_biolm_own_models_are_the_released_tarballs_in_the_papers_rows():
    for model, release in BIOLM_RELEASES.items():
        entry = CONFIG["models"][model]
        assert entry["url"] == f"https://dl.fbaipublicfiles.com/biolm/{release}-hf.tar.gz"
        assert entry["sha256"] is None  # no digest is published: prefetch prints the one to pin
        assert entry["size"] == release.split("-")[1] and entry["add_prefix_space"] is True
    studies = CONFIG["studies"]
    assert studies["biolm-table3"]["models"] == [  # Table 3's rows (1)-(8)
        "roberta", "biolm-base-pm", "biolm-base-pm-voc", "biolm-base-pm-m3",
        "biolm-base-pm-m3-voc", "roberta-large", "biolm-large-pm-m3", "biolm-large-pm-m3-voc",
    ]  # fmt: skip
    assert studies["biolm-table6"]["models"] == [
        "biolm-base-pm-m3-voc", "biolm-base-pm-m3-voc-longer", "biolm-large-pm-m3-voc",
        "biolm-base-distill", "biolm-base-distill-align",
    ]  # fmt: skip
    used = {m for name in ("biolm-table2", "biolm-table3", "biolm-table6", "biolm-table7")
            for m in studies[name]["models"]}  # fmt: skip
    assert set(BIOLM_RELEASES) <= used
    # the same protocol and cells as Table 2: each model's cells of the four studies coincide
    table2 = {k: c for k, c in expand_cells(CONFIG, ["biolm-table2"]).items()}
    for name in ("biolm-table3", "biolm-table6", "biolm-table7"):
        keys = ("recipes", "recipe_scope", "choose", "cross_validation", "seeds", "statistic")
        assert all(studies[name][k] == studies["biolm-table2"][k] for k in keys), name
        for key, cell in expand_cells(CONFIG, [name]).items():
            if cell.model in studies["biolm-table2"]["models"]:
                assert table2[key].options == cell.options, key


def test_biom_table2_uses_the_appendix_settings_and_bioasq_after_squad2():
    jobs = _job_options("biom-table2")

    def setting(model: str, task: str) -> tuple:
        (options,) = [o for o in jobs.values() if o.model == model and o.task == task]
        return options.epochs, options.lr, options.batch_size

    assert setting("biom-electra", "bc5chem") == (5, 2e-4, 48)
    assert setting("biom-electra-large", "chemprot") == (4, 7e-5, 32)
    assert setting("biom-albert-xxlarge", "squad2") == (2, 3e-5, 128)
    assert setting("pubmedbert", "bioasq-factoid") == (3, 1e-5, 128)
    assert setting("pubmedbert-full", "squad2") == (2, 5e-5, 32)  # PubMedBERT_B+
    # BioRoBERTa_L: ChemProt only, the paper's own run (footnote 2), Bio-LM's optimizer settings
    assert setting("biolm-large-pm-m3-voc", "chemprot") == (10, 2e-5, 16)
    assert {o.task for o in jobs.values() if o.model == "biolm-large-pm-m3-voc"} == {"chemprot"}
    bioroberta = next(o for o in jobs.values() if o.model == "biolm-large-pm-m3-voc")
    assert bioroberta.adam_bias_correction and bioroberta.eval_every_steps is None
    # NER and ChemProt at 256 tokens (the authors' example notebook); ALBERT_xxlarge is v1 (their
    # Table 1's 1.5M steps); BioM-BERT-L's pooler was never trained (ELECTRA's code, no NSP)
    ner_re = ("bc5chem", "bc5disease", "ncbidisease", "chemprot")
    assert {o.max_length for o in jobs.values() if o.task in ner_re} == {256}
    assert CONFIG["models"]["albert-xxlarge"]["hub_id"] == "albert/albert-xxlarge-v1"
    untrained = {o.model for o in jobs.values() if o.untrained_pooler is True}
    assert untrained == {"biom-bert-large"}
    # the appendix's epochs, the last kept; SQuAD2.0 and BioASQ on every training question
    assert {o.selection for o in jobs.values()} == {"last"}
    qa = {o.train_on for o in jobs.values() if o.task in ("squad2", "bioasq-factoid")}
    assert qa == {"train+dev"}
    assert {o.train_on for o in jobs.values() if o.task == "chemprot"} == {"train"}
    for options in jobs.values():
        if options.task == "bioasq-factoid":
            source = options.init_from
            assert source.task == "squad2" and source.seed == "same"
            assert any(
                o.model == options.model and o.recipe == source.recipe and o.keep_weights
                for o in jobs.values()
            ), options.model
