"""In-place ops, all through one mechanism: compute the result out of place, write it into the
tensor's storage, bump the version counter, and (when recording) make the result's node the
tensor's new `grad_fn`, so the graph continues from the modified tensor.

Like PyTorch:
- a leaf that requires grad cannot be modified in place while grad mode is on;
- a tensor saved for backward by an earlier op and then modified is caught at backward time
  (version counter check).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minitorch.autograd import grad_mode
from minitorch.tensor import Tensor


def inplace(self: Tensor, compute: Callable[..., Tensor], *args: Any) -> Tensor:
    """Make `self` hold `compute(self, *args)`; returns `self`."""
    recording = grad_mode._state.grad_enabled and (
        self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)
    )
    if recording and self._requires_grad and self.grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            f"(tensor of shape {list(self.shape)}; wrap the update in minitorch.no_grad() if it "
            "is not part of the model)"
        )
    if recording and self._is_view:
        # PyTorch rewrites the graph of the viewed tensor too (CopySlices); minitorch does not,
        # so the base would silently keep a stale graph. Refuse instead of giving wrong grads.
        raise RuntimeError(
            "minitorch does not support in-place ops on a view while recording the graph (the "
            f"view has shape {list(self.shape)}): clone() the view first, or write the update "
            "out of place"
        )
    # `before` stands for the old value of self in the graph; it shares self's storage.
    before = Tensor._make(self._data, self.grad_fn, self._requires_grad, self._output_nr,
                          self._version)  # fmt: skip
    result = compute(before, *args)
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
    node = result.grad_fn if recording else None
    if node is not None:
        _keep_old_value(node, before)
    self._data.copy_(result._data)
    self._version.value += 1
    if node is not None:
        _point_saved_result_at(node, result, self)
        self.grad_fn, self._output_nr, self._requires_grad = node, result._output_nr, True
    return self


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
            saved.version = self._version.value


def _short(dtype: torch.dtype) -> str:
    return {torch.float32: "Float", torch.float64: "Double", torch.int64: "Long",
            torch.bool: "Bool", torch.float16: "Half", torch.bfloat16: "BFloat16",
            torch.int32: "Int"}.get(dtype, str(dtype))  # fmt: skip
