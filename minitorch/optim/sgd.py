"""Stochastic gradient descent, with optional momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from minitorch.optim.optimizer import Optimizer, check_non_negative, check_unsupported
from minitorch.tensor import Tensor


class SGD(Optimizer):
    """`torch.optim.SGD`, step for step. For each parameter with gradient g:

        g = g + weight_decay * p                        (if weight_decay)
        buf = g  (first step),  buf = momentum * buf + (1 - dampening) * g  (later steps)
        g = g + momentum * buf  (nesterov)   or   g = buf   (momentum, not nesterov)
        p = p - lr * g

    `maximize=True` ascends instead (g is negated first). The momentum buffer lives in
    `state[p]['momentum_buffer']`.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_non_negative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        check_unsupported(differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,  # accepted for compatibility; one code path either way
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _update(
        self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict
    ) -> None:
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            if "momentum_buffer" not in state:
                buf = grad.clone()
                state["momentum_buffer"] = Tensor._make(buf)
            else:
                buf = state["momentum_buffer"]._data
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        param.add_(grad, alpha=-group["lr"])
