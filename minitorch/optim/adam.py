"""Adam and AdamW: per-parameter step sizes from running averages of the gradient and its square."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from minitorch.optim.optimizer import (
    Optimizer,
    check_non_negative,
    check_unsupported,
    state_buffer,
    step_counter,
)


class Adam(Optimizer):
    """`torch.optim.Adam`, step for step. For each parameter with gradient g, at step t:

    g = g + weight_decay * p          (Adam)   or   p = p * (1 - lr * weight_decay)  (AdamW)
    m = beta1 * m + (1 - beta1) * g                    (state 'exp_avg')
    v = beta2 * v + (1 - beta2) * g * g                (state 'exp_avg_sq')
    v_max = max(v_max, v)                              (amsgrad only, 'max_exp_avg_sq')
    p = p - lr / (1 - beta1**t) * m / (sqrt(v or v_max) / sqrt(1 - beta2**t) + eps)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_non_negative(lr=lr, eps=eps)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        check_non_negative(weight_decay=weight_decay)
        check_unsupported(capturable=capturable, differentiable=differentiable, fused=fused)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,  # accepted for compatibility; one code path either way
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _update(
        self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict
    ) -> None:
        if not state:
            state["step"] = step_counter()
            state["exp_avg"] = state_buffer(param)
            state["exp_avg_sq"] = state_buffer(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = state_buffer(param)
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay = group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        step_t = state["step"]._data
        step_t += 1
        step = step_t.item()
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            max_exp_avg_sq = state["max_exp_avg_sq"]._data
            torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
            second_moment = max_exp_avg_sq
        else:
            second_moment = exp_avg_sq
        denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (`torch.optim.AdamW`; weight_decay defaults to 1e-2):
    the parameter shrinks by `lr * weight_decay` of itself before the Adam step, instead of the
    decay being added to the gradient."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
