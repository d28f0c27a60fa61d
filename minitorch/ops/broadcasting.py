"""The backward half of broadcasting.

Forward, a binary op broadcasts its inputs exactly as PyTorch does (torch does it on the storage).
Backward must undo it: an input that was broadcast was used once per copy, so its gradient is the
sum of the gradients of all the copies. `sum_to_shape` is that sum; every broadcasting op's
backward passes each input gradient through it.
"""

from __future__ import annotations

from collections.abc import Sequence

from minitorch.tensor import Tensor


def sum_to_shape(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Reduce a gradient of a broadcast result back to an input's `shape`: sum over the leading
    dims broadcasting added and over the dims where the input had size 1.

    `grad` is returned unchanged when it has that shape already. The sums are minitorch ops, so
    under `create_graph=True` they are recorded like the rest of the backward formula.
    """
    if grad._data.shape == shape:
        return grad
    shape = tuple(shape)
    lead = grad.dim() - len(shape)
    dims = list(range(lead))
    dims += [lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1]
    if dims:
        grad = grad.sum(dim=tuple(dims), keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad
