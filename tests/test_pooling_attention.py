"""Recipe option `pooling` (blurbflow.models.pooling), the model entry's `attn_implementation`
(blurbflow.models.attention) and the config-time check of a local model folder, on tiny random
checkpoints built here (nothing downloaded)."""

from __future__ import annotations

import pytest
import torch
import transformers as T

from blurbflow.config.validate import check_local_models
from blurbflow.models import attention
from blurbflow.models.load import load_for_task
from blurbflow.models.pooling import pooling_used
from blurbflow.models.prefetch import local_model_problem
from blurbflow.tasks import get_task
from blurbflow.util.errors import ConfigError

SIZES = dict(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=64, max_position_embeddings=64, pad_token_id=0)  # fmt: skip


def configs():
    yield "bert", T.BertConfig(**SIZES)
    yield "roberta", T.RobertaConfig(**{**SIZES, "pad_token_id": 1, "max_position_embeddings": 66})
    yield "deberta-v2", T.DebertaV2Config(**SIZES, relative_attention=True, pos_att_type=["c2p"])
    yield "modernbert", T.ModernBertConfig(
        **SIZES, local_attention=16, global_attn_every_n_layers=2, bos_token_id=2,
        classifier_pooling="mean",  # as answerdotai's checkpoints (transformers' default: cls)
        eos_token_id=3, cls_token_id=2, sep_token_id=3,
    )  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    out = {}
    for name, config in configs():
        torch.manual_seed(0)
        folder = tmp_path_factory.mktemp(name)
        T.AutoModel.from_config(config).save_pretrained(folder)
        out[name] = str(folder)
    return out


# what each architecture's own sequence head reads, and what `pooling` makes it read
OWN = {"bert": "pooler", "roberta": "cls", "deberta-v2": "cls", "modernbert": "mean"}


@pytest.mark.parametrize("arch", list(OWN))
def test_pooling_overrides_the_architecture_default_and_is_recorded(folders, arch):
    spec = get_task("gad")
    ids = torch.tensor([[2, 17, 45, 9, 3, 0, 0], [2, 33, 3, 0, 0, 0, 0]])
    mask = (ids != 0).long()
    for asked, expected in ((None, OWN[arch]), ("cls", None), ("mean", "mean")):
        model = load_for_task(folders[arch], spec, sequence_pooling=asked).eval()
        used = pooling_used(model, token_level=False)
        assert used == (expected or ("pooler" if arch == "bert" else "cls")), (arch, asked)
        with torch.no_grad():
            assert model(input_ids=ids, attention_mask=mask).logits.shape == (2, 2)
    token = load_for_task(folders[arch], get_task("bc5chem"), sequence_pooling="mean")
    assert pooling_used(token, token_level=True) is None  # token tasks pool nothing


def test_mean_pooling_reads_only_the_real_tokens(folders):
    model = load_for_task(folders["bert"], get_task("gad"), sequence_pooling="mean").eval()
    ids = torch.tensor([[2, 17, 45, 3]])
    padded = torch.tensor([[2, 17, 45, 3, 0, 0]])
    with torch.no_grad():
        alone = model(input_ids=ids).logits
        with_pads = model(input_ids=padded, attention_mask=(padded != 0).long()).logits
    torch.testing.assert_close(alone, with_pads)


@pytest.mark.parametrize("arch", ["bert", "roberta", "modernbert"])
def test_sdpa_and_eager_agree_within_float_rounding(folders, arch):
    """Why attn_implementation is no cell option: the same numbers up to float rounding."""
    spec = get_task("gad")
    ids = torch.tensor([[2, 17, 45, 9, 3, 0, 0], [2, 33, 3, 0, 0, 0, 0]])
    mask, labels = (ids != 0).long(), torch.tensor([0, 1])
    out = {}
    try:
        for name in ("sdpa", "eager"):
            attention.use(name)
            torch.manual_seed(0)
            model = load_for_task(folders[arch], spec).eval()
            assert attention.used(model) == name
            result = model(input_ids=ids, attention_mask=mask, labels=labels)
            result.loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            out[name] = (result.logits.detach(), result.loss.detach(), grads)
    finally:
        attention.use(None)
    (la, ma, ga), (lb, mb, gb) = out["sdpa"], out["eager"]
    torch.testing.assert_close(la, lb, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ma, mb, atol=1e-6, rtol=1e-6)
    for a, b in zip(ga, gb, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_default_attention_falls_back_to_eager_without_sdpa(folders):
    model = load_for_task(folders["deberta-v2"], get_task("gad"))
    assert attention.used(model) == "eager"  # DeBERTa-v2 has no sdpa in transformers
    with pytest.raises(ValueError, match="flash_attention_2 needs a CUDA GPU"):
        attention.use("flash_attention_2")
    with pytest.raises(ValueError, match="unknown"):
        attention.use("fast")


def test_a_local_model_folder_without_a_model_fails_when_the_config_is_read(tmp_path, folders):
    empty = tmp_path / "empty"
    empty.mkdir()
    config = {"models": {"m": {"path": str(empty)}}, "studies": {"s": {"models": ["m"]}}}
    with pytest.raises(ConfigError, match=r"models\.m\.path: .*holds no model: no config\.json"):
        check_local_models(config)
    # a model without a tokenizer: the weights and config alone do not make a cell
    problem = local_model_problem(folders["bert"])
    assert "no tokenizer vocabulary" in problem
    assert "no config.json" not in problem and "no PyTorch weights" not in problem
    assert "does not exist" in local_model_problem(str(tmp_path / "missing"))


def test_a_head_reading_a_decoders_first_token_is_refused(tmp_path):
    """A causal model's first token sees only itself: `head: cls_linear` or `pooling: cls` on a
    decoder fails when the config is read (its files there) and again when the model loads."""
    from blurbflow.config import cell_jobs, check_max_length, expand_cells

    torch.manual_seed(0)
    llama = T.LlamaConfig(vocab_size=120, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64)  # fmt: skip
    T.AutoModel.from_config(llama).save_pretrained(tmp_path / "llama")
    config = {
        "models": {"dec": {"path": str(tmp_path / "llama")}},
        "recipes": {"own": {"lr": 1e-3, "epochs": 1},
                    "first": {"extends": "own", "head": "cls_linear"},
                    "mean": {"extends": "own", "head": "cls_linear", "pooling": "mean"}},
        "studies": {"s": {"models": ["dec"], "tasks": ["gad", "ncbidisease"], "seeds": 1,
                          "recipes": ["own", "first", "mean"]}},
    }  # fmt: skip
    with pytest.raises(ConfigError, match=r"recipes.first: model 'dec' is a decoder \(llama\)"):
        check_max_length(config, cell_jobs(expand_cells(config)).values())
    config["studies"]["s"]["recipes"] = ["own", "mean"]  # its own head; mean pooling: fine
    check_max_length(config, cell_jobs(expand_cells(config)).values())
    with pytest.raises(ValueError, match="decoder's first token sees only itself"):
        load_for_task(str(tmp_path / "llama"), get_task("gad"), head="cls_linear")
    load_for_task(str(tmp_path / "llama"), get_task("ncbidisease"), head="cls_linear")  # tokens
