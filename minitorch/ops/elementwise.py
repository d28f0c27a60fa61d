"""Elementwise ops. Binary ops broadcast like PyTorch; their backward sums the gradient back to
each input's shape (`sum_to_shape`). Every backward is written with minitorch ops, so it can be
recorded itself (`create_graph=True`)."""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.ops.broadcasting import sum_to_shape
from minitorch.ops.out import call_with_out
from minitorch.ops.scalars import as_tensor, number_storage, pair
from minitorch.tensor import Tensor


def _new(data: torch.Tensor) -> Tensor:
    return Tensor._make(data)


# Binary arithmetic ------------------------------------------------------------------------------
# Either operand may be a Python number (`x * 2`, `1 - x`): PyTorch treats it as a tensor that
# needs no gradient, and so do these Functions (`wraps_numbers`).
def _operands(a: Any, b: Any) -> tuple:
    """The storages a binary op computes with. A number on the right goes through
    `number_storage`; one on the left stays a number, because torch computes `2 / t` as
    `t.reciprocal() * 2`, which can differ from `tensor(2.) / t` in the last bit."""
    if isinstance(a, Tensor):
        ra = a._data
        return ra, (b._data if isinstance(b, Tensor) else number_storage(b, ra))
    return a, b._data


def _storage_operands(a: Any, b: Any) -> tuple:
    """`_operands` for a storage kernel, whose tensor operands are storages already."""
    if isinstance(a, torch.Tensor):
        return a, (b if isinstance(b, torch.Tensor) else number_storage(b, a))
    return a, b


def _both(grad: torch.Tensor) -> tuple:
    return grad, grad


def _shape(value: Any) -> Any:
    return value.shape if isinstance(value, Tensor) else ()


def _numbers(*values: Any) -> tuple:  # two operands
    """The operands that are Python numbers (None for tensors, which go through saved tensors)."""
    return (
        None if isinstance(values[0], Tensor) else values[0],
        None if isinstance(values[1], Tensor) else values[1],
    )


class Add(Function):
    node_name = "AddBackward0"
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b):
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            ctx.shapes = (_shape(a), _shape(b))
        ra, rb = _operands(a, b)
        return _new(ra + rb)

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (
            sum_to_shape(grad, ctx.shapes[0]) if need_a else None,
            sum_to_shape(grad, ctx.shapes[1]) if need_b else None,
        )

    @staticmethod
    def on_storage(needs, a, b):  # NOTE [Storage kernels]
        ra, rb = _storage_operands(a, b)
        return ra + rb, _both


class Sub(Function):
    node_name = "SubBackward0"
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b):
        if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]:
            ctx.shapes = (_shape(a), _shape(b))
        ra, rb = _operands(a, b)
        return _new(ra - rb)

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return (
            sum_to_shape(grad, ctx.shapes[0]) if need_a else None,
            sum_to_shape(-grad, ctx.shapes[1]) if need_b else None,
        )

    @staticmethod
    def on_storage(needs, a, b):  # NOTE [Storage kernels]
        ra, rb = _storage_operands(a, b)
        need_b = needs[1]
        return ra - rb, lambda grad: (grad, -grad if need_b else None)


class RSub(Sub):
    """number - tensor. PyTorch records rsub(tensor, number): one edge, for the tensor."""

    node_name = "RsubBackward1"
    wraps_numbers = False


class Mul(Function):
    node_name = "MulBackward0"
    saved_names = ("self", "other")
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b):
        ra, rb = _operands(a, b)
        need_a, need_b = ctx.needs_input_grad
        if need_a or need_b:
            # Save only what the other input's gradient needs.
            ctx.save_for_backward(
                a if need_b else None, b if need_a and isinstance(b, Tensor) else None
            )
            ctx.numbers = _numbers(a, b)
            ctx.shapes = (_shape(a), _shape(b))
        return _new(ra * rb)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if b is None and need_a:
            b = ctx.numbers[1]
        return (
            sum_to_shape(grad * b, ctx.shapes[0]) if need_a else None,
            sum_to_shape(grad * a, ctx.shapes[1]) if need_b else None,
        )

    @staticmethod
    def on_storage(needs, a, b):  # NOTE [Storage kernels]
        ra, rb = _storage_operands(a, b)
        keep_a, keep_b = needs[1], needs[0]  # each input's gradient needs the other input
        ra_kept, rb_kept = (ra if keep_a else None), (rb if keep_b else None)
        return ra * rb, lambda grad: (
            grad * rb_kept if keep_b else None,
            grad * ra_kept if keep_a else None,
        )


