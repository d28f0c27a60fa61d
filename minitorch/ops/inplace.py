"""In-place ops, all through one mechanism: compute the result out of place, write it into the
tensor's storage, bump the version counter, and (when recording) make the result's node the
tensor's new `grad_fn`, so the graph continues from the modified tensor.

Like PyTorch:
- a leaf that requires grad cannot be modified in place while grad mode is on;
- an inference tensor (or a view of one) cannot be modified outside inference mode;
- a tensor saved for backward by an earlier op and then modified is caught at backward time
  (version counter check).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minitorch.autograd import function as _function
from minitorch.autograd import grad_mode
from minitorch.autograd.function import Function
from minitorch.tensor import Tensor


def inplace(self: Tensor, compute: Callable[..., Tensor], *args: Any) -> Tensor:
    """Make `self` hold `compute(self, *args)`; returns `self`."""
    if not grad_mode._state.inference and _of_inference_mode(self):
        # PyTorch raises the same after it has written; here nothing is written.
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can "
            "make a clone to get a normal tensor before doing inplace update.See "
            f"https://github.com/pytorch/rfcs/pull/17 for more details. (tensor of shape "
            f"{list(self.shape)})"
        )
    if _function._recorder is not None:
        # NOTE [Forward record]: the record must meet `self` before the stand-in for its old
        # value below (an alias of self), and it gets a write step at the end.
        _function._recorder.slot_of(self)
    recording = grad_mode._state.grad_enabled and (
        self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
    )
    if recording and self._base is not None:
        return _inplace_on_view(self, compute, args)
    if recording and self._requires_grad and self.grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            f"(tensor of shape {list(self.shape)}; wrap the update in minitorch.no_grad() if it "
            "is not part of the model)"
        )
    before = _old_value(self)
    result = compute(before, *args)
    _check_result(self, result)
    node = result.grad_fn if recording else None
    if node is not None:
        _keep_old_value(node, before)
    self._data.copy_(result._data)
    self._version_counter.value += 1
    if _function._recorder is not None:  # NOTE [Forward record]: a write step
        _function._recorder.wrote(self, result)
    if node is not None:
        _point_saved_result_at(node, result, self)
        self.grad_fn, self._output_nr, self._requires_grad = node, result._output_nr, True
    return self


def _of_inference_mode(tensor: Tensor) -> bool:
    """True for an inference tensor or a view of one (made in or out of inference mode)."""
    while tensor is not None:
        if tensor._inference:
            return True
        tensor = tensor._base
    return False


def _inplace_on_view(view: Tensor, compute: Callable[..., Tensor], args: tuple) -> Tensor:
    """An in-place op on a view changes its base too, so the base's graph must change as well
    (PyTorch's CopySlices): the base becomes "old base with the view's region replaced by the new
    value", and the view becomes a fresh view of that new base."""
    base, view_fn = view._base, view._view_fn
    if view_fn.multiple_outputs is not None:
        nr, op = view_fn.multiple_outputs
        raise RuntimeError(
            f"Output {nr} of {op} is a view and is being modified inplace. This view is "
            "the output of a function that returns multiple views. Such functions do not allow "
            "the output views to be modified inplace. You should replace the inplace operation "
            "by an out-of-place one."
        )
    if base._requires_grad and base.grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place "
            f"operation. (view of shape {list(view.shape)} of a leaf of shape "
            f"{list(base.shape)})"
        )
    before = _old_value(view)
    value = compute(before, *args)
    _check_result(view, value)
    if value.grad_fn is not None:
        _keep_old_value(value.grad_fn, before)
    inplace(base, lambda old_base, new: CopySlices.apply(old_base, new, view_fn), value)
    fresh = view_fn(base)
    view.grad_fn, view._output_nr = fresh.grad_fn, fresh._output_nr
    view._requires_grad = fresh._requires_grad
    return view


class CopySlices(Function):
    """`base` with the region that `view_fn` selects replaced by `value`."""

    node_name = "CopySlices"
    node_qualified_name = "torch::autograd::CopySlices"  # what PyTorch's name() returns

    @staticmethod
    def forward(ctx, base, value, view_fn):
        ctx.view_fn = view_fn
        out = Tensor._make(base._data.clone())
        view_fn(out)._data.copy_(value._data)
        return out

    @staticmethod
    def backward(ctx, grad):
        need_base, need_value, _ = ctx.needs_input_grad
        grad_base = grad_value = None
        if need_base:
            kept = Tensor._make(torch.ones_like(grad._data))
            ctx.view_fn(kept)._data.zero_()  # the overwritten region gets no gradient
            grad_base = grad * kept
        if need_value:
            grad_value = ctx.view_fn(grad)
        return grad_base, grad_value, None


def _old_value(self: Tensor) -> Tensor:
    """A stand-in for the value of `self` before the op: same storage, graph and version."""
    return Tensor._make(self._data, self.grad_fn, self._requires_grad, self._output_nr,
                        self._version_counter)  # fmt: skip


def _check_result(self: Tensor, result: Tensor) -> None:
    if result.shape != self.shape:
        raise RuntimeError(
            f"output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    if result.dtype != self.dtype and not torch.can_cast(result.dtype, self.dtype):
        raise RuntimeError(
            f"result type {_short(result.dtype)} can't be cast to the desired output type "
            f"{_short(self.dtype)}"
        )


def _keep_old_value(node: Any, before: Tensor) -> None:
    """If the op saved the old value of self (e.g. `a.mul_(b)` needs it for b's gradient), give
    it a private copy before the storage is overwritten."""
    for saved in node._saved or ():
        if saved is not None and saved.tensor is before:
            saved.tensor = Tensor._make(before._data.clone(), before.grad_fn,
                                        before._requires_grad, before._output_nr)  # fmt: skip
            saved.version = 0


def _point_saved_result_at(node: Any, result: Tensor, self: Tensor) -> None:
    """A saved result now lives in self's storage: check self's version from here on."""
    for saved in node._saved or ():
        if saved is not None and saved.output_nr is not None and saved.tensor is not None:
            saved.tensor = self.detach()
            saved.version = self._version_counter.value


def _short(dtype: torch.dtype) -> str:
    return {torch.float32: "Float", torch.float64: "Double", torch.int64: "Long",
            torch.bool: "Bool", torch.float16: "Half", torch.bfloat16: "BFloat16",
            torch.int32: "Int"}.get(dtype, str(dtype))  # fmt: skip
