"""The foreach and fused kernels of blurbflow's AdamW against the per-tensor loop (the reference):
the same parameters and state after many steps, and state dicts that move between kernels."""

from __future__ import annotations

import io

import pytest
import torch

from blurbflow.train.optim import AdamW

SHAPES = [(30, 16), (16,), (16,), (16, 16), (16,), (64, 16), (6, 16), (6,)]
SOMETIMES = {2, 5}  # no gradient every third step: these tensors take fewer steps
LATE = 7  # no gradient before step 50: its state is created late
PEAK_LR = (5e-4, 1e-3)  # per group


def make_params(dtype, mixed: bool = False) -> list[torch.nn.Parameter]:
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s, generator=gen, dtype=dtype)) for s in SHAPES]
    if mixed:  # one group holding two dtypes: the foreach path buckets them apart
        params[3] = torch.nn.Parameter(params[3].detach().double())
    return params


def make_optimizer(params, kernel: str | None, bias_correction: bool) -> AdamW:
    groups = [
        {"params": params[:4], "weight_decay": 0.01},  # weights and LayerNorm
        {"params": params[4:], "lr": 1e-3, "weight_decay": 0.0, "betas": (0.8, 0.99), "eps": 1e-6},
    ]
    return AdamW(groups, lr=5e-4, eps=1e-8, bias_correction=bias_correction, kernel=kernel)


def set_grads(params, step: int, gen: torch.Generator) -> None:
    for k, p in enumerate(params):
        if (k in SOMETIMES and step % 3 == 0) or (k == LATE and step < 50):
            p.grad = None
            continue
        scale = 10.0 ** torch.randint(-4, 2, (), generator=gen).item()
        p.grad = (torch.randn(p.shape, generator=gen, dtype=torch.float64) * scale).to(p.dtype)


def run(params, optimizer, steps: int, start: int = 0, seed: int = 1) -> None:
    """`steps` steps from step `start`, each group's rate decaying linearly (as a schedule)."""
    gen = torch.Generator().manual_seed(seed)
    for step in range(start, start + steps):
        set_grads(params, step, gen)
        for group, peak in zip(optimizer.param_groups, PEAK_LR, strict=True):
            group["lr"] = peak * (1 - step / 300)
        optimizer.step()


def assert_same(params_a, opt_a, params_b, opt_b, **tol) -> None:
    """The same parameters, and the same state as the state dicts hold it (every kernel's step
    counts saved as the CPU's float64, wherever the kernel keeps them)."""
    for a, b in zip(params_a, params_b, strict=True):
        torch.testing.assert_close(a, b, **tol)
    saved_a, saved_b = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    assert saved_a.keys() == saved_b.keys()
    for index, state in saved_a.items():
        assert state.keys() == saved_b[index].keys()
        for key in state:
            torch.testing.assert_close(state[key], saved_b[index][key], **tol)
    assert all(s["step"].dtype == torch.float64 for s in saved_a.values())


TOLERANCES = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-7},
    torch.float64: {"rtol": 1e-12, "atol": 1e-15},
}


@pytest.mark.parametrize("kernel", ["foreach", "fused"])
@pytest.mark.parametrize("bias_correction", [True, False])
@pytest.mark.parametrize(
    "dtype,mixed", [(torch.float32, False), (torch.float64, False), (torch.float32, True)]
)
def test_kernel_matches_loop(kernel, dtype, mixed, bias_correction):
    ref, vec = make_params(dtype, mixed), make_params(dtype, mixed)
    opt_ref = make_optimizer(ref, kernel="loop", bias_correction=bias_correction)
    opt_vec = make_optimizer(vec, kernel=kernel, bias_correction=bias_correction)
    run(ref, opt_ref, 200)
    run(vec, opt_vec, 200)
    assert_same(ref, opt_ref, vec, opt_vec, **TOLERANCES[dtype])
    assert float(opt_ref.state[ref[2]]["step"]) == 200 - 67  # skipped every third step
    assert float(opt_ref.state[ref[LATE]]["step"]) == 150
    assert not torch.equal(ref[0], make_params(dtype)[0])  # it did move


@pytest.mark.parametrize(
    "saved_by,loaded_by",
    [("loop", "foreach"), ("foreach", "loop"), ("fused", "loop"), ("loop", "fused")],
)
def test_state_dict_moves_between_paths(saved_by, loaded_by):
    first = make_params(torch.float32)
    opt_first = make_optimizer(first, kernel=saved_by, bias_correction=True)
    run(first, opt_first, 40)
    buffer = io.BytesIO()
    torch.save(opt_first.state_dict(), buffer)
    assert all("kernel" not in g for g in opt_first.state_dict()["param_groups"])

    second = [torch.nn.Parameter(p.detach().clone()) for p in first]
    opt_second = make_optimizer(second, kernel=loaded_by, bias_correction=True)
    buffer.seek(0)
    opt_second.load_state_dict(torch.load(buffer, weights_only=True))
    assert_same(first, opt_first, second, opt_second, rtol=0, atol=0)

    run(first, opt_first, 60, start=40, seed=2)
    run(second, opt_second, 60, start=40, seed=2)
    assert_same(first, opt_first, second, opt_second, **TOLERANCES[torch.float32])


