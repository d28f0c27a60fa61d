"""Reductions and the softmax family. Backward puts the reduced dims back (as size 1) and lets
broadcasting spread the gradient over them."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.ops.dims import normalize_dim, normalize_dims, unsqueeze_dims
from minitorch.ops.scalars import number_storage
from minitorch.tensor import Tensor

MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])


def _new(data: torch.Tensor) -> Tensor:
    return Tensor._make(data)


# What `_expand_back` reads from a reduction's ctx, for the storage kernels (which have none).
_Reduced = namedtuple("_Reduced", ["shape", "dims", "keepdim"])


def _expand_back(grad: Tensor, ctx: Any) -> Tensor:
    """The gradient of a reduction over `ctx.dims`, reshaped to broadcast over the input.
    Works on storage too."""
    if not ctx.keepdim:
        grad = unsqueeze_dims(grad, ctx.dims, len(ctx.shape))
    return grad.expand(ctx.shape)


def _count(shape: torch.Size, dims: tuple[int, ...]) -> int:
    """How many elements each result element reduces (a 0-d input reduces over dim 0 too)."""
    return math.prod(shape[d] for d in dims if d < len(shape))


def _two_over(divisor: int) -> float:
    """2 / (N - correction), the factor of var's gradient, as PyTorch computes it: the divisor
    is not clamped at 0 (as the forward's is), and 2 / 0 is inf."""
    return 2.0 / divisor if divisor != 0 else math.inf


class Sum(Function):
    node_name = "SumBackward1"

    @staticmethod
    def forward(ctx, a, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        if not dims:  # a 0-d tensor
            return _new(a._data.sum(dtype=dtype))
        return _new(a._data.sum(dim=dims, keepdim=keepdim, dtype=dtype))

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx), None, None, None

    @staticmethod
    def on_storage(needs, a, dims, keepdim, dtype):  # NOTE [Storage kernels]
        out = a.sum(dtype=dtype) if not dims else a.sum(dim=dims, keepdim=keepdim, dtype=dtype)
        reduced = _Reduced(a.shape, dims, keepdim)
        return out, lambda grad: (_expand_back(grad, reduced), None, None, None)


class SumAll(Sum):
    node_name = "SumBackward0"


class Mean(Function):
    node_name = "MeanBackward1"

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        ctx.count = _count(a.shape, dims)
        if not dims:
            return _new(a._data.mean())
        return _new(a._data.mean(dim=dims, keepdim=keepdim))

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx) / ctx.count, None, None

    @staticmethod
    def on_storage(needs, a, dims, keepdim):  # NOTE [Storage kernels]
        out = a.mean() if not dims else a.mean(dim=dims, keepdim=keepdim)
        reduced, count = _Reduced(a.shape, dims, keepdim), _count(a.shape, dims)

        def backward(grad):
            spread = _expand_back(grad, reduced)
            return spread / number_storage(count, spread), None, None

        return out, backward


class MeanAll(Mean):
    node_name = "MeanBackward0"


class Amax(Function):
    """amax/amin, and max/min of the whole tensor: the gradient is shared evenly among ties."""

    node_name = "AmaxBackward0"
    saved_names = ("self", "result")
    largest = True

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        reduce = torch.amax if type(ctx)._forward_cls.largest else torch.amin
        result = _new(reduce(a._data, dim=dims, keepdim=keepdim))
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        if not ctx.keepdim:
            result = unsqueeze_dims(result, ctx.dims, len(ctx.shape))
        winners = (a == result).to(grad.dtype)
        share = winners / winners.sum(dim=ctx.dims, keepdim=True)
        return _expand_back(grad, ctx) * share, None, None


class Amin(Amax):
    node_name = "AminBackward0"
    largest = False


class MaxAll(Amax):
    node_name = "MaxBackward1"


class MinAll(Amax):
    node_name = "MinBackward1"
    largest = False


