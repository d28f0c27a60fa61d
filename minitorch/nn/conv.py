"""`Conv2d`: a learned 2-D convolution (cross-correlation, as in PyTorch)."""

from __future__ import annotations

import math
from typing import Any

from minitorch import creation
from minitorch.nn import functional as F
from minitorch.nn import init
from minitorch.nn.module import Module
from minitorch.nn.parameter import Parameter
from minitorch.tensor import Tensor


def _pair(value: Any) -> tuple:
    return (value, value) if isinstance(value, int) else tuple(value)


class Conv2d(Module):
    """(N, in_channels, H, W) -> (N, out_channels, H', W') with a weight of shape
    (out_channels, in_channels, kh, kw) slid with `stride`, `padding` (zeros) and `dilation`.
    Weights and bias start as PyTorch's do (kaiming_uniform_ with a=sqrt(5))."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if groups != 1:
            raise NotImplementedError("Conv2d: minitorch supports groups=1 only")
        if padding_mode != "zeros":
            raise NotImplementedError("Conv2d: minitorch supports padding_mode='zeros' only")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation = _pair(dilation)
        self.groups, self.padding_mode = groups, padding_mode
        shape = (out_channels, in_channels, *self.kernel_size)
        self.weight = Parameter(creation.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_channels * self.kernel_size[0] * self.kernel_size[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.bias is None:
            text += ", bias=False"
        return text