def test_default_kernel_is_torchs_fused_one_where_it_has_the_dtype(monkeypatch):
    opt = make_optimizer(make_params(torch.float32), kernel=None, bias_correction=True)
    assert opt.kernel_for(torch.device("cpu"), torch.float32) == "fused"
    assert opt.kernel_for(torch.device("cpu"), torch.float16) == "foreach"  # not a tested dtype
    assert opt.kernel_for(torch.device("cuda"), torch.float32) == "fused"
    assert opt.kernel_for(torch.device("cuda"), torch.bfloat16) == "fused"
    assert opt.kernel_for(torch.device("cuda"), torch.float64) == "foreach"
    loop = make_optimizer([], kernel="loop", bias_correction=True)
    assert loop.kernel_for(torch.device("cuda"), torch.float32) == "loop"
    with pytest.raises(ValueError, match="use one of loop, foreach, fused"):
        make_optimizer([], kernel="fast", bias_correction=True)

    calls = []
    real = torch._fused_adamw_
    monkeypatch.setattr(torch, "_fused_adamw_", lambda *a, **k: calls.append(1) or real(*a, **k))
    params = make_params(torch.float32)
    run(params, make_optimizer(params, kernel=None, bias_correction=False), 3)
    assert len(calls) == 6  # two groups, three steps
    params = make_params(torch.float32)
    run(params, make_optimizer(params, kernel="loop", bias_correction=False), 3)
    assert len(calls) == 6


@pytest.mark.parametrize("scale", [1e-3, 1e3])  # below and above the limit
def test_clip_gradients_equals_torch(scale):
    from blurbflow.train.device import clip_gradients

    ours, theirs = make_params(torch.float32), make_params(torch.float32)
    gen = torch.Generator().manual_seed(3)
    for a, b in zip(ours, theirs, strict=True):
        a.grad = torch.randn(a.shape, generator=gen) * scale
        b.grad = a.grad.clone()
    ours[1].grad = theirs[1].grad = None  # a frozen tensor
    clip_gradients(ours, 1.0)
    torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    for a, b in zip(ours, theirs, strict=True):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=0)
    total = torch.linalg.vector_norm(
        torch.stack([g.grad.norm() for g in ours if g.grad is not None])
    )
    if scale > 1:
        assert float(total) == pytest.approx(1.0, rel=1e-5)
    else:
        assert float(total) < 1.0


def test_fused_step_counts_stay_beside_the_parameters_and_save_as_the_cpus():
    """The fused kernel keeps its counts in float32 where the tensors are (on CUDA: nothing is
    read on the host), one per tensor (tensors that skipped steps have their own), and bumps
    them in place; the state dict holds float64 counts on the CPU, as the other kernels'."""
    params = make_params(torch.float32)
    opt = make_optimizer(params, kernel="fused", bias_correction=False)
    run(params, opt, 120)
    live = [opt.state[p]["step"] for p in params]
    assert {(c.dtype, c.device.type) for c in live} == {(torch.float32, "cpu")}
    assert sorted({float(c) for c in live}) == [70.0, 80.0, 120.0]
    before = [c.data_ptr() for c in live]
    run(params, opt, 1, start=120)
    assert [opt.state[p]["step"].data_ptr() for p in params] == before  # bumped in place
    saved = opt.state_dict()["state"]
    assert {(s["step"].dtype, s["step"].device.type) for s in saved.values()} == {
        (torch.float64, "cpu")
    }
    assert opt.state[params[0]]["step"].dtype == torch.float32  # saving moved nothing


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torchs_fused_adamw_matches_the_recipes_update_with_bias_correction(dtype):
    """10 steps of torch.optim.AdamW(fused=True) against blurbflow's AdamW, bias correction on:
    its default (torch's fused kernel) within 1e-7 (in fact equal), and the reference loop (the
    update as written) within 1e-7 in float64; in float32 the loop's other order of operations
    rounds θ differently by a few ulps (≈2e-6 at |θ| ≈ 4)."""
    gen = torch.Generator().manual_seed(0)
    shapes = [(40, 16), (16,), (16, 16), (3, 16)]
    start = [torch.randn(s, generator=gen, dtype=dtype) for s in shapes]
    grads = [[torch.randn(s, generator=gen, dtype=dtype) * 1e-2 for s in shapes] for _ in range(10)]
    made = {}
    for kind in ("torch", "loop", None):
        params = [torch.nn.Parameter(p.clone()) for p in start]
        settings = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-6, "weight_decay": 0.01}
        if kind == "torch":
            optimizer = torch.optim.AdamW(params, fused=True, **settings)
        else:
            optimizer = AdamW(params, bias_correction=True, kernel=kind, **settings)
        for step in grads:
            for p, g in zip(params, step, strict=True):
                p.grad = g.clone()
            optimizer.step()
        made[kind] = params
    for kind in ("loop", None) if dtype == torch.float64 else (None,):
        for ours, theirs in zip(made[kind], made["torch"], strict=True):
            assert (ours - theirs).abs().max() <= 1e-7
