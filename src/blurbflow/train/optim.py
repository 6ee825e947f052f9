"""AdamW with switchable bias correction, and the linear warm-up/decay schedule.

torch's AdamW always corrects the moment estimates; the original BERT optimizer did not, which
Tinn et al. show destabilises small-data fine-tuning. One step here is
    m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²
    with correction: m̂ = m/(1−β1ᵗ), v̂ = v/(1−β2ᵗ); without: m̂ = m, v̂ = v
    θ ← θ − lr·(m̂/(√v̂ + ε) + wd·θ)

Two paths compute it: a loop over tensors (the reference) and `torch._foreach_*` kernels over all
of a group's tensors of one device and dtype. On a GPU the loop launches about ten kernels per
tensor per step (BERT-base: ~200 tensors), the foreach path about ten multi-tensor kernels in all.
On the CPU the loop is as fast as torch.optim.AdamW, so `foreach=None` keeps it there.
"""

from __future__ import annotations

import math

import torch


class AdamW(torch.optim.Optimizer):
    def __init__(
        self,
        params,
        lr: float,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        bias_correction: bool = True,
        foreach: bool | None = None,
    ):
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "bias_correction": bias_correction,
        }
        super().__init__(params, defaults)
        # not a group option: the state dict stays the same, so either path loads the other's
        self.foreach = foreach

    def uses_foreach(self, device: torch.device) -> bool:
        """Whether tensors on `device` take the foreach path (None: on CUDA only)."""
        return self.foreach if self.foreach is not None else device.type == "cuda"

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            buckets: dict[tuple, list[torch.Tensor]] = {}  # foreach kernels take one device/dtype
            for param in group["params"]:
                if param.grad is not None:
                    buckets.setdefault((param.device, param.dtype), []).append(param)
            for (device, _), params in buckets.items():
                if self.uses_foreach(device):
                    self._foreach(group, params)
                else:
                    self._loop(group, params)
        return loss

    def _state(self, param: torch.Tensor) -> dict:
        state = self.state[param]
        if not state:
            state["step"] = torch.zeros((), dtype=torch.float64)  # on the CPU: read without sync
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        return state

    def _loop(self, group: dict, params: list[torch.Tensor]) -> None:
        """The reference: one tensor at a time."""
        beta1, beta2 = group["betas"]
        for param in params:
            state = self._state(param)
            state["step"] += 1
            t = float(state["step"])
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(param.grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(param.grad, param.grad, value=1 - beta2)
            if group["bias_correction"]:
                denom = (exp_avg_sq / (1 - beta2**t)).sqrt_().add_(group["eps"])
                update = (exp_avg / (1 - beta1**t)).div_(denom)
            else:
                update = exp_avg / exp_avg_sq.sqrt().add_(group["eps"])
            if group["weight_decay"]:
                update.add_(param, alpha=group["weight_decay"])
            param.add_(update, alpha=-group["lr"])

    def _foreach(self, group: dict, params: list[torch.Tensor]) -> None:
        """The loop's operations in its order, each over all `params` (one device and dtype)."""
        beta1, beta2 = group["betas"]
        states = [self._state(p) for p in params]
        grads = [p.grad for p in params]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        steps = [s["step"] for s in states]
        torch._foreach_add_(steps, 1.0)
        torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        if group["bias_correction"]:
            # per tensor: a tensor without a gradient in some steps has taken fewer steps
            ts = [float(s) for s in steps]
            denom = torch._foreach_div(exp_avg_sqs, [1 - beta2**t for t in ts])
            torch._foreach_sqrt_(denom)
            torch._foreach_add_(denom, group["eps"])
            update = torch._foreach_div(exp_avgs, [1 - beta1**t for t in ts])
            torch._foreach_div_(update, denom)
        else:
            denom = torch._foreach_sqrt(exp_avg_sqs)
            torch._foreach_add_(denom, group["eps"])
            update = torch._foreach_div(exp_avgs, denom)
        del denom
        if group["weight_decay"]:
            torch._foreach_add_(update, params, alpha=group["weight_decay"])
        torch._foreach_add_(params, update, alpha=-group["lr"])


def linear_schedule(optimizer, total_steps: int, warmup_ratio: float):
    """BERT's schedule, as transformers' `get_linear_schedule_with_warmup`: the rate rises from 0
    at the first step to the peak over `warmup` steps, then falls linearly to 0."""
    warmup = int(math.floor(total_steps * warmup_ratio))

    def factor(step: int) -> float:
        if step < warmup:
            return step / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
