"""A model's settings are honoured: casing (the config's `cased`, or a cased vocabulary found in a
bare vocab.txt as BioBERT v1.1 ships), `add_prefix_space` (byte-level BPE), the recipe's
dropout on the architecture's own config fields, and loading refuses a checkpoint whose
encoder weights would be newly initialised. Model folders are generated here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hub_helpers import (
    HUB_STUDY,
    hub_config,
    hub_study,
    other_weights,
    output,
    run_snakemake,
    serve_hub,
)

from blurbflow.config import cell_options
from blurbflow.models.dropout import dropout_settings
from blurbflow.models.load import load_for_task, load_tokenizer, lowercases
from blurbflow.models.prefetch import model_folder, model_settings
from blurbflow.options import UNSET, ModelOptions
from blurbflow.tasks import get_task

from model_helpers import tiny_bert, tiny_config

WORDS = ["DNA", "IL", "BRCA1", "Cancer", "T", "cells", "the", "binds", "-", "2", "receptor"]
TEXTS = ["DNA binds the IL-2 receptor in T cells", "the gene BRCA1 is linked to Cancer"] * 20


def biobert_like(folder: Path, words: list[str]) -> Path:
    """A folder laid out like dmis-lab/biobert-base-cased-v1.1: config.json, vocab.txt and the
    weights only (no tokenizer.json, no tokenizer_config.json)."""
    from transformers import BertForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    torch.manual_seed(0)
    BertForMaskedLM(tiny_config(len(vocab))).save_pretrained(folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "model.safetensors",
        "vocab.txt",
    ]
    return folder


def test_a_cased_vocabulary_keeps_case_without_any_setting(tmp_path):
    folder = biobert_like(tmp_path / "biobert", WORDS)
    tokenizer = load_tokenizer(folder)
    assert tokenizer.tokenize("DNA IL-2") == ["DNA", "IL", "-", "2"]
    assert not lowercases(tokenizer)


def test_cased_in_the_config_entry_wins_either_way(tmp_path):
    cased = biobert_like(tmp_path / "cased", WORDS)
    assert load_tokenizer(cased, cased=False).tokenize("DNA IL-2") == ["[UNK]", "[UNK]", "-", "2"]
    # the project's own tokenizer (tokenizer.json, lower-casing) made to keep case
    _, config, built = tiny_bert(TEXTS, 120)
    config.save_pretrained(tmp_path / "built")
    built.save_pretrained(tmp_path / "built")
    assert load_tokenizer(tmp_path / "built").tokenize("DNA")[0].islower()
    kept = load_tokenizer(tmp_path / "built", cased=True)
    assert not lowercases(kept) and kept.tokenize("dna") != kept.tokenize("DNA")


def test_an_uncased_vocabulary_still_lower_cases(tmp_path):
    folder = biobert_like(tmp_path / "uncased", [w.lower() for w in WORDS])
    assert load_tokenizer(folder).tokenize("DNA IL-2") == ["dna", "il", "-", "2"]


def test_a_vocabulary_whose_config_says_do_lower_case_is_left_alone(tmp_path):
    folder = biobert_like(tmp_path / "explicit", WORDS + [w.lower() for w in WORDS])
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    assert load_tokenizer(folder).tokenize("DNA IL-2") == ["dna", "il", "-", "2"]


def test_tokenize_cli_honours_cased_and_records_it(tmp_path):
    from blurbflow.cli import main
    from blurbflow.data.generate import generate_source
    from blurbflow.data.prepare import prepare_task

    generate_source("biosses", tmp_path / "raw" / "biosses", seed=0)
    prepare_task("biosses", tmp_path / "raw", tmp_path / "data")
    folder = biobert_like(tmp_path / "model", WORDS)
    for cased, out in ((None, "auto"), (False, "lower")):
        args = ["tokenize", "--task", "biosses", "--data", str(tmp_path / "data")]
        args += ["--model-name", "bio", "--tokenizer", str(folder), "--input-key", "L64-pair"]
        settings = {} if cased is None else {"cased": cased}
        assert main([*args, "--settings", json.dumps(settings), "--out", str(tmp_path / out)]) == 0
    auto = json.loads((tmp_path / "auto/meta.json").read_text())
    lower = json.loads((tmp_path / "lower/meta.json").read_text())
    assert auto["lowercases"] is False and lower["lowercases"] is True
    assert auto["splits"]["train"]["instances"] == lower["splits"]["train"]["instances"] == 64


def roberta_like(folder: Path) -> Path:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig

    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(TEXTS * 5, vocab_size=300, special_tokens=specials)
    bpe.save_model(str(folder))
    RobertaConfig(
        vocab_size=300,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=70,
    ).save_pretrained(folder)
    return folder


def test_add_prefix_space_is_honoured(tmp_path):
    folder = roberta_like(tmp_path / "roberta")
    words = ["binds", "receptor"]
    on = load_tokenizer(folder, add_prefix_space=True)(words, is_split_into_words=True).tokens()
    off = load_tokenizer(folder, add_prefix_space=False)(words, is_split_into_words=True).tokens()
    default = load_tokenizer(folder)(words, is_split_into_words=True).tokens()
    assert on[1].startswith("Ġ") and not off[1].startswith("Ġ")
    assert default == on  # RoBERTa: on unless the config entry says otherwise


def test_model_settings_become_options_only_when_set():
    assert model_settings("m", {"hub_id": "org/m"}) == {"model": "m", "model_source": "org/m"}
    entry = {"hub_id": "org/m", "revision": "v1.1", "cased": True, "trust_remote_code": False}
    assert model_settings("m", entry) == {
        "model": "m",
        "model_source": "org/m",
        "revision": "v1.1",
        "cased": True,
    }
    config = {
        "models": {"a": entry, "b": {"hub_id": "org/b"}},
        "recipes": {"r": {}},
        "studies": {},
    }
    a = cell_options(config, "a", "biosses", "r", 1e-3, 16)
    assert a.revision == "v1.1" and a.to_dict()["revision"] == "v1.1"
    assert a.model_options == ModelOptions(**model_settings("a", entry))
    b = cell_options(config, "b", "biosses", "r", 1e-3, 16)
    assert b.revision is UNSET and "revision" not in b.to_dict()


def test_a_missing_local_model_folder_names_the_config_key(tmp_path):
    options = ModelOptions(model="mine", model_source=str(tmp_path / "nowhere/at/all"))
    with pytest.raises(FileNotFoundError, match=r"models\.mine\.path") as error:
        model_folder(options)
    assert "prefetch" not in str(error.value)


# ---------------------------------------------------------------- weights and dropout
def test_encoder_weights_that_do_not_load_are_refused_with_their_names(tmp_path):
    from safetensors.torch import save_file

    model, config, tokenizer = tiny_bert(TEXTS, 120)
    folder = tmp_path / "wrong-prefix"
    config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    # the checkpoint's keys carry a prefix its config does not use
    state = {f"encoder_v2.{k}": v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, folder / "model.safetensors")

    with pytest.raises(ValueError, match="encoder weights are not in the checkpoint") as error:
        load_for_task(str(folder), get_task("gad"))
    message = str(error.value)
    assert "bert.embeddings.word_embeddings.weight" in message
    assert "encoder_v2." in message  # the unused weights hint at the prefix


def test_a_checkpoint_without_head_or_pooler_loads(tmp_path):
    from transformers import BertForMaskedLM

    _, config, tokenizer = tiny_bert(TEXTS, 120)
    mlm = BertForMaskedLM(config)  # saved without pooler, as PubMedBERT
    mlm.save_pretrained(tmp_path / "mlm")
    model = load_for_task(str(tmp_path / "mlm"), get_task("gad"))
    assert torch.equal(
        model.bert.embeddings.word_embeddings.weight, mlm.bert.embeddings.word_embeddings.weight
    )


def test_dropout_reaches_the_architectures_own_fields(tmp_path):
    from transformers import DistilBertConfig

    model, _, tokenizer = tiny_bert(TEXTS, 120)
    model.save_pretrained(tmp_path / "bert")
    tokenizer.save_pretrained(tmp_path / "bert")
    assert dropout_settings(str(tmp_path / "bert"), 0.3) == {
        "hidden_dropout_prob": 0.3,
        "attention_probs_dropout_prob": 0.3,
    }
    DistilBertConfig(dim=16, n_layers=1, n_heads=2, hidden_dim=32).save_pretrained(
        tmp_path / "distil"
    )
    assert dropout_settings(str(tmp_path / "distil"), 0.3) == {
        "dropout": 0.3,
        "attention_dropout": 0.3,
    }
    loaded = load_for_task(str(tmp_path / "bert"), get_task("gad"), dropout=0.3)
    assert loaded.config.hidden_dropout_prob == loaded.config.attention_probs_dropout_prob == 0.3
    assert loaded.bert.encoder.layer[0].attention.self.dropout.p == 0.3


def test_dropout_that_reaches_no_field_is_an_error(tmp_path):
    from transformers import CONFIG_MAPPING

    CONFIG_MAPPING["convnext"]().save_pretrained(tmp_path / "no-dropout")
    with pytest.raises(ValueError, match="reaches no field") as error:
        load_for_task(str(tmp_path / "no-dropout"), get_task("gad"), dropout=0.1)
    assert "convnext" in str(error.value)


# ---------------------------------------------------------------- a pinned revision, end to end
@pytest.fixture
def hub(monkeypatch):
    yield from serve_hub(monkeypatch)


@pytest.mark.e2e
def test_a_pinned_revision_trains_its_commit_and_changing_it_requeues_only_its_cells(hub, tmp_path):
    """Two models from one hub repo: `pinned` at tag v1.1, `tracking` at main, both cached.
    Each cell loads its own commit (result.json says which); changing `pinned`'s revision
    re-queues exactly its prefetch, tokenization and cells."""
    from workflow_helpers import planned_jobs

    model, _, tokenizer = tiny_bert(TEXTS, 120)
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    files = {p.name: p.read_bytes() for p in (tmp_path / "tiny").iterdir()}
    v10 = hub.add_repo("bio/tiny", other_weights(files, 0.5), ref="v1.0")
    v11 = hub.add_repo("bio/tiny", files, ref="v1.1")
    main = hub.add_repo("bio/tiny", other_weights(files, 1.0), ref="main")
    models = {
        "pinned": {"hub_id": "bio/tiny", "revision": "v1.1", "size": "tiny"},
        "tracking": {"hub_id": "bio/tiny", "size": "tiny"},
    }
    workdir, cache = hub_study(tmp_path, models)
    run = run_snakemake(workdir, "all", hub.url, tmp_path)
    assert run.returncode == 0, output(run)[-5000:]
    cell = "results/cells/{}/biosses/quick/lr0.001-bs16/seed1/result.json"
    results = {m: json.loads((workdir / cell.format(m)).read_text()) for m in models}
    assert results["pinned"]["model_commit"] == v11 and results["pinned"]["status"] == "ok"
    assert results["tracking"]["model_commit"] == main
    assert results["pinned"]["options"]["revision"] == "v1.1"
    assert "revision" not in results["tracking"]["options"]
    assert results["pinned"]["test"] != results["tracking"]["test"]  # other weights

    config = hub_config(cache, {**models, "pinned": {**models["pinned"], "revision": "v1.0"}})
    (workdir / HUB_STUDY).write_text(json.dumps(config))
    dry = run_snakemake(workdir, "all", hub.url, tmp_path, "-n")

    assert dry.returncode == 0, output(dry)[-3000:]
    jobs = planned_jobs(dry.stdout)
    assert jobs["prefetch_model"] == [f"{cache}/.prefetched/bio--tiny@v1.0.json"]
    assert jobs["tokenize"] == ["resources/tokenized/pinned/biosses/L64-pair"]
    assert jobs["finetune"] == ["results/cells/pinned/biosses/quick/lr0.001-bs16/seeds.json"]
    assert v10 not in (v11, main)
