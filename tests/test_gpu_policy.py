"""The engine's per-device policy (blurbflow.train.engine, docs/engine.md "On a GPU"), each part
against the computation it replaces, on the CPU: bucket-padded and host-masked batches, the
padding-free path for BERT-style models and ModernBERT, prefetching and the compiled step (torch's
fused AdamW: tests/test_optim_kernels.py). Speed is for a GPU: benchmarks/gpu.py --suite."""

from __future__ import annotations

import contextlib
import json

import pytest
import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
    ModernBertConfig,
    ModernBertForSequenceClassification,
    ModernBertForTokenClassification,
    RobertaConfig,
    RobertaForTokenClassification,
)

from blurbflow.models import padding_free
from blurbflow.train import engine
from blurbflow.train.shapes import Shapes, ahead, widen

CPU, CUDA = torch.device("cpu"), torch.device("cuda")
SIZES = dict(vocab_size=90, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
             intermediate_size=64, num_labels=3)  # fmt: skip
QUIET = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
# ModernBERT: a local window of ±4 tokens (longer sequences than that take the band-mask path),
# every third layer global; `mean` pooling reads the padded attention mask after the encoder
MODERN = dict(local_attention=8, global_attn_every_n_layers=3, pad_token_id=0, bos_token_id=1,
              eos_token_id=2, cls_token_id=1, sep_token_id=2, attention_dropout=0.0,
              mlp_dropout=0.0, embedding_dropout=0.0, classifier_pooling="mean")  # fmt: skip
MODELS = {
    "bert-tokens": lambda: BertForTokenClassification(BertConfig(**SIZES, **QUIET)),
    "bert-sequence": lambda: BertForSequenceClassification(BertConfig(**SIZES, **QUIET)),
    "roberta-tokens": lambda: RobertaForTokenClassification(
        RobertaConfig(**SIZES, **QUIET, pad_token_id=1, max_position_embeddings=64)
    ),
    "modernbert-tokens": lambda: ModernBertForTokenClassification(
        ModernBertConfig(**SIZES, **MODERN)
    ),
    "modernbert-sequence": lambda: ModernBertForSequenceClassification(
        ModernBertConfig(**SIZES, **MODERN)
    ),
}
LENGTHS = [7, 12, 3, 9, 4]


def model_of(name: str):
    torch.manual_seed(0)
    return MODELS[name]()


def padded_batch(lengths: list[int], sequence_labels: bool = False, pad_id: int = 0) -> dict:
    gen = torch.Generator().manual_seed(1)
    width, rows = max(lengths), len(lengths)
    batch = {
        "input_ids": torch.full((rows, width), pad_id),
        "attention_mask": torch.zeros(rows, width, dtype=torch.long),
        "labels": torch.full((rows, width), -100),
    }
    for r, n in enumerate(lengths):
        batch["input_ids"][r, :n] = torch.randint(5, 90, (n,), generator=gen)
        batch["attention_mask"][r, :n] = 1
        batch["labels"][r, :n] = torch.randint(0, 3, (n,), generator=gen)
    if sequence_labels:
        batch["labels"] = torch.randint(0, 3, (rows,), generator=gen)
    return batch


def run(model, inputs: dict, packed=None):
    """(logits, loss, gradients) of one forward and backward pass."""
    model.zero_grad()
    with padding_free.running(model, packed) if packed else contextlib.nullcontext():
        out = model(**inputs)
        out.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.logits.detach(), out.loss.detach(), grads


def assert_same(reference, other, real: torch.Tensor, atol: float) -> None:
    (logits, loss, grads), (logits2, loss2, grads2) = reference, other
    if logits.dim() == 3:  # token logits: the real tokens' (pads are never read)
        width = real.shape[1]
        logits, logits2 = logits[real], logits2[:, :width][real]
    torch.testing.assert_close(logits2, logits, rtol=0, atol=atol)
    torch.testing.assert_close(loss2, loss, rtol=0, atol=atol)
    assert grads.keys() == grads2.keys()
    for name in grads:
        torch.testing.assert_close(grads2[name], grads[name], rtol=0, atol=atol, msg=name)


