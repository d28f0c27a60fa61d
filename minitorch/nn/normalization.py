"""`LayerNorm`: normalise each sample over its last dims, then scale and shift."""

from __future__ import annotations

from typing import Any

from minitorch import creation
from minitorch.nn import functional as F
from minitorch.nn import init
from minitorch.nn.module import Module
from minitorch.nn.parameter import Parameter
from minitorch.tensor import Tensor


class LayerNorm(Module):
    """Zero mean and unit variance over the last len(normalized_shape) dims, then
    `* weight + bias` (learned, of shape normalized_shape; start at ones and zeros)."""

    def __init__(
        self,
        normalized_shape: Any,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            shape = self.normalized_shape
            self.weight = Parameter(creation.empty(shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(creation.empty(shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )
