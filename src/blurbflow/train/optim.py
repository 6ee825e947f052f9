"""AdamW with switchable bias correction, and the linear warm-up/decay schedule.

torch's AdamW always corrects the moment estimates; the original BERT optimizer did not, which
Tinn et al. show destabilises small-data fine-tuning. One step here is
    m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²
    with correction: m̂ = m/(1−β1ᵗ), v̂ = v/(1−β2ᵗ); without: m̂ = m, v̂ = v
    θ ← θ − lr·(m̂/(√v̂ + ε) + wd·θ)
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
    ):
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "bias_correction": bias_correction,
        }
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float64)
                    state["exp_avg"] = torch.zeros_like(param)
                    state["exp_avg_sq"] = torch.zeros_like(param)
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
        return loss


def linear_schedule(optimizer, total_steps: int, warmup_ratio: float):
    """BERT's schedule, as transformers' `get_linear_schedule_with_warmup`: the rate rises from 0
    at the first step to the peak over `warmup` steps, then falls linearly to 0."""
    warmup = int(math.floor(total_steps * warmup_ratio))

    def factor(step: int) -> float:
        if step < warmup:
            return step / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