# -- the policy -------------------------------------------------------------------------------
def test_auto_policy_is_todays_on_the_cpu_and_the_measured_one_on_cuda():
    auto = engine.Settings()
    cpu = engine.resolve(auto, CPU, "fp32", "bucketed", packs=False, padding_free=True)
    assert (cpu.attention_backend, cpu.batch_shapes, cpu.prefetch) == (
        "torch",
        "micro_batches",
        False,
    )
    assert engine.resolve(auto, CPU, "fp32", "bucketed", True, True).batch_shapes == "packed"
    assert engine.resolve(auto, CPU, "fp32", "random", True, True).batch_shapes == "padded"
    for precision, shapes in (("bf16", "padded"), ("fp16", "padded"), ("fp32", "micro_batches")):
        gpu = engine.resolve(auto, CUDA, precision, "bucketed", False, True)
        assert (gpu.attention_backend, gpu.batch_shapes, gpu.prefetch) == ("no_cudnn", shapes, True)
        assert gpu.optimizer_kernel is None and gpu.compiled is False
        assert gpu.pad_multiple == (64 if shapes == "padded" else 1)  # measured: buckets of 64
    assert cpu.pad_multiple == 1 and cpu.eval_batch_size is None
    # evaluation batches of ~32k tokens on CUDA, never fewer than the recipe's; the CPU's own
    for length, recipes, wanted in ((128, 64, 256), (256, 64, 128), (512, 64, 64), (128, 512, 512)):
        gpu = engine.resolve(auto, CUDA, "bf16", "bucketed", False, True, length, recipes)
        assert gpu.eval_batch_size == wanted
    assert (
        engine.resolve(auto, CPU, "fp32", "bucketed", False, True, 128, 64).eval_batch_size is None
    )
    fixed = engine.Settings.from_config({"pad_multiple": 1, "eval_batch_size": None})
    gpu = engine.resolve(fixed, CUDA, "bf16", "bucketed", False, True, 128, 64)
    assert (gpu.pad_multiple, gpu.eval_batch_size) == (1, None)  # today's, when asked
    asked = engine.Settings.from_config({"shapes": "padding_free", "attention": "cudnn_ragged"})
    for batching in ("bucketed", "random"):  # `random`: one pass, padding-free is one
        assert engine.resolve(asked, CUDA, "bf16", batching, False, True).batch_shapes == (
            "padding_free"
        )
    # a model the path does not cover (DeBERTa) runs padded; the CPU has one attention choice
    assert engine.resolve(asked, CUDA, "bf16", "bucketed", False, False).batch_shapes == "padded"
    assert engine.resolve(asked, CPU, "fp32", "bucketed", False, True).attention_backend == "torch"
    assert engine.resolve(asked, CUDA, "bf16", "bucketed", False, True).attention_backend == (
        "cudnn_ragged"
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"shape": "padded"}, r"unknown key\(s\) shape; use attention, cells_per_gpu, compile"),
        ({"shapes": "packed"}, r"engine.shapes: unknown 'packed'; use one of auto, micro_batches"),
        ({"pad_multiple": 0}, r"engine.pad_multiple: 0 is not auto or a whole number ≥ 1"),
        ({"eval_batch_size": "big"}, r"engine.eval_batch_size: 'big' is not auto or a whole"),
        ({"prefetch": "yes"}, r"engine.prefetch: 'yes'; use auto, true or false"),
    ],
)
def test_engine_settings_name_the_bad_key_and_the_fix(given, message):
    with pytest.raises(ValueError, match=message):
        engine.Settings.from_config(given)


def test_attention_policy_turns_cudnn_sdpa_off_inside_the_cell_only():
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with engine.attention_backends(CUDA):  # the job's settings: auto, cuDNN's off on CUDA
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    with engine.attention_backends(CUDA, "torch"):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
    with engine.attention_backends(CPU, "no_cudnn"):  # no cuDNN attention on the CPU
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
    assert torch.backends.cuda.cudnn_sdp_enabled() == before