class Div(Function):
    node_name = "DivBackward0"
    saved_names = ("self", "other")
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b):
        ra, rb = _operands(a, b)
        need_a, need_b = ctx.needs_input_grad
        if need_a or need_b:
            ctx.save_for_backward(
                a if need_b and isinstance(a, Tensor) else None,
                b if isinstance(b, Tensor) else None,
            )
            ctx.numbers = _numbers(a, b)
            ctx.shapes = (_shape(a), _shape(b))
        return _new(ra / rb)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        a = ctx.numbers[0] if a is None else a
        b = ctx.numbers[1] if b is None else b
        need_a, need_b = ctx.needs_input_grad
        return (
            sum_to_shape(grad / b, ctx.shapes[0]) if need_a else None,
            sum_to_shape(-grad * a / (b * b), ctx.shapes[1]) if need_b else None,
        )

    @staticmethod
    def on_storage(needs, a, b):  # NOTE [Storage kernels]
        ra, rb = _storage_operands(a, b)
        need_a, need_b = needs
        ra_kept = ra if need_b else None

        def backward(grad):
            grad_b = None
            if need_b:  # a number `a` meets the gradient as the arithmetic ops meet numbers
                grad_b = -grad * _storage_operands(grad, ra_kept)[1] / (rb * rb)
            return (grad / rb if need_a else None), grad_b

        return ra / rb, backward


class Remainder(Function):
    """a - floor(a / b) * b: the gradient is 1 for a and -floor(a / b) for b."""

    node_name = "RemainderBackward0"
    saved_names = ("self", "other")
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b):
        ra, rb = _operands(a, b)
        if ctx.needs_input_grad[1]:
            ctx.save_for_backward(a, b)
        ctx.shapes = (_shape(a), _shape(b))
        return _new(torch.remainder(ra, rb))

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        grad_b = None
        if need_b:
            a, b = ctx.saved_tensors
            quotient = _new(torch.div(_operands(a, b)[0], b._data, rounding_mode="floor"))
            grad_b = sum_to_shape(-grad * quotient, ctx.shapes[1])
        return (sum_to_shape(grad, ctx.shapes[0]) if need_a else None), grad_b


class RemainderTensor(Remainder):
    node_name = "RemainderBackward1"  # PyTorch's name when the divisor is a tensor


class FloorDivide(Function):
    node_name = "NotImplemented"
    node_qualified_name = "torch::autograd::NotImplemented"  # PyTorch's name for this node
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b):
        ra, rb = _operands(a, b) if isinstance(a, Tensor) else (a, b._data)
        return _new(torch.floor_divide(ra, rb))

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for floor_divide is not implemented")


