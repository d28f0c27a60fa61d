"""RMSprop: divide each gradient by a running root mean square of recent gradients."""

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


class RMSprop(Optimizer):
    """`torch.optim.RMSprop`, step for step. For each parameter with gradient g:

    g = g + weight_decay * p                          (if weight_decay)
    s = alpha * s + (1 - alpha) * g * g               (state 'square_avg')
    a = alpha * a + (1 - alpha) * g                   (centered only, 'grad_avg')
    d = sqrt(s - a * a) + eps   (centered)   or   sqrt(s) + eps
    b = momentum * b + g / d;  p = p - lr * b         (momentum > 0, 'momentum_buffer')
    p = p - lr * g / d                                (otherwise)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay)
        check_non_negative(alpha=alpha)
        check_unsupported(capturable=capturable, differentiable=differentiable)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,  # accepted for compatibility; one code path either way
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(
        self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict
    ) -> None:
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state["step"] = step_counter()
            state["square_avg"] = state_buffer(param)
            if momentum > 0:
                state["momentum_buffer"] = state_buffer(param)
            if group["centered"]:
                state["grad_avg"] = state_buffer(param)
        if group["maximize"]:
            grad = -grad
        state["step"]._data += 1
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        square_avg = state["square_avg"]._data
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]._data
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg.add_(group["eps"])
        if momentum > 0:
            buf = state["momentum_buffer"]._data
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-group["lr"])
        else:
            param.addcdiv_(grad, avg, value=-group["lr"])
