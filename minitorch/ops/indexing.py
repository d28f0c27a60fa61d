"""Indexing: `t[...]`, `t[...] = v`, index_select and gather.

Every gather-like op has a scatter-like backward and vice versa, each a Function of its own, so
gradients of any order flow through indexing. Advanced indexing may pick an element several
times; its backward therefore adds (scatter-add), never assigns.
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.ops.broadcasting import sum_to_shape
from minitorch.ops.dims import normalize_dim
from minitorch.ops.scalars import as_tensor
from minitorch.tensor import Tensor


def _raw_index(index: Any) -> Any:
    """The index with minitorch tensors replaced by their storage (torch understands the rest)."""
    if isinstance(index, Tensor):
        if index.dim() == 0 and not (index.dtype.is_floating_point or index.dtype == torch.bool):
            return int(index.item())  # PyTorch reads a 0-d integer tensor as an int
        return index._data
    if isinstance(index, tuple):
        return tuple(_raw_index(i) for i in index)
    if isinstance(index, range):
        return torch.arange(index.start, index.stop, index.step)
    if isinstance(index, list) and any(isinstance(i, Tensor) for i in index):
        return [i._data if isinstance(i, Tensor) else i for i in index]
    return index


def _is_basic(index: Any) -> bool:
    """Ints, slices, None and Ellipsis give a view; anything else is advanced indexing."""
    items = index if isinstance(index, tuple) else (index,)
    return all(
        isinstance(i, (int, slice, type(None), type(Ellipsis))) and not isinstance(i, bool)
        for i in items
    )


def _positions(shape: torch.Size, index: Any, device: torch.device) -> torch.Tensor:
    """For every element of `t[index]`, its position in `t.reshape(-1)`."""
    return torch.arange(shape.numel(), device=device).view(shape)[index]


class Index(Function):
    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, a, index):
        ctx.shape, ctx.index = a.shape, index
        data = a._data[index]
        return a._view(data) if _is_basic(index) else Tensor._make(data)

    @staticmethod
    def backward(ctx, grad):
        positions = Tensor._make(_positions(ctx.shape, ctx.index, grad.device))
        return ScatterAddFlat.apply(grad, positions, ctx.shape), None

    @staticmethod
    def on_storage(needs, a, index):  # NOTE [Storage kernels]
        shape = a.shape

        def backward(grad):
            positions = _positions(shape, index, grad.device)
            return _scatter_add_flat(grad, positions, shape), None

        return a[index], backward


class Select(Index):
    node_name = "SelectBackward0"


class Slice(Index):
    node_name = "SliceBackward0"


class UnsqueezeIndex(Index):
    node_name = "UnsqueezeBackward0"


class Alias(Index):
    node_name = "AliasBackward0"


def _basic_node(shape: torch.Size, index: Any) -> type[Index]:
    """The node PyTorch records for basic indexing: named after the last view it applies, where
    a slice inside a tuple that keeps a whole dim applies none (`x[:, 0]` is a Select)."""
    if isinstance(index, slice):
        return Slice
    items = index if isinstance(index, tuple) else (index,)
    kind, dim = Alias, 0
    for item in items:
        if item is Ellipsis:
            dim += len(shape) - sum(1 for i in items if i is not None and i is not Ellipsis)
        elif item is None:
            kind = UnsqueezeIndex
        elif isinstance(item, int):
            kind, dim = Select, dim + 1
        else:
            # (Too many indices: any kind will do, torch raises its own error in forward.)
            if dim >= len(shape) or item.indices(shape[dim]) != (0, shape[dim], 1):
                kind = Slice
            dim += 1
    return kind


class ScatterAddFlat(Function):
    """zeros(shape), with `values` added at the flat `positions` (the backward of indexing)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, values, positions, shape):
        ctx.save_for_backward(positions)
        return Tensor._make(_scatter_add_flat(values._data, positions._data, shape))

    @staticmethod
    def backward(ctx, grad):
        (positions,) = ctx.saved_tensors
        return grad.reshape(-1)[positions], None, None