class Maximum(Function):
    node_name = "MaximumBackward0"
    saved_names = ("self", "other")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _new(torch.maximum(a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _split_between(grad, a, b, (a > b), ctx.needs_input_grad)


class Minimum(Function):
    node_name = "MinimumBackward0"
    saved_names = ("self", "other")

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _new(torch.minimum(a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _split_between(grad, a, b, (a < b), ctx.needs_input_grad)


def _split_between(grad: Tensor, a: Tensor, b: Tensor, a_wins: Tensor, needs: tuple) -> tuple:
    """Gradient of max/min: to the winner; split in half on ties (PyTorch's rule)."""
    share_a = a_wins.to(grad.dtype) + (a == b).to(grad.dtype) * 0.5
    return (
        sum_to_shape(grad * share_a, a.shape) if needs[0] else None,
        sum_to_shape(grad * (1 - share_a), b.shape) if needs[1] else None,
    )


# Powers ------------------------------------------------------------------------------------------
class PowScalar(Function):
    """tensor ** number"""

    node_name = "PowBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return _new(a._data**exponent)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if ctx.exponent == 0:
            return grad * 0, None
        if ctx.exponent == 2:  # the common square: skip a pow kernel
            return grad * (2 * a), None
        return grad * ctx.exponent * a ** (ctx.exponent - 1), None

    @staticmethod
    def on_storage(needs, a, exponent):  # NOTE [Storage kernels]
        def backward(grad):
            if exponent == 0:
                return grad * 0, None
            if exponent == 2:
                return grad * (a * number_storage(2, a)), None
            return grad * number_storage(exponent, grad) * a ** (exponent - 1), None

        return a**exponent, backward


class Pow(Function):
    """tensor ** tensor"""

    node_name = "PowBackward1"
    saved_names = ("self", "exponent", "result")

    @staticmethod
    def forward(ctx, a, b):
        result = _new(a._data**b._data)
        ctx.save_for_backward(a, b, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, b, result = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            grad_a = sum_to_shape(grad * b * a ** (b - 1), a.shape)
        if need_b:
            # d/db a**b = a**b * log(a); taken as 0 where a == 0 and b >= 0 (PyTorch's choice).
            zero_base = (a == 0) & (b >= 0)
            grad_b = sum_to_shape(where(zero_base, 0.0, grad * result * a.log()), b.shape)
        return grad_a, grad_b


class RPow(Function):
    """number ** tensor"""

    node_name = "PowBackward2"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, base, b):
        result = _new(torch.pow(base, b._data))
        ctx.save_for_backward(result)
        ctx.log_base = torch.log(torch.tensor(float(base), dtype=torch.float64)).item()
        ctx.zero_base = base == 0
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        grad_b = grad * result * ctx.log_base
        if ctx.zero_base:
            # 0 ** b: PyTorch takes the gradient as 0 where b >= 0 (there the result is 0 or 1)
            # instead of 0 * log(0) = nan.
            grad_b = where(result <= 1, 0.0, grad_b)
        return None, grad_b


# Unary ops ---------------------------------------------------------------------------------------
class Neg(Function):
    node_name = "NegBackward0"

    @staticmethod
    def forward(ctx, a):
        return _new(-a._data)

    @staticmethod
    def backward(ctx, grad):
        return -grad

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        return -a, lambda grad: (-grad,)


class Exp(Function):
    node_name = "ExpBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = _new(a._data.exp())
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        result = a.exp()
        return result, lambda grad: (grad * result,)


class Log(Function):
    node_name = "LogBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _new(a._data.log())

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        return a.log(), lambda grad: (grad / a,)


class Sqrt(Function):
    node_name = "SqrtBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = _new(a._data.sqrt())
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad / (2 * result)

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        result = a.sqrt()
        return result, lambda grad: (grad / (result * number_storage(2, result)),)


class Sin(Function):
    node_name = "SinBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _new(a._data.sin())

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.cos()

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        return a.sin(), lambda grad: (grad * a.cos(),)


class Cos(Function):
    node_name = "CosBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _new(a._data.cos())

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return -grad * a.sin()

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        return a.cos(), lambda grad: (-grad * a.sin(),)


class Tanh(Function):
    node_name = "TanhBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = _new(a._data.tanh())
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return TanhBackward.apply(grad, result)

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        result = a.tanh()
        return result, lambda grad: (_tanh_backward(grad, result),)


class Sigmoid(Function):
    node_name = "SigmoidBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = _new(a._data.sigmoid())
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return SigmoidBackward.apply(grad, result)

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        result = a.sigmoid()
        return result, lambda grad: (_sigmoid_backward(grad, result),)


# The same kernels as TanhBackward and SigmoidBackward below, for the storage kernels.
_tanh_backward = torch.ops.aten.tanh_backward.default
_sigmoid_backward = torch.ops.aten.sigmoid_backward.default


# The backward of tanh and sigmoid as ops of their own, as in PyTorch: one kernel instead of three
# ops in the common case, and still differentiable for create_graph.
class TanhBackward(Function):
    """grad * (1 - y^2), where y = tanh(x)."""

    node_name = "TanhBackwardBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, y):
        ctx.save_for_backward(grad, y)
        return _new(torch.ops.aten.tanh_backward(grad._data, y._data))

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        need_grad, need_y = ctx.needs_input_grad
        return (
            gg * (1 - y * y) if need_grad else None,
            gg * grad * y * -2 if need_y else None,
        )


class SigmoidBackward(Function):
    """grad * y * (1 - y), where y = sigmoid(x)."""

    node_name = "SigmoidBackwardBackward0"
    saved_names = ("grad_output", "output")

    @staticmethod
    def forward(ctx, grad, y):
        ctx.save_for_backward(grad, y)
        return _new(torch.ops.aten.sigmoid_backward(grad._data, y._data))

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        need_grad, need_y = ctx.needs_input_grad
        return (
            gg * y * (1 - y) if need_grad else None,
            gg * grad * (1 - 2 * y) if need_y else None,
        )


class Relu(Function):
    node_name = "ReluBackward0"
    saved_names = ("result",)

    @staticmethod
    def forward(ctx, a):
        result = _new(a._data.relu())
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        # result >= 0, so its sign is exactly the 0/1 mask "input was positive" (one fast kernel).
        return grad * _new(result._data.sign())

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        result = a.relu()
        return result, lambda grad: (grad * result.sign(),)


class Abs(Function):
    node_name = "AbsBackward0"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _new(a._data.abs())

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * _new(a._data.sign())

    @staticmethod
    def on_storage(needs, a):  # NOTE [Storage kernels]
        return a.abs(), lambda grad: (grad * a.sign(),)


class Clamp(Function):
    node_name = "ClampBackward1"
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, a, low, high):
        ctx.save_for_backward(a)
        ctx.bounds = (low, high)
        return _new(a._data.clamp(low, high))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        low, high = ctx.bounds
        inside = torch.ones_like(a._data, dtype=torch.bool)
        if low is not None:
            inside &= a._data >= low
        if high is not None:
            inside &= a._data <= high
        return grad * _new(inside.to(grad.dtype)), None, None


class Clone(Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, a):
        return _new(a._data.clone())

    @staticmethod
    def backward(ctx, grad):
        return grad


class ToCopy(Function):
    """A copy with another dtype and/or device; the gradient goes back the same way."""

    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, a, dtype, device):
        ctx.source = (a.dtype, a.device)
        return _new(a._data.to(dtype=dtype, device=device, copy=True))

    @staticmethod
    def backward(ctx, grad):
        dtype, device = ctx.source
        return grad.to(device).to(dtype), None, None


# Selection ---------------------------------------------------------------------------------------
class Where(Function):
    node_name = "WhereBackward0"
    saved_names = ("condition",)
    # `condition` is data, not differentiable: as in PyTorch, the node has edges for `a` and `b`
    # only. masked_fill's `mask` is the same.
    non_differentiable_args = (0,)

    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.save_for_backward(_new(condition._data))
        ctx.shapes = (a.shape, b.shape)
        return _new(torch.where(condition._data, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        _, need_a, need_b = ctx.needs_input_grad
        zero = grad * 0
        return (
            None,
            sum_to_shape(where(condition, grad, zero), ctx.shapes[0]) if need_a else None,
            sum_to_shape(where(condition, zero, grad), ctx.shapes[1]) if need_b else None,
        )


class MaskedFill(Function):
    node_name = "MaskedFillBackward0"
    saved_names = ("mask",)
    non_differentiable_args = (1,)

    @staticmethod
    def forward(ctx, a, mask, value):
        ctx.save_for_backward(_new(mask._data))
        fill = value._data if isinstance(value, Tensor) else value
        return _new(a._data.masked_fill(mask._data, fill))

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        need_a, _, need_value = ctx.needs_input_grad
        zero = grad * 0
        return (
            where(mask, zero, grad) if need_a else None,
            None,
            where(mask, grad, zero).sum() if need_value else None,
        )


class MaskedFillTensor(MaskedFill):
    """masked_fill with a 0-d tensor value (which gets a gradient), as PyTorch names it."""

    node_name = "MaskedFillBackward1"


class Fill(Function):
    node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, a, value):
        return _new(torch.full_like(a._data, value))

    @staticmethod
    def backward(ctx, grad):
        return grad * 0, None


class CopyFrom(Function):
    """The value of `source` in the shape and dtype of `a` (what `a.copy_(source)` computes)."""

    node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, a, source):
        ctx.source_meta = (source.shape, source.dtype, source.device)
        out = torch.empty_like(a._data)
        out.copy_(source._data)
        return _new(out)

    @staticmethod
    def backward(ctx, grad):
        shape, dtype, device = ctx.source_meta
        need_a, need_source = ctx.needs_input_grad
        return (
            grad * 0 if need_a else None,
            sum_to_shape(grad, shape).to(device).to(dtype) if need_source else None,
        )


class Compare(Function):
    """Comparisons and logical ops: bool results, never differentiable."""

    @staticmethod
    def forward(ctx, name, a, b):
        return _new(getattr(torch, name)(a._data, b._data))


class LogicalNot(Function):
    @staticmethod
    def forward(ctx, a):
        return _new(~a._data)


class Predicate(Function):
    """`any()`, `all()`, `isnan()`: bool results, never differentiable. (An op, not a direct
    computation on storage, so that a forward record sees it: NOTE [Forward record].)"""

    @staticmethod
    def forward(ctx, name, a):
        return _new(getattr(a._data, name)())


class DivRounded(Function):
    """`div(a, b, rounding_mode="floor" | "trunc")`: a step function, so (as in PyTorch) its
    gradient is zero for both operands."""

    node_name = "DivBackward2"
    wraps_numbers = True

    @staticmethod
    def forward(ctx, a, b, rounding_mode):
        ctx.metas = tuple(
            (x.shape, x.dtype, x.device) if isinstance(x, Tensor) else None for x in (a, b)
        )
        ra, rb = _operands(a, b)
        return _new(torch.div(ra, rb, rounding_mode=rounding_mode))

    @staticmethod
    def backward(ctx, grad):
        zeros = [
            _new(torch.zeros(meta[0], dtype=meta[1], device=meta[2])) if need else None
            for meta, need in zip(ctx.metas, ctx.needs_input_grad)
        ]
        return zeros[0], zeros[1], None


# Public functions --------------------------------------------------------------------------------
# Parameter names are PyTorch's (`torch.add(input=x, other=y)` works); tests/
# test_pytorch_fidelity_tensor.py compares them with torch's signatures.
def add(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """`input + alpha * other`, broadcasting. With `out=`, the result is written into `out`."""
    if out is not None:
        return call_with_out("add", torch.add, out, input, other, alpha=alpha)
    if alpha != 1:
        other = mul(other, alpha)
    # `2 + x` is x.add(2) in PyTorch: the tensor's edge comes first.
    return Add.apply(input, other) if isinstance(input, Tensor) else Add.apply(other, input)


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """`input - alpha * other`, broadcasting. With `out=`, the result is written into `out`."""
    if out is not None:
        return call_with_out("sub", torch.sub, out, input, other, alpha=alpha)
    if alpha != 1:
        other = mul(other, alpha)
    return Sub.apply(input, other) if isinstance(input, Tensor) else RSub.apply(input, other)


def mul(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """`input * other`, broadcasting. With `out=`, the result is written into `out`."""
    if out is not None:
        return call_with_out("mul", torch.mul, out, input, other)
    return Mul.apply(input, other) if isinstance(input, Tensor) else Mul.apply(other, input)


def div(input: Any, other: Any, *, rounding_mode: str | None = None,
        out: Tensor | None = None) -> Tensor:  # noqa: A002 # fmt: skip
    """`input / other` (true division), broadcasting. `rounding_mode="floor"` or `"trunc"`
    rounds the quotient (its gradient is zero, as in PyTorch). With `out=`, the result is
    written into `out`."""
    if out is not None:
        return call_with_out("div", torch.div, out, input, other, rounding_mode=rounding_mode)
    if rounding_mode is None:
        return Div.apply(input, other)
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    return DivRounded.apply(input, other, rounding_mode)


def tanh_backward(grad: Tensor, y: Tensor) -> Tensor:
    """grad * (1 - y^2) for y = tanh(x), as one op (torch.ops.aten.tanh_backward's contract)."""
    return TanhBackward.apply(grad, y)


def sigmoid_backward(grad: Tensor, y: Tensor) -> Tensor:
    """grad * y * (1 - y) for y = sigmoid(x), as one op (aten.sigmoid_backward's contract)."""
    return SigmoidBackward.apply(grad, y)


def remainder(input: Any, other: Any) -> Tensor:  # noqa: A002
    """`input % other` with the sign of `other` (Python's and PyTorch's rule)."""
    return (RemainderTensor if isinstance(other, Tensor) else Remainder).apply(input, other)


def floor_divide(input: Any, other: Any) -> Tensor:  # noqa: A002
    """`input // other`, rounding down. Like PyTorch, it records a node whose backward raises."""
    return FloorDivide.apply(input, other)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001, A002 (PyTorch's names)
    """`input ** exponent`; either may be a Python number."""
    if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        return PowScalar.apply(input, exponent)
    if not isinstance(input, Tensor):
        return RPow.apply(input, exponent)
    return Pow.apply(input, exponent)


def maximum(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The elementwise larger of the two (the gradient is split in half on ties)."""
    return Maximum.apply(input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The elementwise smaller of the two (the gradient is split in half on ties)."""
    return Minimum.apply(input, other)


def neg(input: Tensor) -> Tensor:  # noqa: A002
    return Neg.apply(input)


def exp(input: Tensor) -> Tensor:  # noqa: A002
    return Exp.apply(input)


def log(input: Tensor) -> Tensor:  # noqa: A002
    return Log.apply(input)


def sqrt(input: Tensor) -> Tensor:  # noqa: A002
    return Sqrt.apply(input)


def sin(input: Tensor) -> Tensor:  # noqa: A002
    return Sin.apply(input)


def cos(input: Tensor) -> Tensor:  # noqa: A002
    return Cos.apply(input)


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    return Tanh.apply(input)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return Sigmoid.apply(input)


def relu(input: Tensor) -> Tensor:  # noqa: A002
    return Relu.apply(input)


def abs(input: Tensor) -> Tensor:  # noqa: A001, A002
    return Abs.apply(input)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """`input` limited to `[min, max]` (either bound may be None, a number or a tensor)."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        result = input if min is None else maximum(input, as_tensor(min, input))
        return result if max is None else minimum(result, as_tensor(max, input))
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return Clamp.apply(input, min, max)


def clone(input: Tensor) -> Tensor:  # noqa: A002
    return Clone.apply(input)


def to_copy(a: Tensor, dtype: torch.dtype, device: torch.device) -> Tensor:
    return ToCopy.apply(a, dtype, device)


def where(condition: Tensor, input: Any, other: Any) -> Tensor:  # noqa: A002
    """`input` where `condition` is True, else `other` (numbers allowed), broadcasting."""
    if isinstance(input, Tensor):
        like = input
    elif isinstance(other, Tensor):
        like = other
    else:  # two numbers: a 0-d tensor of the default dtype on condition's device
        like = Tensor._make(torch.empty((), device=condition.device))
    return Where.apply(condition, as_tensor(input, like), as_tensor(other, like))


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:  # noqa: A002
    """`input` with `value` where `mask` (a bool tensor) is True."""
    if mask.dtype != torch.bool:
        raise RuntimeError(
            f"masked_fill only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    if isinstance(value, Tensor):
        return MaskedFillTensor.apply(input, mask, value)
    return MaskedFill.apply(input, mask, value)


def fill(a: Tensor, value: Any) -> Tensor:
    return Fill.apply(a, value)


def copy_from(a: Tensor, source: Any) -> Tensor:
    return CopyFrom.apply(a, as_tensor(source, a))


def compare(name: str, a: Any, b: Any) -> Tensor:
    return Compare.apply(name, *pair(a, b))


class WholeCompare(Function):
    """`equal(a, b)`, `allclose(a, b, ...)`: torch's answer for the whole tensors, as a 0-d bool
    tensor that the caller reads (an op and a read, so that a forward record sees both)."""

    @staticmethod
    def forward(ctx, name, a, b, *options):
        return _new(torch.tensor(getattr(torch, name)(a._data, b._data, *options)))


def whole_compare(name: str, a: Tensor, b: Tensor, *options: Any) -> bool:
    """`torch.<name>(a, b, *options)` ("equal" or "allclose") as a Python bool."""
    return WholeCompare.apply(name, a, b, *options).item()


def predicate(name: str, a: Tensor) -> Tensor:
    """`a.any()`, `a.all()` or `a.isnan()` (`name`)."""
    return Predicate.apply(name, a)


def logical(name: str, a: Tensor, b: Any = None) -> Tensor:
    if name == "not":
        return LogicalNot.apply(a)
    return Compare.apply(f"bitwise_{name}", *pair(a, b))
