"""Stateless neural-network functions, named and used like `torch.nn.functional`.

Each differentiable function is either one fused `Function` from `minitorch.ops.nn` (linear,
cross_entropy, conv2d, max_pool2d, embedding, dropout, pad, ...) or a composition of minitorch
ops (layer_norm, mse_loss, ...). Either way the gradient is minitorch's own.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from minitorch import ops as _ops
from minitorch.ops import nn as _nn_ops
from minitorch.tensor import Tensor

_REDUCTIONS = ("none", "mean", "sum")


# ------------------------------------------------------------------------------------------------
# Activations
# ------------------------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else _ops.relu(input)


def tanh(input: Tensor) -> Tensor:
    return _ops.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return _ops.sigmoid(input)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim())
    if dtype is not None:
        input = input.to(dtype)
    return _ops.softmax(input, dim)


def log_softmax(input: Tensor, dim: int | None = None, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along `dim`, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim())
    if dtype is not None:
        input = input.to(dtype)
    return _ops.log_softmax(input, dim)


# ------------------------------------------------------------------------------------------------
# Layers
# ------------------------------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight^T + bias, for input of shape (*, in_features) and weight of shape
    (out_features, in_features). One node (AddmmBackward0, or MmBackward0 without bias)."""
    if bias is None:
        return _nn_ops.LinearNoBias.apply(input, weight, None)
    return _nn_ops.Linear.apply(input, weight, bias)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) at the integer positions in `input` (any shape);
    the result has shape input.shape + (dim,). The `padding_idx` row receives no gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not supported by minitorch"
        )
    indices = input._data if isinstance(input, Tensor) else torch.as_tensor(input)
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {indices.type()} instead (while checking arguments for "
            "embedding)"
        )
    num = weight.shape[0]
    if indices.numel():
        low, high = (int(v) for v in torch.aminmax(indices))
        if low < 0 or high >= num:
            raise IndexError(
                f"index out of range in self (embedding of {num} rows, indices from {low} to "
                f"{high})"
            )
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num
    return _nn_ops.Embedding.apply(weight, indices, padding_idx)