class MaxDim(Function):
    """max/min along one dim: values and indices; the gradient goes to the index taken."""

    node_name = "MaxBackward0"
    saved_names = ("indices",)
    largest = True

    @staticmethod
    def forward(ctx, a, dim, keepdim):
        reduce = torch.max if type(ctx)._forward_cls.largest else torch.min
        values, indices = reduce(a._data, dim=dim, keepdim=keepdim)
        ctx.shape, ctx.dim, ctx.keepdim = a.shape, dim, keepdim
        indices = _new(indices)
        ctx.save_for_backward(indices)
        return _new(values), indices

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        if not ctx.keepdim and len(ctx.shape) > 0:
            grad, indices = grad.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        from minitorch.ops.indexing import scatter_add

        return scatter_add(grad, ctx.dim, indices, ctx.shape), None, None


class MinDim(MaxDim):
    node_name = "MinBackward0"
    largest = False


class Norm(Function):
    node_name = "LinalgVectorNormBackward0"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a, p, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim, ctx.p = a.shape, dims, keepdim, p
        result = _new(torch.linalg.vector_norm(a._data, ord=p, dim=dims, keepdim=keepdim))
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        p = ctx.p
        if not ctx.keepdim:
            result = unsqueeze_dims(result, ctx.dims, len(ctx.shape))
        grad = _expand_back(grad, ctx)
        sign = _new(a._data.sign())
        if p == 1:
            return grad * sign, None, None, None
        if p == math.inf:
            winners = (a.abs() == result).to(grad.dtype)
            share = winners / winners.sum(dim=ctx.dims, keepdim=True)
            return grad * sign * share, None, None, None
        # d||a||_p / da = a * |a|^(p-2) / ||a||^(p-1), taken as 0 where the norm is 0.
        safe = where(result == 0, 1.0, result)
        local = sign * a.abs() ** (p - 1) / safe ** (p - 1)
        return grad * where(result == 0, 0.0, local), None, None, None


class Var(Function):
    node_name = "VarBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, dims, correction, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        ctx.divisor = _count(a.shape, dims) - correction
        ctx.save_for_backward(a)
        return _new(torch.var(a._data, dim=dims, correction=correction, keepdim=keepdim))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        centered = a - a.mean(dim=ctx.dims, keepdim=True)
        return _expand_back(grad, ctx) * centered * _two_over(ctx.divisor), None, None, None


class Std(Function):
    node_name = "StdBackward0"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a, dims, correction, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        ctx.divisor = _count(a.shape, dims) - correction
        result = _new(torch.std(a._data, dim=dims, correction=correction, keepdim=keepdim))
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        if not ctx.keepdim:
            result = unsqueeze_dims(result, ctx.dims, len(ctx.shape))
        centered = a - a.mean(dim=ctx.dims, keepdim=True)
        # Where the std is 0 (all values equal) PyTorch's gradient is 0, not 0 / 0.
        zero = result == 0
        local = centered * (_two_over(ctx.divisor) / 2) / where(zero, 1.0, result)
        local = where(zero, 0.0, local)
        return _expand_back(grad, ctx) * local, None, None, None


class Softmax(Function):
    node_name = "SoftmaxBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        result = _new(torch.softmax(a._data, dim))
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return result * (grad - (grad * result).sum(dim=ctx.dim, keepdim=True)), None


class LogSoftmax(Function):
    node_name = "LogSoftmaxBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        result = _new(torch.log_softmax(a._data, dim))
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad - result.exp() * grad.sum(dim=ctx.dim, keepdim=True), None


class LogSumExp(Function):
    node_name = "LogsumexpBackward0"
    saved_names = ("self", "result")

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = a.shape, dims, keepdim
        result = _new(torch.logsumexp(a._data, dim=dims, keepdim=keepdim))
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        if not ctx.keepdim:
            result = unsqueeze_dims(result, ctx.dims, len(ctx.shape))
        return _expand_back(grad, ctx) * (a - result).exp(), None, None


