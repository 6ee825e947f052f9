"""`head: cls_linear` (Gu et al. 2021 §5.2: the classification layer is a linear layer): on tiny
random checkpoints of BERT, RoBERTa, ELECTRA, DeBERTa-v2 and ModernBERT (config +
`save_pretrained`, nothing downloaded), loaded through `load_for_task`, the only newly
initialised parameters are one weight [num_labels, hidden] and one bias [num_labels]. `head:
linear` (the architecture's own transformers head) initialises more for RoBERTa and ELECTRA (a
dense layer before the output layer); for BERT both compute the same (the pretrained pooler,
dropout, one linear layer)."""

from __future__ import annotations

import pytest
import torch
from safetensors import safe_open
from transformers import (
    AutoModel,
    BertConfig,
    DebertaV2Config,
    ElectraConfig,
    ModernBertConfig,
    RobertaConfig,
)

from blurbflow.models.load import load_for_task
from blurbflow.models.pooling import pooling_used
from blurbflow.options import check_options
from blurbflow.tasks import get_task
from blurbflow.util.errors import ConfigError

from model_helpers import make_options

SIZES = {"hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}
CONFIGS = {
    "bert": lambda: BertConfig(vocab_size=60, num_hidden_layers=1, **SIZES),
    "roberta": lambda: RobertaConfig(
        vocab_size=60, num_hidden_layers=1, max_position_embeddings=40, **SIZES
    ),
    "electra": lambda: ElectraConfig(vocab_size=60, num_hidden_layers=1, embedding_size=8, **SIZES),
    "deberta-v2": lambda: DebertaV2Config(vocab_size=60, num_hidden_layers=1, **SIZES),
    "modernbert": lambda: ModernBertConfig(
        vocab_size=60,
        num_hidden_layers=1,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        cls_token_id=3,
        sep_token_id=4,
        **SIZES,
    ),
}
SEQUENCE_TASKS = ("chemprot", "biosses", "hoc", "pubmedqa")  # re, sts, doccls, qa


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Architecture → a folder with config.json and model.safetensors of its bare encoder."""
    out = {}
    for name, config in CONFIGS.items():
        torch.manual_seed(0)
        folder = tmp_path_factory.mktemp(name)
        AutoModel.from_config(config()).save_pretrained(folder)
        out[name] = folder
    return out


def _checkpoint_keys(folder) -> set[str]:
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        return set(weights.keys())


def new_parameters(model, folder) -> dict[str, tuple[int, ...]]:
    """The model's parameters that are not in the checkpoint (the newly initialised ones):
    name → shape. Names are compared without the encoder's attribute prefix (`bert.` …)."""
    prefix = getattr(model, "base_model_prefix", "") or getattr(model, "prefix", "")
    saved = {k.removeprefix(f"{prefix}.") for k in _checkpoint_keys(folder)}
    return {
        name: tuple(p.shape)
        for name, p in model.named_parameters()
        if name.removeprefix(f"{prefix}.") not in saved
    }


def _inputs():
    ids = torch.tensor([[3, 10, 11, 12, 4, 0], [3, 13, 14, 4, 0, 0]])
    return ids, (ids != 0).long()


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_cls_linear_initialises_one_weight_and_one_bias(folders, arch):
    for task in SEQUENCE_TASKS:
        spec = get_task(task)
        model = load_for_task(str(folders[arch]), spec, dropout=0.1, head="cls_linear")
        labels = 1 if spec.kind.problem_type == "regression" else len(spec.labels)
        assert new_parameters(model, folders[arch]) == {
            "classifier.weight": (labels, 16),
            "classifier.bias": (labels,),
        }, (arch, task)
        # only BERT's pooler was pretrained (NSP); RoBERTa's saved pooler is random: not read
        assert model.use_pooler == (arch == "bert")
        model.eval()
        ids, mask = _inputs()
        assert model(input_ids=ids, attention_mask=mask).logits.shape == (2, labels)


@pytest.mark.parametrize("arch", list(CONFIGS))
def test_cls_linear_token_tasks_are_one_linear_layer_per_token(folders, arch):
    spec = get_task("bc5chem")
    model = load_for_task(str(folders[arch]), spec, head="cls_linear")
    labels = len(spec.labels)
    assert new_parameters(model, folders[arch]) == {
        "classifier.weight": (labels, 16),
        "classifier.bias": (labels,),
    }
    ids, mask = _inputs()
    assert model(input_ids=ids, attention_mask=mask).logits.shape == (2, 6, labels)


@pytest.mark.parametrize("arch", ["roberta", "electra"])
def test_linear_is_transformers_head_with_a_new_dense_layer(folders, arch):
    """`head: linear` keeps what it computed before: RoBERTa's and ELECTRA's own sequence heads
    put a new dense layer (and activation) before the output layer."""
    model = load_for_task(str(folders[arch]), get_task("chemprot"), head="linear")
    assert new_parameters(model, folders[arch]) == {
        "classifier.dense.weight": (16, 16),
        "classifier.dense.bias": (16,),
        "classifier.out_proj.weight": (6, 16),
        "classifier.out_proj.bias": (6,),
    }


@pytest.mark.parametrize("arch", ["deberta-v2", "modernbert"])
def test_linear_heads_of_deberta_and_modernbert_add_layers(folders, arch):
    """DeBERTa-v2's own head adds a context pooler (dense), ModernBERT's dense + norm."""
    model = load_for_task(str(folders[arch]), get_task("chemprot"), head="linear")
    new = new_parameters(model, folders[arch])
    assert {"classifier.weight", "classifier.bias"} < set(new) and len(new) > 2


def test_bert_cls_linear_reads_the_pretrained_pooler_as_linear_does(folders):
    """For BERT (pooler in the checkpoint) both heads compute the same logits from the same
    classifier weights: pooled [CLS] → dropout → one linear layer."""
    spec = get_task("chemprot")
    own = load_for_task(str(folders["bert"]), spec, dropout=0.0, head="linear").eval()
    ours = load_for_task(str(folders["bert"]), spec, dropout=0.0, head="cls_linear").eval()
    assert ours.use_pooler
    ours.classifier.load_state_dict(own.classifier.state_dict())
    ids, mask = _inputs()
    with torch.no_grad():
        expected = own(input_ids=ids, attention_mask=mask).logits
        got = ours(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(got, expected)


def test_bert_without_pooler_reads_the_raw_cls_state(tmp_path):
    """A BERT checkpoint without pooler weights: no new pooler, the raw [CLS] state."""
    torch.manual_seed(0)
    AutoModel.from_config(CONFIGS["bert"](), add_pooling_layer=False).save_pretrained(tmp_path)
    model = load_for_task(str(tmp_path), get_task("gad"), head="cls_linear")
    assert not model.use_pooler and model.bert.pooler is None
    assert set(new_parameters(model, tmp_path)) == {"classifier.weight", "classifier.bias"}


def test_extractive_qa_refuses_cls_linear():
    options = make_options(task="squad2", head="cls_linear")
    with pytest.raises(ConfigError, match="span head is already one linear layer"):
        check_options(options, "recipes.r", span=True)
    with pytest.raises(ValueError, match="use head: linear"):
        load_for_task("unused", get_task("squad2"), head="cls_linear")


def _head_input(model, ids, mask) -> torch.Tensor:
    """What the classifier of a loaded sequence model reads (its input, by a forward hook)."""
    seen = []
    layer = model.classifier if isinstance(model.classifier, torch.nn.Linear) else None
    layer = layer or model.classifier.out_proj
    handle = layer.register_forward_hook(lambda _m, args, _out: seen.append(args[0]))
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
    handle.remove()
    return seen[0]


@pytest.mark.parametrize("head", ["linear", "cls_linear"])
def test_untrained_pooler_heads_read_the_cls_state_not_the_pooler(folders, head):
    """A model entry's `untrained_pooler` (BioM-BERT-L: pretrained without NSP, so its pooler
    was never trained): both heads read the raw [CLS] state, and the pooler is gone. Without
    the setting, BERT's heads read the pooler's output."""
    spec, (ids, mask) = get_task("chemprot"), _inputs()
    bert = AutoModel.from_pretrained(folders["bert"]).eval()
    with torch.no_grad():
        encoded = bert(input_ids=ids, attention_mask=mask)
    cls_state, pooled = encoded.last_hidden_state[:, 0], encoded.pooler_output

    plain = load_for_task(str(folders["bert"]), spec, dropout=0.0, head=head).eval()
    torch.testing.assert_close(_head_input(plain, ids, mask), pooled)

    model = load_for_task(
        str(folders["bert"]), spec, dropout=0.0, head=head, untrained_pooler=True
    ).eval()
    read = _head_input(model, ids, mask)
    torch.testing.assert_close(read, cls_state)
    assert not torch.allclose(read, pooled)
    assert model.bert.pooler is None and not model.use_pooler
    assert pooling_used(model, token_level=False) == "cls"  # result.json's `pooling`
    assert new_parameters(model, folders["bert"]) == {
        "classifier.weight": (6, 16),
        "classifier.bias": (6,),
    }
    # token tasks never read a pooler: the setting leaves them as they are
    tagger = load_for_task(str(folders["bert"]), get_task("bc5chem"), untrained_pooler=True)
    assert type(tagger).__name__ == "BertForTokenClassification"


def test_untrained_pooler_is_a_cell_option_of_its_model_only():
    """The model entry's setting reaches its cells' options (so result.json records it), and
    no other model's; the tokenize step's settings leave it out (it changes no input)."""
    from blurbflow.config import cell_options
    from blurbflow.models.prefetch import model_settings

    entry = {"hub_id": "org/bert-no-nsp", "untrained_pooler": True}
    config = {
        "models": {"no-nsp": entry, "bert": {"hub_id": "org/bert"}},
        "recipes": {"r": {"lr": 3e-5, "batch_size": 16}},
        "studies": {},
    }
    ours = cell_options(config, "no-nsp", "chemprot", "r", 3e-5, 16)
    other = cell_options(config, "bert", "chemprot", "r", 3e-5, 16)
    assert ours.untrained_pooler is True and ours.to_dict()["untrained_pooler"] is True
    assert "untrained_pooler" not in other.to_dict()
    assert "untrained_pooler" not in model_settings("no-nsp", entry)
