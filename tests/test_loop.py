"""The training loop's steps: the precision a cell gets, progress lines, losses kept on the
device until a sync, and under fp16 the gradient scaler's state in the checkpoint (a CPU
GradScaler stands in for CUDA's: the same state and arithmetic)."""

from __future__ import annotations

import math
import random
import warnings

import pytest
import torch

from blurbflow.train import checkpoint
from blurbflow.train import device as devices
from blurbflow.train.batching import collate
from blurbflow.train.checkpoint import LoopState
from blurbflow.train.fit import Optimisation, Steps
from blurbflow.train.optim import AdamW, linear_schedule
from blurbflow.train.progress import Progress

from model_helpers import make_options, tiny_classifier

DATA = {"input_ids": [[2, 5, 6, 3], [2, 7, 3], [2, 8, 9, 10, 11, 3]], "label": [0, 1, 1]}
DATA["length"] = [len(x) for x in DATA["input_ids"]]
SETTINGS = make_options(precision="fp16", batching="random", max_grad_norm=1.0)


def parts():
    model = tiny_classifier(layers=1)
    optimizer = AdamW(model.parameters(), lr=1e-3)
    return model, optimizer, linear_schedule(optimizer, 20, 0.0)


def steps_of(model, optimizer, scheduler, state=None):
    progress = Progress("c", 1, 20, clock=lambda: 0.0, write=lambda line: None)
    opt = Optimisation(model, optimizer, scheduler, torch.device("cpu"), random.Random(0))
    return Steps(opt, SETTINGS, progress, state)


def train(steps, state, n):
    for _ in range(n):
        steps.step(
            DATA["length"],
            [0, 1, 2],
            lambda rows: collate(DATA, rows, 0, torch.long),
            lambda loss: loss,
        )
        state.step += 1
        steps.sync(state)


def test_fp16_scaler_state_is_checkpointed_and_restored(monkeypatch, tmp_path):
    def scaler(precision):  # what a CUDA GPU gets for fp16; growth every 2 finite steps
        return torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)

    monkeypatch.setattr(devices, "grad_scaler", scaler)
    model, optimizer, scheduler = parts()
    steps, state = steps_of(model, optimizer, scheduler), LoopState()
    assert steps.scaler is not None and steps.scaler.get_scale() == 1024.0
    train(steps, state, 3)
    assert state.scaler is None  # read only by a forced sync: a scale read is a device sync
    steps.sync(state, force=True)  # as the loop does before every save
    assert state.scaler["scale"] == 2048.0 and state.scaler["_growth_tracker"] == 1
    shuffler = random.Random(1)
    checkpoint.save(tmp_path, "key", state, model, optimizer, scheduler, shuffler)

    model2, optimizer2, scheduler2 = parts()
    resumed = checkpoint.load(tmp_path, "key", model2, optimizer2, scheduler2, random.Random(9))
    assert resumed.scaler == state.scaler
    steps2 = steps_of(model2, optimizer2, scheduler2, resumed)
    assert steps2.scaler.get_scale() == 2048.0
    assert steps2.scaler.state_dict() == steps.scaler.state_dict()
    rng = torch.get_rng_state()  # the checkpoint's (dropout): both runs go on from it alike
    train(steps, state, 1)
    torch.set_rng_state(rng)
    train(steps2, resumed, 1)
    assert steps.scaler.get_scale() == steps2.scaler.get_scale() == 4096.0
    for a, b in zip(model.parameters(), model2.parameters(), strict=True):
        assert torch.equal(a, b)
    fresh = steps_of(*parts())  # no state: the scaler starts afresh
    assert fresh.scaler.get_scale() == 1024.0


def test_a_disabled_or_absent_scaler_leaves_no_state(tmp_path):
    model, optimizer, scheduler = parts()
    steps, state = steps_of(model, optimizer, scheduler), LoopState()
    assert steps.precision == "fp32" and steps.scaler is None  # fp16 asked, CPU: fp32
    train(steps, state, 1)
    steps.sync(state, force=True)
    assert state.scaler is None
    checkpoint.save(tmp_path, "key", state, model, optimizer, scheduler, random.Random(1))
    resumed = checkpoint.load(tmp_path, "key", *parts(), random.Random(1))
    assert resumed.scaler is None and steps_of(*parts(), resumed).scaler is None


