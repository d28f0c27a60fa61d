"""Stateless neural-network functions, named and used like `torch.nn.functional`.

Each differentiable function is either one fused `Function` from `minitorch.ops.nn` (linear,
conv2d, max_pool2d, embedding, layer_norm, mse_loss, nll_loss, pad, ...) or a composition of
minitorch ops (cross_entropy, l1_loss, dropout, ...), following what PyTorch records, so that
`loss.grad_fn.next_functions` shows PyTorch's graph. Either way the gradient is minitorch's own.
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
    variance, then scale by weight and shift by bias. One node, NativeLayerNormBackward0."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape) :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    return _nn_ops.NativeLayerNorm.apply(input, weight, bias, shape, eps)


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
# Each loss records the graph PyTorch records: one node where PyTorch's loss is one (mse_loss,
# nll_loss, binary_cross_entropy, ...), the same ops where PyTorch composes it (l1_loss,
# cross_entropy, the weighted forms). Targets that broadcast are expanded first, as
# `torch.broadcast_tensors` does in PyTorch's functional code (ExpandBackward0).
def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average: Any, reduce: Any) -> str:
    """PyTorch's deprecated size_average/reduce flags mapped to `reduction`."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduction(reduction: str, size_average: Any = None, reduce: Any = None) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    _check_reduction(reduction)
    return reduction


def _reduce(losses: Tensor, reduction: str) -> Tensor:
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


