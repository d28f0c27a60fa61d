"""Matrix products: `a @ b` for 1-D, 2-D and batched operands, broadcasting batch dims."""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.ops.broadcasting import sum_to_shape
from minitorch.ops.out import call_with_out
from minitorch.tensor import Tensor


class MatMul(Function):
    """The general case. Backward: grad_a = grad @ b^T, grad_b = a^T @ grad, with 1-D operands
    treated as a row (a) or a column (b) and broadcast batch dims summed away."""

    node_name = "MatmulBackward0"
    saved_names = ("self", "other")

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        ctx.save_for_backward(a if need_b else None, b if need_a else None)
        ctx.shapes = (a.shape, b.shape)
        ctx.layouts = (_is_transposed(a._data), _is_transposed(b._data))
        return Tensor._make(a._data @ b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _matmul_grads(grad, a, b, ctx.shapes, ctx.layouts, ctx.needs_input_grad)

    @staticmethod
    def on_storage(needs, a, b):  # NOTE [Storage kernels]
        shapes, layouts = (a.shape, b.shape), (_is_transposed(a), _is_transposed(b))
        a_kept, b_kept = (a if needs[1] else None), (b if needs[0] else None)
        return a @ b, lambda grad: _matmul_grads(grad, a_kept, b_kept, shapes, layouts, needs)


def _matmul_grads(grad: Any, a: Any, b: Any, shapes: tuple, layouts: tuple, needs: tuple) -> tuple:
    """grad_a = grad @ b^T, grad_b = a^T @ grad (None where not needed). Works on minitorch
    tensors and on storage alike."""
    shape_a, shape_b = shapes
    need_a, need_b = needs
    # Bring everything to >= 2-D: a 1-D `a` is a row, a 1-D `b` is a column.
    if len(shape_b) == 1:
        grad = grad.unsqueeze(-1)
    if len(shape_a) == 1:
        grad = grad.unsqueeze(-2)
    grad_a = grad_b = None
    if need_a:
        b2 = b.unsqueeze(-1) if len(shape_b) == 1 else b
        if _stored_transposed(layouts[0], grad, b2):
            grad_a = (b2 @ grad.transpose(-1, -2)).transpose(-1, -2)
        else:
            grad_a = grad @ b2.transpose(-1, -2)
        grad_a = _back_to(grad_a, shape_a)
    if need_b:
        a2 = a.unsqueeze(0) if len(shape_a) == 1 else a
        if _stored_transposed(layouts[1], grad, a2):
            grad_b = (grad.transpose(-1, -2) @ a2).transpose(-1, -2)
        else:
            grad_b = a2.transpose(-1, -2) @ grad
        grad_b = _back_to(grad_b, shape_b)
    return grad_a, grad_b


def _is_transposed(data: torch.Tensor) -> bool:
    """A 2-D storage laid out column by column (like `w.t()`)."""
    return data.dim() == 2 and data.stride(0) == 1 and data.stride(1) == data.shape[0] > 1


def _stored_transposed(input_transposed: bool, *operands: Tensor) -> bool:
    """Compute an input's gradient in the input's own memory layout when it is a transposed 2-D
    matrix (as PyTorch does): `w.t()`'s gradient then comes back to `w` already contiguous.
    Same numbers either way; only where they are stored differs."""
    return input_transposed and all(o.dim() == 2 for o in operands)


def _back_to(grad: Any, shape: tuple) -> Any:
    if len(shape) == 1:
        return grad.reshape(-1, shape[0]).sum(dim=0) if grad.dim() > 2 else grad.reshape(shape)
    if isinstance(grad, torch.Tensor):  # storage: the same sum as sum_to_shape's
        return grad if grad.shape == shape else grad.sum_to_size(shape)
    return sum_to_shape(grad, shape)


class Dot(MatMul):
    node_name = "DotBackward0"
    saved_names = ("self", "tensor")  # PyTorch's names: `_saved_tensor`


class Mm(MatMul):
    node_name = "MmBackward0"
    saved_names = ("self", "mat2")  # PyTorch's names: `_saved_mat2`


class Mv(MatMul):
    node_name = "MvBackward0"
    saved_names = ("self", "vec")  # PyTorch's names: `_saved_vec`


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The matrix product `input @ other`: 1-D operands are vectors, more than 2 dims are
    batches of matrices (broadcast). With `out=`, the result is written into `out`."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(
            f"matmul(): argument 'other' must be Tensor, not {type(other).__name__}"
            if isinstance(input, Tensor)
            else f"matmul(): argument 'input' must be Tensor, not {type(input).__name__}"
        )
    if out is not None:
        return call_with_out("matmul", torch.matmul, out, input, other)
    if input.dim() == 0 or other.dim() == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {input.dim()}D and "
            f"{other.dim()}D"
        )
    kind = {(1, 1): Dot, (2, 2): Mm, (2, 1): Mv}.get((input.dim(), other.dim()), MatMul)
    return kind.apply(input, other)


def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The product of two matrices (2-D only; `matmul` also takes vectors and batches). With
    `out=`, the result is written into `out`."""
    if out is not None:
        return call_with_out("mm", torch.mm, out, input, mat2)
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)
