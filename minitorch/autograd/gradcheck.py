"""gradcheck: compare the gradients backward computes with central finite differences.

For a function f of tensors, the analytic Jacobian is built row by row from vector-Jacobian
products (one backward per output element); the numerical Jacobian perturbs each input element by
+-eps. They must agree within `atol + rtol * |numerical|`. Use float64 inputs: in float32 the
finite differences are too coarse and the check is unreliable (a warning says so).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minitorch.autograd import engine
from minitorch.autograd.grad_mode import no_grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytic and numerical Jacobians differ."""


def _outputs(fn: Callable, inputs: Sequence[Any]) -> list:
    from minitorch.tensor import Tensor

    out = fn(*inputs)
    outs = [out] if isinstance(out, Tensor) else list(out)
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _numerical_jacobian(fn: Callable, inputs: list, index: int, eps: float) -> list:
    """One Jacobian per output: shape (input numel, output numel)."""
    x = inputs[index]
    flat = x._data.view(-1) if x._data.is_contiguous() else None
    if flat is None:
        raise ValueError("gradcheck needs contiguous inputs")
    columns: list[list[torch.Tensor]] = []
    with no_grad():
        for i in range(flat.numel()):
            original = flat[i].item()
            flat[i] = original + eps
            # clone: an output may be a view of the input, which is restored below
            plus = [o._data.to(torch.float64).flatten().clone() for o in _outputs(fn, inputs)]
            flat[i] = original - eps
            minus = [o._data.to(torch.float64).flatten().clone() for o in _outputs(fn, inputs)]
            flat[i] = original
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    n_outputs = len(columns[0]) if columns else 0
    return [torch.stack([c[k] for c in columns]) for k in range(n_outputs)]


def _analytical_jacobian(fn: Callable, inputs: list, index: int) -> list:
    from minitorch.tensor import Tensor

    x = inputs[index]
    jacobians = []
    for out in _outputs(fn, inputs):
        rows = []
        for j in range(out.numel()):
            seed = torch.zeros(out.numel(), dtype=out.dtype, device=out.device)
            seed[j] = 1
            if not out.requires_grad:
                rows.append(torch.zeros(x.numel(), dtype=torch.float64))
                continue
            (g,) = engine.grad(
                out,
                x,
                Tensor._make(seed.view(out.shape)),
                retain_graph=True,
                allow_unused=True,
            )
            rows.append(
                torch.zeros(x.numel(), dtype=torch.float64)
                if g is None
                else g._data.reshape(-1).to(torch.float64).cpu()
            )
        jacobians.append(
            torch.stack(rows, dim=1) if rows else torch.zeros(x.numel(), 0, dtype=torch.float64)
        )
    return jacobians


def gradcheck(
    func: Callable,
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """True when backward's gradients of `func(*inputs)` match finite differences for every
    input that requires grad; otherwise raise GradcheckError (or return False)."""
    from minitorch.tensor import Tensor

    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype != torch.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. "
                "This check will likely fail if all the inputs are not of double precision "
                "floating point.",
                UserWarning,
                stacklevel=2,
            )
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        numerical = _numerical_jacobian(func, inputs, i, eps)
        analytical = _analytical_jacobian(func, inputs, i)
        for k, (num, ana) in enumerate(zip(numerical, analytical)):
            num = num.cpu()
            if not torch.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )
    return True