# --- precision, progress, steps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "device", "native_bf16", "chosen"),
    [
        ("bf16", "cuda", True, "bf16"),
        ("bf16", "cuda", False, "fp16"),  # emulated bf16 is slower than fp32: fp16 + scaler
        ("fp16", "cuda", True, "fp16"),
        ("fp32", "cuda", True, "fp32"),
        ("bf16", "cpu", True, "fp32"),
        ("fp16", "cpu", False, "fp32"),
    ],
)
def test_precision_choice_follows_native_gpu_support(
    monkeypatch, requested, device, native_bf16, chosen
):
    from blurbflow.train import device as devices

    asked = []

    def is_bf16_supported(including_emulation=True):
        asked.append(including_emulation)
        return native_bf16 or including_emulation  # every CUDA GPU can emulate bf16

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
    assert devices.choose_precision(requested, torch.device(device)) == chosen
    assert all(flag is False for flag in asked)
    with pytest.raises(ValueError, match="precision: unknown 'tf32'; use one of bf16, fp16, fp32"):
        devices.choose_precision("tf32", torch.device(device))


def test_fp16_gets_a_gradient_scaler_and_the_others_none():
    from blurbflow.train import device as devices

    assert devices.grad_scaler("bf16") is None and devices.grad_scaler("fp32") is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no CUDA here: the scaler is built, disabled
        assert isinstance(devices.grad_scaler("fp16"), torch.amp.GradScaler)


def test_progress_lines_every_two_minutes_and_at_epoch_end():
    from blurbflow.train.progress import Progress

    now, lines = [1000.0], []
    progress = Progress("m/t/r/h/seed1", 2, 100, clock=lambda: now[0], write=lines.append)
    for step in range(1, 101):
        now[0] += 3.0  # 3 s a step of 32 samples
        progress.update(samples=32, losses=[0.5 if step <= 40 else 0.25])
        if progress.due():
            progress.line(1, step, 2e-5)
    assert len(lines) == 2  # at 120 s and 240 s: steps 40 and 80
    assert lines[0] == (
        "m/t/r/h/seed1: epoch 1/2 step 40/100 (40/200) loss 0.5000 lr 2e-05 10.7 samples/s "
        "elapsed 0:02:00 ETA 0:08:00"
    )
    assert "step 80/100 (80/200) loss 0.2500" in lines[1] and "ETA 0:06:00" in lines[1]
    progress.line(1, 100, 1e-5, "dev 0.7000")  # the epoch's end, whatever the clock says
    assert lines[2].startswith("m/t/r/h/seed1: epoch 1/2 step 100/100 (100/200) loss 0.2500")
    assert lines[2].endswith("ETA 0:05:00 dev 0.7000")


def test_progress_eta_of_a_resumed_run_counts_only_its_own_steps():
    from blurbflow.train.progress import Progress

    now, lines = [0.0], []
    progress = Progress("c", 3, 10, done=25, clock=lambda: now[0], write=lines.append)
    now[0] = 50.0  # 5 steps in 50 s, resumed at epoch 3 step 5
    progress.update(samples=80, losses=[1.0])
    progress.line(3, 10, 1e-5)
    assert "(30/30)" in lines[0] and "1.6 samples/s" in lines[0] and "ETA 0:00:00" in lines[0]


def test_steps_keep_losses_on_the_device_until_a_sync_and_catch_nan():
    from blurbflow.train.checkpoint import LoopState
    from blurbflow.train.fit import CHECK_STEPS, Steps
    from blurbflow.train.progress import Progress

    model = tiny_classifier(layers=1)
    opt = AdamW(model.parameters(), lr=1e-3)
    lines = []
    progress = Progress("c", 1, 8, clock=lambda: 0.0, write=lines.append)
    settings = make_options(precision="bf16", batching="bucketed", max_grad_norm=1.0)
    optimisation = Optimisation(
        model, opt, linear_schedule(opt, 8, 0.0), torch.device("cpu"), random.Random(0)
    )
    steps = Steps(optimisation, settings, progress)
    assert steps.precision == "fp32" and steps.scaler is None
    steps.pass_tokens = 0.0  # split every batch, as a wide model would
    data = {"input_ids": [[2, 5, 6, 3], [2, 7, 3], [2, 8, 9, 10, 11, 3]], "label": [0, 1, 1]}
    data["length"] = [len(x) for x in data["input_ids"]]

    def make(rows):
        return collate(data, rows, 0, torch.long)

    calls = []
    make_one = make

    def make(rows):
        calls.append(rows)
        return make_one(rows)

    state = LoopState()
    for _ in range(3):
        steps.step(data["length"], [0, 1, 2], make, lambda loss: loss)
        assert steps.sync(state) is None
    assert state.losses == [] and len(steps.pending) == 3 < CHECK_STEPS and lines == []
    assert calls[:3] == [[1], [0], [2]]  # each batch ran as 3 length-sorted micro-batches
    assert steps.sync(state, force=True) is None
    assert len(state.losses) == 3 and all(math.isfinite(v) for v in state.losses)
    steps.step(data["length"], [0, 1, 2], make, lambda loss: loss * float("nan"))
    assert steps.sync(state, force=True).startswith("loss became nan at epoch 1")