def _scatter_add_flat(values: torch.Tensor, positions: torch.Tensor, shape: torch.Size) -> Any:
    """ScatterAddFlat's forward on storage."""
    out = torch.zeros(shape.numel(), dtype=values.dtype, device=values.device)
    out.index_add_(0, positions.reshape(-1), values.reshape(-1))
    return out.view(shape)


class IndexPut(Function):
    """`a` with `a[index]` replaced by `value` (what `a[index] = value` computes)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, a, value, index):
        ctx.index, ctx.value_shape = index, value.shape
        out = a._data.clone()
        out[index] = value._data
        return Tensor._make(out)

    @staticmethod
    def backward(ctx, grad):
        need_a, need_value, _ = ctx.needs_input_grad
        grad_a = grad_value = None
        if need_a:
            kept = torch.ones(grad.shape, dtype=grad.dtype, device=grad.device)
            kept[ctx.index] = 0  # overwritten elements get no gradient
            grad_a = grad * Tensor._make(kept)
        if need_value:
            grad_value = sum_to_shape(Index.apply(grad, ctx.index), ctx.value_shape)
        return grad_a, grad_value, None


# index_select, gather and their backward ops receive `index` as torch storage, not as a minitorch
# tensor: an index is not differentiable, so (as in PyTorch) the node gets no edge for it.
class IndexSelect(Function):
    node_name = "IndexSelectBackward0"
    saved_names = ("index",)

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.shape, ctx.dim = a.shape, dim
        ctx.save_for_backward(Tensor._make(index))
        return Tensor._make(a._data.index_select(dim, index))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return IndexAdd.apply(grad, ctx.dim, index._data, ctx.shape), None, None


class IndexAdd(Function):
    """zeros(shape) with slices of `values` added at `index` along `dim`."""

    node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, values, dim, index, shape):
        ctx.dim = dim
        ctx.save_for_backward(Tensor._make(index))
        out = torch.zeros(shape, dtype=values.dtype, device=values.device)
        return Tensor._make(out.index_add_(dim, index, values._data))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return IndexSelect.apply(grad, ctx.dim, index._data), None, None, None


class Gather(Function):
    node_name = "GatherBackward0"
    saved_names = ("index",)

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.shape, ctx.dim = a.shape, dim
        ctx.save_for_backward(Tensor._make(index))
        return Tensor._make(a._data.gather(dim, index))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return ScatterAdd.apply(grad, ctx.dim, index._data, ctx.shape), None, None


class ScatterAdd(Function):
    """zeros(shape) with `values` added where `index` points along `dim` (gather's backward)."""

    node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, values, dim, index, shape):
        ctx.dim = dim
        ctx.save_for_backward(Tensor._make(index))
        out = torch.zeros(shape, dtype=values.dtype, device=values.device)
        return Tensor._make(out.scatter_add_(dim, index, values._data))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return Gather.apply(grad, ctx.dim, index._data), None, None, None


# Public functions --------------------------------------------------------------------------------
def getitem(a: Tensor, index: Any) -> Tensor:
    raw = _raw_index(index)
    if _is_basic(raw):
        return _basic_node(a.shape, raw).apply(a, raw)
    return Index.apply(a, raw)


def setitem(a: Tensor, index: Any, value: Any) -> None:
    """`a[index] = value`. A basic index copies into the view `a[index]` (recorded as
    CopySlices, as in PyTorch); an advanced index is an index_put (IndexPutBackward0)."""
    from minitorch.ops.inplace import inplace

    value = as_tensor(value, a)
    raw = _raw_index(index)
    if _is_basic(raw):
        getitem(a, raw).copy_(value)
    else:
        inplace(a, lambda current, v: IndexPut.apply(current, v, raw), value)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The slices of `input` along `dim` at the positions in `index` (a 1-D int tensor)."""
    return IndexSelect.apply(input, normalize_dim(dim, input.dim()), index._data)


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """`out[i][j] = input[index[i][j]][j]` for dim 0 (and likewise for other dims)."""
    return Gather.apply(input, normalize_dim(dim, input.dim()), index._data)


def scatter_add(values: Tensor, dim: int, index: Tensor, shape: torch.Size) -> Tensor:
    return ScatterAdd.apply(values, dim, index._data, shape)
