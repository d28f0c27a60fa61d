"""Dropout: randomly zero activations while training; the identity in eval mode.

`Dropout` zeroes single elements. `Dropout1d` and `Dropout2d` zero whole channels (feature
maps): one random draw per (sample, channel), shared by every position of that channel, which
suits convolutional features where neighbouring positions are strongly correlated. All draw
from torch's generator exactly as PyTorch does, so the same seed gives PyTorch's masks.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.nn import functional as F
from minitorch.nn.module import Module
from minitorch.tensor import Tensor


class _DropoutNd(Module):
    """What the dropout modules share: `p`, `inplace`, the range check and the repr."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p and scale the others by 1/(1-p) while
    `self.training`; pass the input through unchanged after `eval()`."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of an (N, C, L) or (C, L) input with probability p (scaling the
    others by 1/(1-p)) while `self.training`. See `dropout1d`."""

    def forward(self, input: Tensor) -> Tensor:
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of an (N, C, H, W) input with probability p (scaling the others by
    1/(1-p)) while `self.training`. See `dropout2d` (a 3-D input is read as (N, C, L))."""

    def forward(self, input: Tensor) -> Tensor:
        return dropout2d(input, self.p, self.training, self.inplace)


# ----------------------------------------------------------------------------------------------
# Channel-wise (feature) dropout
# ----------------------------------------------------------------------------------------------
class FeatureDropoutMask(Function):
    """The mask channel dropout multiplies by, shaped (N, C, 1, ...) for an input (N, C, ...):
    each entry 0 with probability p, else 1/(1-p). Drawn as ATen's feature dropout draws it
    (an empty tensor of that shape, `bernoulli_(1 - p)`, then `div_(1 - p)`). Not
    differentiable: `x` only gives the shape, dtype and device."""

    non_differentiable_args = (0,)

    @staticmethod
    def forward(ctx: Any, x: Tensor, p: float) -> Tensor:
        shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
        noise = torch.empty(shape, dtype=x.dtype, device=x.device)
        mask = Tensor._make(noise.bernoulli_(1 - p).div_(1 - p))
        ctx.mark_non_differentiable(mask)
        return mask


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """ATen's feature_dropout: the input unchanged when not dropping; `input * 0` for p=1;
    otherwise `input * mask` (MulBackward0, whose backward multiplies by the same mask)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        mask = Tensor._make(torch.zeros((), dtype=input.dtype, device=input.device))
    else:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        mask = FeatureDropoutMask.apply(input, p)
    return input.mul_(mask) if inplace else input * mask


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """`F.dropout1d`: zero whole channels (`input[i, j]`, a 1-D feature map) with probability
    p and scale the others by 1/(1-p), for an (N, C, L) or unbatched (C, L) input."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    if input.dim() == 3:
        return _feature_dropout(input, p, training, inplace)
    if inplace:  # unbatched, in place: the mask of a batch of one, without its batch dim
        if p == 0 or not training or input.numel() == 0:
            return input
        mask = FeatureDropoutMask.apply(input.unsqueeze(0), p).squeeze(0) if p < 1 else 0.0
        return input.mul_(mask)
    return _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)


def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """`F.dropout2d`: zero whole channels (`input[i, j]`, a 2-D feature map) with probability
    p and scale the others by 1/(1-p), for an (N, C, H, W) input. As in PyTorch, a 3-D input is
    treated as (N, C, L) (with a warning), and other ranks warn that they are deprecated."""
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace)