# -- bucket widths and host-built masks ---------------------------------------------------------
@pytest.mark.parametrize("name", ["bert-tokens", "bert-sequence"])
def test_bucket_padded_and_host_masked_batches_give_the_unpadded_logits_and_loss(name):
    model, batch = model_of(name), padded_batch(LENGTHS, name.endswith("sequence"))
    real = batch["attention_mask"].bool()
    reference = run(model, batch)
    wide = widen(batch, 16, pad_id=0, limit=128)
    assert wide["input_ids"].shape == (5, 16) and batch["input_ids"].shape == (5, 12)
    assert widen(batch, 64, pad_id=0, limit=14)["input_ids"].shape[1] == 14  # never past it
    bucketed = Shapes(CPU, mode="padded", pad_multiple=16, max_width=128, host_mask=True)
    inputs, packed = bucketed.inputs(batch)
    assert packed is None and inputs["attention_mask"].shape == (5, 1, 1, 16)
    assert_same(reference, run(model, inputs), real, atol=1e-6)


# -- the padding-free path ----------------------------------------------------------------------
@pytest.mark.parametrize("name", list(MODELS))
def test_padding_free_matches_padded_batches(name):
    """Logits of the real tokens, the loss and every gradient, within float rounding: BERT,
    RoBERTa (positions after its pad id), ModernBERT (local windows shorter and longer than
    sequences, mean pooling over the padded mask)."""
    model = model_of(name)
    pad = model.config.pad_token_id or 0
    assert padding_free.supports(model)
    for lengths in (LENGTHS, [9, 12]):  # some within ModernBERT's window, then none
        batch = padded_batch(lengths, name.endswith("sequence"), pad_id=pad)
        real = batch["attention_mask"].bool()
        model.set_attn_implementation("sdpa")
        reference = run(model, batch)
        padding_free.enable(model)
        assert_same(reference, run(model, batch), real, 1e-6)  # outside `running`: sdpa's
        inputs, packed = padding_free.pack(batch, padding_free.first_position(model.config))
        assert inputs["input_ids"].shape == (1, sum(lengths))
        assert_same(reference, run(model, inputs, packed), real, 1e-6)


def test_padding_free_trains_and_predicts_as_padded_batches_do():
    """Through the engine's own step (Steps.prepare/step) and evaluation (predict): two
    optimizer steps leave the same weights (within 1e-6), and predictions are equal."""
    from blurbflow.tasks import get_task
    from blurbflow.train.fit import Optimisation, Steps
    from blurbflow.train.optim import linear_schedule
    from blurbflow.train.predict import BatchFormat, predict
    from blurbflow.train.progress import Progress

    from model_helpers import make_options

    data = {"input_ids": [], "labels": [], "n_words": []}
    for n in LENGTHS * 2:
        row = padded_batch([n])
        data["input_ids"].append(row["input_ids"][0].tolist())
        data["labels"].append(row["labels"][0].tolist())
        data["n_words"].append(n)
    data["length"] = [len(x) for x in data["input_ids"]]
    spec, fmt = get_task("ncbidisease"), BatchFormat(pad_id=0)
    options = make_options(task="ncbidisease", batching="random", lr=1e-2)
    trained = {}
    for shapes in ("padded", "padding_free"):
        model = model_of("bert-tokens")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # Adam would scale rounding up
        opt = Optimisation(model, optimizer, linear_schedule(optimizer, 2, 0.0), CPU, None)
        policy = engine.Policy("torch", shapes)
        progress = Progress("c", 1, 2, clock=lambda: 0.0, write=lambda line: None)
        steps = Steps(opt, options, progress, policy=policy)
        for rows in ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9]):
            steps.step(data["length"], rows, lambda r: _collate(data, r), lambda loss: loss)
        preds = predict(model, spec, data, 4, fmt, CPU, "fp32", steps.shapes)
        trained[shapes] = (dict(model.named_parameters()), preds)
    (padded, preds), (free, free_preds) = trained["padded"], trained["padding_free"]
    for name in padded:
        torch.testing.assert_close(free[name], padded[name], rtol=0, atol=1e-6, msg=name)
    assert free_preds == preds and len(preds) == 10