def _tagger():
    from transformers import BertForTokenClassification

    from model_helpers import tiny_config

    torch.manual_seed(0)
    return BertForTokenClassification(tiny_config(50, 2, num_labels=3, hidden_dropout_prob=0.0))


def test_word_embedding_gradient_stays_sparse_through_a_batchs_micro_batches(monkeypatch):
    """On the CPU the passes add sparse rows to the word embeddings' gradient, made dense once
    before clipping: the steps are the dense steps (to float rounding)."""
    from blurbflow.train import step as loop

    rng = random.Random(2)
    data = {"input_ids": [[2] + [rng.randint(5, 49) for _ in range(rng.randint(1, 30))]]}
    data["input_ids"] += [[2] + [rng.randint(5, 49) for _ in range(rng.randint(1, 30))]]
    data["input_ids"] *= 6
    data["labels"] = [[-100] + [rng.choice([0, 1, 2]) for _ in x[1:]] for x in data["input_ids"]]
    data["length"] = [len(x) for x in data["input_ids"]]
    settings = make_options(batching="bucketed", max_grad_norm=1.0, lr=1e-2)
    stepped = []  # the gradient's layout at each optimizer step
    real_step = devices.optimizer_step

    def optimizer_step(model, *args):
        stepped.append(model.get_input_embeddings().weight.grad.layout)
        real_step(model, *args)

    monkeypatch.setattr(devices, "optimizer_step", optimizer_step)

    def trained(sparse: bool):
        model = _tagger()
        weight, passes = model.get_input_embeddings().weight, []
        weight.register_post_accumulate_grad_hook(lambda p: passes.append(p.grad.layout))
        optimizer = AdamW(model.parameters(), lr=1e-2)
        progress = Progress("c", 1, 4, clock=lambda: 0.0, write=lambda line: None)
        schedule = linear_schedule(optimizer, 4, 0.0)
        opt = Optimisation(model, optimizer, schedule, torch.device("cpu"), None)
        with monkeypatch.context() as patch:
            if not sparse:
                patch.setattr(loop, "sparse_embeddings", lambda *args: None)
            steps = Steps(opt, settings, progress)
        assert (steps.sparse is weight) is sparse
        steps.pass_tokens = 0.0
        for _ in range(2):
            steps.step(
                data["length"],
                list(range(12)),
                lambda rows: collate(data, rows, 0, torch.long),
                lambda loss: loss,
            )
        assert len(passes) > 2 and set(passes) == {torch.sparse_coo if sparse else torch.strided}
        return model

    sparse, dense = trained(True), trained(False)
    assert stepped == [torch.strided] * 4  # dense at every optimizer step
    for (name, a), (_, b) in zip(sparse.named_parameters(), dense.named_parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6), name


def test_no_sparse_embedding_gradient_off_the_cpu_for_random_batches_or_a_tied_weight():
    from blurbflow.train.sparse import sparse_embeddings

    assert sparse_embeddings(_tagger(), torch.device("cuda"), "bucketed") is None
    assert sparse_embeddings(_tagger(), torch.device("cpu"), "random") is None
    tied = _tagger()
    tied.decoder = torch.nn.Linear(16, 50, bias=False)
    tied.decoder.weight = tied.get_input_embeddings().weight  # an output layer sharing it
    assert sparse_embeddings(tied, torch.device("cpu"), "bucketed") is None
    assert not tied.get_input_embeddings().sparse
    frozen = _tagger()
    frozen.get_input_embeddings().weight.requires_grad_(False)
    assert sparse_embeddings(frozen, torch.device("cpu"), "bucketed") is None
