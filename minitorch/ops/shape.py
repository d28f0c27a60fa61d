"""Shape ops: views and copies that move elements around without changing them. Backward moves
the gradient back the same way. Views share their input's storage and version counter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.ops.broadcasting import sum_to_shape
from minitorch.ops.dims import normalize_dim
from minitorch.ops.out import call_with_out
from minitorch.tensor import Tensor


def _result(a: Tensor, data: torch.Tensor) -> Tensor:
    """Wrap an op's result: a view of `a` shares its version counter, a copy gets its own."""
    if data.untyped_storage().data_ptr() == a._data.untyped_storage().data_ptr():
        return a._view(data)
    return Tensor._make(data)


class View(Function):
    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a.shape
        return a._view(a._data.view(shape))

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None

    @staticmethod
    def on_storage(needs, a, shape):  # NOTE [Storage kernels]
        shape_a = a.shape
        return a.view(shape), lambda grad: (grad.reshape(shape_a), None)


class Reshape(Function):
    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a.shape
        return _result(a, a._data.reshape(shape))

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None

    @staticmethod
    def on_storage(needs, a, shape):  # NOTE [Storage kernels]
        shape_a = a.shape
        return a.reshape(shape), lambda grad: (grad.reshape(shape_a), None)


class Squeeze(Function):
    node_name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx, a, dims):
        ctx.shape = a.shape
        data = a._data.squeeze() if dims is None else a._data.squeeze(dims)
        return a._view(data)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None

    @staticmethod
    def on_storage(needs, a, dims):  # NOTE [Storage kernels]
        shape_a = a.shape
        out = a.squeeze() if dims is None else a.squeeze(dims)
        return out, lambda grad: (grad.reshape(shape_a), None)


class SqueezeDim(Squeeze):
    node_name = "SqueezeBackward1"


class SqueezeDims(Squeeze):
    node_name = "SqueezeBackward2"


class Unsqueeze(Function):
    node_name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        return a._view(a._data.unsqueeze(dim))

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim), None

    @staticmethod
    def on_storage(needs, a, dim):  # NOTE [Storage kernels]
        return a.unsqueeze(dim), lambda grad: (grad.squeeze(dim), None)


class Permute(Function):
    node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return a._view(a._data.permute(dims))

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for position, d in enumerate(ctx.dims):
            inverse[d] = position
        return grad.permute(inverse), None


class Transpose(Function):
    node_name = "TransposeBackward0"

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return a._view(a._data.transpose(dim0, dim1))

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(*ctx.dims), None, None

    @staticmethod
    def on_storage(needs, a, dim0, dim1):  # NOTE [Storage kernels]
        return a.transpose(dim0, dim1), lambda grad: (grad.transpose(dim0, dim1), None, None)


class T(Transpose):
    node_name = "TBackward0"


class Expand(Function):
    node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, a, sizes):
        ctx.shape = a.shape
        return a._view(a._data.expand(sizes))

    @staticmethod
    def backward(ctx, grad):
        return sum_to_shape(grad, ctx.shape), None


class Repeat(Function):
    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx, a, repeats):
        ctx.shape, ctx.repeats = a.shape, repeats
        return Tensor._make(a._data.repeat(repeats))

    @staticmethod
    def backward(ctx, grad):
        # Output dim i of size r_i * s_i is viewed as (r_i, s_i); summing the r_i axes undoes it.
        padded = (1,) * (len(ctx.repeats) - len(ctx.shape)) + tuple(ctx.shape)
        interleaved = []
        for r, s in zip(ctx.repeats, padded):
            interleaved += [r, s]
        grad = grad.reshape(interleaved).sum(dim=tuple(range(0, len(interleaved), 2)))
        return grad.reshape(ctx.shape), None


class Cat(Function):
    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        ctx.dim = dim
        ctx.sizes = [t.shape[dim] for t in tensors]
        return Tensor._make(torch.cat([t._data for t in tensors], dim))

    @staticmethod
    def backward(ctx, grad):
        return (None, *grad.split(ctx.sizes, ctx.dim))

    @staticmethod
    def on_storage(needs, dim, *tensors):  # NOTE [Storage kernels]
        sizes = [t.shape[dim] for t in tensors]
        return torch.cat(tensors, dim), lambda grad: (None, *grad.split(sizes, dim))