def _pair(value: Any) -> tuple[int, int]:
    """An int or a 1- or 2-sequence as a pair (height, width)."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) == 1:
        return (value[0], value[0])
    return value


def _conv_padding(padding: Any, kernel: tuple, dilation: tuple, stride: tuple) -> tuple:
    if padding == "valid":
        return (0, 0)
    if padding == "same":
        if stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        if any(t % 2 for t in total):
            raise NotImplementedError(
                "conv2d: padding='same' with an even (dilated) kernel needs asymmetric padding, "
                "which minitorch does not support; pad the input with F.pad instead"
            )
        return tuple(t // 2 for t in total)
    if isinstance(padding, str):
        raise ValueError(
            f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}"
        )
    return _pair(padding)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of input (N, C, H, W) or (C, H, W) with weight (O, C, kh, kw)."""
    if groups != 1:
        raise NotImplementedError("conv2d: minitorch supports groups=1 only")
    if input.dim() not in (3, 4):
        raise RuntimeError(
            "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
            f"{list(input.shape)}"
        )
    if weight.dim() != 4:
        raise RuntimeError(
            f"conv2d: expected a 4D weight (out_channels, in_channels, kH, kW), but got weight "
            f"of size {list(weight.shape)}"
        )
    channels = input.shape[-3]
    if channels != weight.shape[1]:
        batch = [1, *input.shape] if input.dim() == 3 else list(input.shape)
        raise RuntimeError(
            f"Given groups=1, weight of size {list(weight.shape)}, expected input{batch} to have "
            f"{weight.shape[1]} channels, but got {channels} channels instead"
        )
    stride, dilation = _pair(stride), _pair(dilation)
    padding = _conv_padding(padding, tuple(weight.shape[2:]), dilation, stride)
    unbatched = input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
    out = _nn_ops.Conv2d.apply(input, weight, bias, stride, padding, dilation)
    return out.squeeze(0) if unbatched else out


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Maximum over kernel_size windows of (N, C, H, W) or (C, H, W); stride defaults to the
    kernel size. With return_indices also the flat spatial position of each maximum."""
    if input.dim() not in (3, 4):
        raise RuntimeError(
            "max_pool2d: Expected 3D or 4D (batch mode) tensor for input, but got input of "
            f"size: {list(input.shape)}"
        )
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] else _pair(stride)
    padding = _pair(padding)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise RuntimeError(
            "pad should be at most half of effective kernel size, but got pad="
            f"{padding[0]}, kernel_size={kernel[0]} and dilation={_pair(dilation)[0]}"
        )
    out, indices = _nn_ops.MaxPool2d.apply(
        input, kernel, stride, padding, _pair(dilation), ceil_mode
    )
    return (out, indices) if return_indices else out


def dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only).
    The mask comes from torch's generator: `manual_seed` makes it reproducible."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    # As in PyTorch: one mask of kept positions scaled by 1/(1-p), then a product (MulBackward0,
    # whose backward multiplies the gradient by the same mask).
    result = input * _nn_ops.DropoutMask.apply(input, p)
    return input.copy_(result) if inplace else result


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last len(normalized_shape) dims to zero mean and unit (biased)
    variance, then scale by weight and shift by bias."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape) :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    centered = input - input.mean(dims, keepdim=True)
    variance = (centered * centered).mean(dims, keepdim=True)
    out = centered / (variance + eps).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last dims: `pad` = (left, right) for the last dim, then (top, bottom) for the
    one before, and so on. Negative amounts crop. Only mode="constant" is supported."""
    if mode != "constant":
        raise NotImplementedError(f"pad: minitorch supports mode='constant' only, got '{mode}'")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2 (got {len(pad)} values)")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.dim()}"
        )
    return _nn_ops.ConstantPad.apply(input, pad, 0.0 if value is None else value)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Integer class indices -> an int64 tensor with a trailing dim of size num_classes
    (default: max index + 1) holding 1 at each index. Not differentiable."""
    if tensor.dtype != torch.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    return _nn_ops.OneHot.apply(tensor, num_classes)


# ------------------------------------------------------------------------------------------------
# Losses
# ------------------------------------------------------------------------------------------------
def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


def _warn_if_broadcast(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean (or sum, or elementwise) squared error; target broadcasts against input."""
    _warn_if_broadcast(input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Mean (or sum, or elementwise) absolute error; target broadcasts against input."""
    _warn_if_broadcast(input, target)
    return _reduce((input - target).abs(), reduction)


def _class_index_loss(
    node: type,
    input: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    label_smoothing: float,
) -> Tensor:
    _check_reduction(reduction)
    if not isinstance(target, Tensor):
        raise TypeError(f"{node.__name__}: expected target to be a Tensor, got {type(target)}")
    weight_data = None if weight is None else weight._data
    return node.apply(input, target._data, weight_data, ignore_index, reduction, label_smoothing)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """-input[n, target[n]] (times the class weight), for log-probabilities input of shape
    (N, C), (C,) or (N, C, d1, ...). Entries whose target is ignore_index count for nothing;
    "mean" divides by the total weight of the others."""
    return _class_index_loss(_nn_ops.ClassNll, input, target, weight, ignore_index, reduction, 0.0)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """log_softmax over dim 1 followed by nll_loss, fused into one node. `target` holds class
    indices (int64, shape (N,) or (N, d1, ...)) or class probabilities (float, input's shape)."""
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.dtype.is_floating_point:
        return _cross_entropy_with_probabilities(input, target, weight, reduction, label_smoothing)
    return _class_index_loss(
        _nn_ops.CrossEntropy, input, target, weight, ignore_index, reduction, label_smoothing
    )


def _cross_entropy_with_probabilities(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None,
    reduction: str,
    label_smoothing: float,
) -> Tensor:
    if target.shape != input.shape:
        raise RuntimeError(
            f"cross_entropy: expected target of the input's shape {list(input.shape)} for class "
            f"probabilities, got {list(target.shape)}"
        )
    dim = 1 if input.dim() > 1 else 0
    classes = input.shape[dim]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = log_softmax(input, dim) * target
    if weight is not None:
        shape = [1] * input.dim()
        shape[dim] = classes
        terms = terms * weight.reshape(shape)
    losses = -terms.sum(dim)
    if reduction == "mean":
        return losses.sum() / (input.numel() // classes)
    return _reduce(losses, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross-entropy of sigmoid(input) against target in [0, 1], computed stably from
    the logits. `weight` scales each element; `pos_weight` scales the positive term per class
    (it broadcasts along the last dim)."""
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})"
        )
    return _nn_ops.BinaryCrossEntropyWithLogits.apply(
        input,
        target,
        None if weight is None else weight._data,
        None if pos_weight is None else pos_weight._data,
        reduction,
    )


__all__ = [
    "binary_cross_entropy_with_logits",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "l1_loss",
    "layer_norm",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]