def _broadcast(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """Input and target expanded to one shape, as `torch.broadcast_tensors` does (a tensor
    that has that shape already is returned as it is)."""
    # torch's shape rule and error message, on meta tensors (no data): "The size of tensor a
    # (3) must match the size of tensor b (4) at non-singleton dimension 1"
    meta = [torch.empty(t.shape, device="meta") for t in (input, target)]
    shape = torch.broadcast_tensors(*meta)[0].shape
    input = input if input.shape == shape else input.expand(shape)
    target = target if target.shape == shape else target.expand(shape)
    return input, target


def _weighted(losses: Tensor, weight: Tensor, reduction: str, input: Tensor) -> Tensor:
    """PyTorch's weighted regression losses: the losses times weight; "mean" divides the sum
    by the sum of the weights."""
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    losses = losses * weight
    if reduction == "mean":
        return losses.sum() / weight.sum()
    return _reduce(losses, reduction)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean (or sum, or elementwise) squared error; target broadcasts against input. One node,
    MseLossBackward0; with `weight`, (input - target)^2 * weight, composed as PyTorch does."""
    _warn_if_broadcast(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    expanded_input, expanded_target = _broadcast(input, target)
    if weight is not None:
        squared = (expanded_input - expanded_target).pow(2)
        return _weighted(squared, weight, reduction, input)
    return _nn_ops.MseLoss.apply(expanded_input, expanded_target, reduction)


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean (or sum, or elementwise) absolute error; target broadcasts against input. PyTorch
    composes it too: abs of the difference, then the reduction (times `weight` if given)."""
    _warn_if_broadcast(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    expanded_input, expanded_target = _broadcast(input, target)
    losses = (expanded_input - expanded_target).abs()
    if weight is not None:
        return _weighted(losses, weight, reduction, input)
    return _reduce(losses, reduction)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target; reduced.
    beta = 0 is the L1 loss (PyTorch calls l1_loss then); a negative beta is an error."""
    _warn_if_broadcast(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    expanded_input, expanded_target = _broadcast(input, target)
    if beta == 0.0:
        return _reduce((expanded_input - expanded_target).abs(), reduction)
    return _nn_ops.SmoothL1Loss.apply(expanded_input, expanded_target, reduction, beta)


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta), for d = input - target;
    reduced. delta must be positive. With `weight`, PyTorch weighs the elementwise losses and
    "mean" is their plain mean."""
    _warn_if_broadcast(input, target)
    _check_reduction(reduction)
    expanded_input, expanded_target = _broadcast(input, target)
    if weight is None:
        return _nn_ops.HuberLoss.apply(expanded_input, expanded_target, reduction, delta)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    losses = _nn_ops.HuberLoss.apply(expanded_input, expanded_target, "none", delta)
    return _reduce(losses * weight, reduction)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """-(y log x + (1 - y) log(1 - x)) per element, for probabilities x (input, in [0, 1]) and
    targets y of the same shape, times `weight` (it broadcasts); reduced. One node."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size."
        )
    if weight is not None:
        weight = weight.expand(torch.broadcast_shapes(target.shape, weight.shape))._data
    return _nn_ops.BinaryCrossEntropy.apply(input, target, weight, reduction)


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
    "mean" divides by the total weight of the others. One node, NllLossBackward0 (for 4-D
    input NllLoss2DBackward0; other ranks above 2 are viewed as 4-D, as PyTorch does)."""
    reduction = _reduction(reduction, size_average, reduce)
    if not isinstance(target, Tensor):
        raise TypeError(f"nll_loss: expected target to be a Tensor, got {type(target)}")
    weight = None if weight is None else weight._data
    if input.dim() <= 2:
        return _nn_ops.NllLoss.apply(input, target._data, weight, ignore_index, reduction)
    if input.dim() == 4:
        return _nn_ops.NllLoss2d.apply(input, target._data, weight, ignore_index, reduction)
    # (N, C, d1, d2, ...) as (N, C, 1, d1 * d2 * ...) and the targets as (N, 1, d1 * d2 * ...)
    n, classes = input.shape[0], input.shape[1]
    out_size = [n, *input.shape[2:]]
    if target.dim() > 0 and target.shape[0] != n:
        raise ValueError(
            f"Expected input batch_size ({n}) to match target batch_size ({target.shape[0]})."
        )
    if list(target.shape) != out_size:
        raise RuntimeError(f"Expected target size {out_size}, got {list(target.shape)}")
    rows = 1 if input.numel() else 0
    input = input.reshape(n, classes, rows, -1 if rows else 0)
    target = target.reshape(n, rows, -1 if rows else 0)
    out = _nn_ops.NllLoss2d.apply(input, target._data, weight, ignore_index, reduction)
    return out.view(out_size) if reduction == "none" else out


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
    """log_softmax over the class dim (dim 1, or 0 for an unbatched (C,) input), then nll_loss:
    NllLossBackward0 after LogSoftmaxBackward0, as PyTorch records it. `target` holds class
    indices (int64, shape (N,) or (N, d1, ...)) or class probabilities (float, input's shape).
    Label smoothing mixes in the loss against uniform targets, composed as PyTorch does."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    log_probs = _ops.log_softmax(input, class_dim)
    if target.dtype.is_floating_point:
        return _cross_entropy_with_probabilities(
            log_probs, target, weight, reduction, label_smoothing, class_dim
        )
    loss = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return loss
    uniform = _uniform_target_loss(log_probs, target, weight, ignore_index, reduction, class_dim)
    classes = input.shape[class_dim]
    smoothed = _nn_ops.MulNumber.apply(uniform, label_smoothing / classes)
    return _nn_ops.MulNumber.apply(loss, 1 - label_smoothing) + smoothed


def _class_weights_along(weight: Tensor, dim: int, ndim: int) -> Tensor:
    """The class weights shaped to broadcast along `dim` of an `ndim`-d tensor."""
    shape = [1] * ndim
    shape[dim] = weight.shape[0]
    return weight.view(shape)


def _uniform_target_loss(
    log_probs: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
    reduction: str,
    class_dim: int,
) -> Tensor:
    """Label smoothing's second term: -sum over the classes of the log-probabilities (times the
    class weights), 0 where the target is ignored, reduced like nll_loss ("mean" divides by the
    number, or the total weight, of the targets not ignored)."""
    ignored = target == ignore_index
    if weight is not None:
        log_probs = log_probs * _class_weights_along(weight, class_dim, log_probs.dim())
    # PyTorch fills in place (masked_fill_); the node is the same, and a trace accepts this one
    losses = (-log_probs.sum(class_dim)).masked_fill(ignored, 0.0)
    if reduction != "mean":
        return _reduce(losses, reduction)
    if weight is None:
        return losses.sum() / (~ignored).sum()
    target_weights = weight[target.masked_fill(ignored, 0)].masked_fill(ignored, 0.0)
    return losses.sum() / target_weights.sum()


def _cross_entropy_with_probabilities(
    log_probs: Tensor,
    target: Tensor,
    weight: Tensor | None,
    reduction: str,
    label_smoothing: float,
    class_dim: int,
) -> Tensor:
    if target.shape != log_probs.shape:
        raise RuntimeError(
            f"cross_entropy: expected target of the input's shape {list(log_probs.shape)} for "
            f"class probabilities, got {list(target.shape)}"
        )
    classes = log_probs.shape[class_dim]
    if label_smoothing > 0.0:
        target = _nn_ops.MulNumber.apply(target, 1 - label_smoothing)
        target = _nn_ops.AddNumber.apply(target, label_smoothing / classes)
    terms = log_probs * target
    if weight is not None:
        terms = terms * _class_weights_along(weight, class_dim, log_probs.dim())
    if reduction == "none":
        return -terms.sum(class_dim)
    if reduction == "sum":
        return -terms.sum()
    return _nn_ops.DivNumber.apply(-terms.sum(), log_probs.numel() // classes)


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
    reduction = _reduction(reduction, size_average, reduce)
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
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "huber_loss",
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
    "smooth_l1_loss",
    "softmax",
    "tanh",
]