class Stack(Function):
    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, *tensors):
        ctx.dim = dim
        return Tensor._make(torch.stack([t._data for t in tensors], dim))

    @staticmethod
    def backward(ctx, grad):
        return (None, *grad.unbind(ctx.dim))

    @staticmethod
    def on_storage(needs, dim, *tensors):  # NOTE [Storage kernels]
        return torch.stack(tensors, dim), lambda grad: (None, *grad.unbind(dim))


class Split(Function):
    node_name = "SplitBackward0"

    @staticmethod
    def forward(ctx, a, split_size, dim):
        ctx.dim = dim
        return tuple(a._view(piece) for piece in a._data.split(split_size, dim))

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.dim), None, None


class SplitWithSizes(Split):
    node_name = "SplitWithSizesBackward0"


class Unbind(Function):
    node_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        return tuple(a._view(piece) for piece in a._data.unbind(dim))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.dim), None


# Public functions --------------------------------------------------------------------------------
def view(input: Tensor, shape: Sequence[int]) -> Tensor:  # noqa: A002
    return View.apply(input, tuple(shape))


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:  # noqa: A002
    return Reshape.apply(input, tuple(shape))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:  # noqa: A002
    if input.dim() == 0:
        return reshape(input, (1,))
    start, end = normalize_dim(start_dim, input.dim()), normalize_dim(end_dim, input.dim())
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input  # nothing to merge: PyTorch returns the input itself
    shape = input.shape
    middle = 1
    for size in shape[start : end + 1]:
        middle *= size
    return reshape(input, (*shape[:start], middle, *shape[end + 1 :]))


def squeeze(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    if dim is None:
        return Squeeze.apply(input, None)
    # PyTorch names the node after the overload: squeeze(), squeeze(int), squeeze(tuple).
    kind = SqueezeDim if isinstance(dim, int) else SqueezeDims
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return kind.apply(input, tuple(normalize_dim(d, input.dim()) for d in dims))


def unsqueeze(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    return Unsqueeze.apply(input, normalize_dim(dim, input.dim() + 1))


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:  # noqa: A002
    dims = tuple(normalize_dim(d, input.dim()) for d in dims)
    if sorted(dims) != list(range(input.dim())):
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {input.dim()} is not "
            f"equal to len(dims) = {len(dims)}"
            if len(dims) != input.dim()
            else f"permute(): repeated dim in dims {list(dims)}"
        )
    return Permute.apply(input, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    return Transpose.apply(
        input, normalize_dim(dim0, input.dim()), normalize_dim(dim1, input.dim())
    )


def t(input: Tensor) -> Tensor:  # noqa: A002
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.dim()}D")
    if input.dim() < 2:
        return T.apply(input, 0, 0)
    return T.apply(input, 0, 1)


def expand(input: Tensor, sizes: Sequence[int]) -> Tensor:  # noqa: A002
    return Expand.apply(input, tuple(sizes))


def repeat(input: Tensor, repeats: Sequence[int]) -> Tensor:  # noqa: A002
    repeats = tuple(repeats)
    if len(repeats) < input.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor (repeat dims {list(repeats)}, tensor shape {list(input.shape)})"
        )
    return Repeat.apply(input, repeats)


def cat(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """The tensors joined along an existing dim. With `out=`, written into `out`."""
    if out is not None:
        return call_with_out("cat", torch.cat, out, tuple(tensors), dim)
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    return Cat.apply(normalize_dim(dim, tensors[0].dim()), *tensors)


def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """The tensors (all of one shape) joined along a new dim. With `out=`, written into `out`."""
    if out is not None:
        return call_with_out("stack", torch.stack, out, tuple(tensors), dim)
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return Stack.apply(normalize_dim(dim, tensors[0].dim() + 1), *tensors)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of `tensor` along `dim`: pieces of `split_size_or_sections` elements each (an int;
    the last piece may be smaller), or of the listed sizes."""
    dim = normalize_dim(dim, tensor.dim())
    if isinstance(split_size_or_sections, int):
        return Split.apply(tensor, split_size_or_sections, dim)
    sizes = [int(s) for s in split_size_or_sections]
    if sum(sizes) != tensor.shape[dim]:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {tensor.shape[dim]} (input "
            f"tensor's size at dimension {dim}), but got split_sizes={sizes}"
        )
    return SplitWithSizes.apply(tensor, sizes, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    size = input.shape[normalize_dim(dim, input.dim())]
    return split(input, max(-(-size // chunks), 1), dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    return Unbind.apply(input, normalize_dim(dim, input.dim()))
