"""`clip_grad_norm_`: rescale gradients so that their total norm is at most `max_norm`."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from minitorch.tensor import Tensor


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the `.grad` of `parameters` in place by min(1, max_norm / (total_norm + 1e-6)),
    where total_norm is the `norm_type`-norm of all gradients seen as one vector (inf: the
    largest absolute entry). Returns total_norm (computed before clipping). Not recorded."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grad_tensors = [p._grad for p in parameters if p._grad is not None]
    grads = [g._data for g in grad_tensors]
    norm_type = float(norm_type)
    if not grads:
        return Tensor._make(torch.tensor(0.0))
    if norm_type == float("inf"):
        norms = [g.abs().max() for g in grads]
        total = norms[0] if len(norms) == 1 else torch.max(torch.stack(norms))
    else:
        norms = [torch.linalg.vector_norm(g, norm_type) for g in grads]
        total = torch.linalg.vector_norm(torch.stack(norms), norm_type)
    if error_if_nonfinite and (total.isnan() or total.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grad_tensors:
        g._data.mul_(coef.to(g.dtype))
        g._version_counter.value += 1
    return Tensor._make(total)