class ArgReduce(Function):
    @staticmethod
    def forward(ctx, name, a, dim, keepdim):
        return _new(getattr(torch, name)(a._data, dim=dim, keepdim=keepdim))


# Public functions --------------------------------------------------------------------------------
# Parameter names are PyTorch's (`torch.sum(input=x, dim=0)` works).
def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001, A002
    """The sum over `dim` (an int, a tuple of ints, or None for all elements)."""
    if dtype is None and not (input.dtype.is_floating_point or input.dtype.is_complex):
        dtype = torch.int64  # PyTorch sums integers and bools as int64
    dims = normalize_dims(dim, input.dim())
    if dim is None:
        return SumAll.apply(input, dims, False, dtype)
    return Sum.apply(input, dims, keepdim, dtype)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """The mean over `dim` (None: all elements). `dtype` casts the input first."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {str(input.dtype).removeprefix('torch.').capitalize()}"
        )
    dims = normalize_dims(dim, input.dim())
    if dim is None:
        return MeanAll.apply(input, dims, False)
    return Mean.apply(input, dims, keepdim)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001, A002
    """`max(input)`: the largest value; `max(input, dim)`: (values, indices); `max(input,
    other)` with a tensor `other`: the elementwise maximum."""
    if isinstance(dim, Tensor):
        from minitorch.ops.elementwise import maximum

        return maximum(input, dim)
    if dim is None:
        return MaxAll.apply(input, tuple(range(input.dim())), False)
    return MaxResult(*MaxDim.apply(input, normalize_dim(dim, input.dim()), keepdim))


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001, A002
    """`min(input)`, `min(input, dim)` or `min(input, other)`, as `max`."""
    if isinstance(dim, Tensor):
        from minitorch.ops.elementwise import minimum

        return minimum(input, dim)
    if dim is None:
        return MinAll.apply(input, tuple(range(input.dim())), False)
    return MinResult(*MinDim.apply(input, normalize_dim(dim, input.dim()), keepdim))


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:  # noqa: A002
    return Amax.apply(input, normalize_dims(dim, input.dim()), keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:  # noqa: A002
    return Amin.apply(input, normalize_dims(dim, input.dim()), keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return ArgReduce.apply("argmax", input, dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return ArgReduce.apply("argmin", input, dim, keepdim)


def norm(input: Tensor, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """The vector p-norm over `dim` (None: all elements); "fro" is the 2-norm."""
    if p == "fro":
        p = 2
    p = math.inf if p in ("inf", float("inf")) else p
    return Norm.apply(input, p, normalize_dims(dim, input.dim()), keepdim)


def var(input: Tensor, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
        correction: int | None = None) -> Tensor:  # noqa: A002 # fmt: skip
    """The variance over `dim`, divided by N - correction (`unbiased=False`: correction 0)."""
    if correction is None:
        correction = 1 if unbiased else 0
    return Var.apply(input, normalize_dims(dim, input.dim()), correction, keepdim)


def std(input: Tensor, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
        correction: int | None = None) -> Tensor:  # noqa: A002 # fmt: skip
    """The standard deviation over `dim`, as `var`."""
    if correction is None:
        correction = 1 if unbiased else 0
    return Std.apply(input, normalize_dims(dim, input.dim()), correction, keepdim)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """exp(input) normalized to sum to 1 along `dim`. `dtype` casts the input first."""
    if dtype is not None:
        input = input.to(dtype)
    return Softmax.apply(input, normalize_dim(dim, input.dim()))


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:  # noqa: A002
    """log(softmax(input, dim)), computed stably. `dtype` casts the input first."""
    if dtype is not None:
        input = input.to(dtype)
    return LogSoftmax.apply(input, normalize_dim(dim, input.dim()))


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:  # noqa: A002
    return LogSumExp.apply(input, normalize_dims(dim, input.dim()), keepdim)


from minitorch.ops.elementwise import where  # noqa: E402