def _collate(data, rows):
    from blurbflow.train.batching import collate

    return collate(data, rows, 0, torch.long)


# -- prefetching --------------------------------------------------------------------------------
def test_ahead_prepares_each_item_once_in_order():
    seen = []
    got = [get() for _, get in ahead(range(5), lambda i: seen.append(i) or i * i, enabled=True)]
    assert got == [0, 1, 4, 9, 16] and seen == [0, 1, 2, 3, 4]
    assert [get() for _, get in ahead([3], lambda i: -i, enabled=False)] == [-3]


VOLATILE = {"started", "finished", "wall_seconds", "peak_memory_mb", "engine"}


def test_prefetch_changes_no_bit_of_result_json(tmp_path):
    """A cell trained with the next batch prepared in a worker thread writes the result.json and
    predictions of one trained without, but for timings and the recorded setting."""
    from blurbflow.train.cell import train_cell

    from model_helpers import make_options, small_gad_project

    root = small_gad_project(tmp_path, (120, 40, 40))
    results = {}
    try:
        for prefetch in (False, True):
            engine.use({"prefetch": prefetch})
            options = make_options(
                model_source=str(root / "model"), lr=1e-3, batch_size=16, epochs=2, seed=3
            )
            out = tmp_path / f"prefetch-{prefetch}" / "result.json"
            train_cell(options, root / "encoded", root / "data/small", out)
            results[prefetch] = json.loads(out.read_text())
    finally:
        engine.use(None)
    (off, on) = results[False], results[True]
    assert (off["engine"]["prefetch"], on["engine"]["prefetch"]) == (False, True)
    assert off["attention_backend"] == "torch" and off["batch_shapes"] == "micro_batches"
    for result in (off, on):
        for record in result["epochs"]:
            record.pop("seconds")
    assert {k: v for k, v in on.items() if k not in VOLATILE} == {
        k: v for k, v in off.items() if k not in VOLATILE
    }


# -- the compiled step --------------------------------------------------------------------------
@pytest.mark.slow  # dynamo and AOT autograd trace a forward and a backward graph: ~7 s
def test_compiled_step_matches_eager():
    """torch.compile of the model (backend aot_eager: dynamo's graphs and AOT autograd's forward
    and backward, run by eager kernels; inductor's are timed on a GPU by the suite): three
    steps leave the weights of the eager steps within 1e-6."""
    from blurbflow.train.fit import Optimisation, Steps
    from blurbflow.train.optim import linear_schedule
    from blurbflow.train.progress import Progress

    from model_helpers import make_options

    data = padded_batch(LENGTHS * 2, sequence_labels=True)
    lengths = data["attention_mask"].sum(1).tolist()
    options = make_options(batching="random", lr=1e-2)
    trained = {}
    for compiled in (False, "aot_eager"):
        model = model_of("bert-sequence")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # Adam would scale rounding up
        opt = Optimisation(model, optimizer, linear_schedule(optimizer, 3, 0.0), CPU, None)
        policy = engine.Policy("torch", "padded", compiled=compiled)
        progress = Progress("c", 1, 3, clock=lambda: 0.0, write=lambda line: None)
        steps = Steps(opt, options, progress, policy=policy)
        for rows in ([0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [0, 2, 4, 6, 8]):
            steps.step(lengths, rows, lambda r: {k: v[r] for k, v in data.items()}, lambda x: x)
        trained[compiled] = dict(model.named_parameters())
    eager, compiled = trained[False], trained["aot_eager"]
    for name in eager:
        torch.testing.assert_close(compiled[name], eager[name], rtol=0, atol=1e-6, msg=name)
