"""The Functions behind `minitorch.nn.functional`: fused ops whose forward runs on storage (one
torch call where possible) and whose backward is written with minitorch ops, so that
`create_graph=True` differentiates through them."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as torch_f

from minitorch.autograd.function import Function
from minitorch.ops.broadcasting import sum_to_shape
from minitorch.ops.elementwise import Add, Div, Mul
from minitorch.ops.fused import plain_backward, storages, wrap_storages
from minitorch.ops.indexing import IndexAdd, ScatterAdd
from minitorch.tensor import Tensor


def _new(data: torch.Tensor) -> Tensor:
    return Tensor._make(data)


# A backward formula below is written once and runs on storage in a plain backward, on minitorch
# tensors under create_graph=True.
# See NOTE [Fused ops: one backward formula, two ways to run it] in ops/fused.py
# Linear -----------------------------------------------------------------------------------------
class Linear(Function):
    """y = x @ W^T + b for x of shape (*, in_features): one matrix product (addmm) over all
    leading dims. Backward: dx = dy @ W, dW = dy^T @ x, db = dy summed over the rows."""

    node_name = "AddmmBackward0"
    saved_names = ("mat1", "mat2")  # mat2 is W itself here; PyTorch saves the view W.t()

    @staticmethod
    def forward(ctx, x, weight, bias):
        need_x, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if need_x or need_w:
            ctx.save_for_backward(x if need_w else None, weight if need_x else None)
            ctx.x_shape = x._data.shape
        return _new(_linear(x._data, weight._data, None if bias is None else bias._data))

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if plain_backward():
            return wrap_storages(*_linear_grads(ctx, *storages(grad, x, weight)))
        return _linear_grads(ctx, grad, x, weight)

    @staticmethod
    def on_storage(needs, x, weight, bias):  # NOTE [Storage kernels]
        ctx = SimpleNamespace(needs_input_grad=needs, x_shape=x.shape)
        x_kept, weight_kept = (x if needs[1] else None), (weight if needs[0] else None)
        out = _linear(x, weight, bias)
        return out, lambda grad: _linear_grads(ctx, grad, x_kept, weight_kept)


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x @ W^T + b on storage, as one addmm over the rows of all leading dims."""
    # torch's own check names the shapes: "mat1 and mat2 shapes cannot be multiplied ..."
    rows = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    out = rows @ weight.t() if bias is None else torch.addmm(bias, rows, weight.t())
    if x.dim() != 2:
        out = out.reshape(*x.shape[:-1], weight.shape[0])
    return out


def _linear_grads(ctx, grad, x, weight) -> tuple:
    need_x, need_w, need_b = ctx.needs_input_grad
    rows = grad.reshape(-1, grad.shape[-1]) if grad.dim() != 2 else grad
    grad_x = grad_w = grad_b = None
    if need_x:
        grad_x = (rows @ weight).reshape(ctx.x_shape)
    if need_w:
        x_rows = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
        grad_w = rows.t() @ x_rows
    if need_b:
        grad_b = rows.sum(0)
    return grad_x, grad_w, grad_b


class LinearNoBias(Linear):
    node_name = "MmBackward0"
    saved_names = ("self", "mat2")


# Losses -----------------------------------------------------------------------------------------
# A loss that PyTorch records as one node is one Function here, named like PyTorch's node; the
# losses PyTorch composes from other ops (cross_entropy, l1_loss) are composed the same way in
# nn/functional.py. Forward is torch's own loss on storage, so its checks and messages are
# PyTorch's. Targets of class indices and class weights arrive as storage: they are constants
# of the loss (no gradient, no edge), as they are for torch's node.
def _per_element(grad, reduction: str, numel: int):
    """The upstream gradient of each element of a loss reduced by `reduction`: `grad` itself
    for "none" and "sum" (it broadcasts), grad / numel for "mean"."""
    return grad / numel if reduction == "mean" else grad


def _difference_grads(needs: tuple, reduction: str, grad, slope) -> tuple:
    """Gradients of a loss of d = input - target, element by element, given slope = dloss/dd:
    slope times the upstream gradient for the input, the negative of that for the target."""
    grad_input = slope * _per_element(grad, reduction, slope.numel())
    return (grad_input if needs[0] else None), (-grad_input if needs[1] else None)


def _difference_backward(ctx, grad, slope) -> tuple:
    """The backward of MseLoss, SmoothL1Loss and HuberLoss: `slope(input, target, parameter)`
    on storage in a plain backward, on minitorch tensors under create_graph=True."""
    x, y = ctx.saved_tensors
    needs, reduction, parameter = ctx.needs_input_grad, ctx.reduction, ctx.parameter
    if plain_backward():
        grad, x, y = storages(grad, x, y)
        return wrap_storages(*_difference_grads(needs, reduction, grad, slope(x, y, parameter)))
    return _difference_grads(needs, reduction, grad, slope(x, y, parameter))


def _mse_slope(x, y, _):
    return (x - y) * 2


def _smooth_l1_slope(x, y, beta):
    # d / beta inside [-beta, beta], sign(d) outside: clamp(d, -beta, beta) / beta
    return (x - y).clamp(-beta, beta) / beta


def _huber_slope(x, y, delta):
    # d inside [-delta, delta], delta * sign(d) outside
    return (x - y).clamp(-delta, delta)


class MseLoss(Function):
    """(input - target)^2 per element, reduced: one node, as in PyTorch. Input and target have
    one shape (`functional.mse_loss` expands them first, as PyTorch does). Backward:
    2 (input - target) times the upstream gradient (/ numel for "mean"), negated for target."""

    node_name = "MseLossBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, x, y, reduction):
        ctx.save_for_backward(x, y)
        ctx.reduction, ctx.parameter = reduction, None
        return _new(torch_f.mse_loss(x._data, y._data, reduction=reduction))

    @staticmethod
    def backward(ctx, grad):
        return (*_difference_backward(ctx, grad, _mse_slope), None)

    @staticmethod
    def on_storage(needs, x, y, reduction):  # NOTE [Storage kernels]
        out = torch_f.mse_loss(x, y, reduction=reduction)

        def backward(grad):
            return (*_difference_grads(needs, reduction, grad, _mse_slope(x, y, None)), None)

        return out, backward


class SmoothL1Loss(Function):
    """For d = input - target: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; reduced.
    beta > 0 (`functional.smooth_l1_loss` sends beta = 0 to l1_loss, as PyTorch does)."""

    node_name = "SmoothL1LossBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, x, y, reduction, beta):
        ctx.save_for_backward(x, y)
        ctx.reduction, ctx.parameter = reduction, beta
        return _new(torch_f.smooth_l1_loss(x._data, y._data, reduction=reduction, beta=beta))

    @staticmethod
    def backward(ctx, grad):
        return (*_difference_backward(ctx, grad, _smooth_l1_slope), None, None)

    @staticmethod
    def on_storage(needs, x, y, reduction, beta):  # NOTE [Storage kernels]
        out = torch_f.smooth_l1_loss(x, y, reduction=reduction, beta=beta)

        def backward(grad):
            slope = _smooth_l1_slope(x, y, beta)
            return (*_difference_grads(needs, reduction, grad, slope), None, None)

        return out, backward


class HuberLoss(Function):
    """For d = input - target: 0.5 d^2 where |d| <= delta, else delta (|d| - 0.5 delta);
    reduced. It is delta times the smooth L1 loss with beta = delta."""

    node_name = "HuberLossBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, x, y, reduction, delta):
        ctx.save_for_backward(x, y)
        ctx.reduction, ctx.parameter = reduction, delta
        return _new(torch_f.huber_loss(x._data, y._data, reduction=reduction, delta=delta))

    @staticmethod
    def backward(ctx, grad):
        return (*_difference_backward(ctx, grad, _huber_slope), None, None)

    @staticmethod
    def on_storage(needs, x, y, reduction, delta):  # NOTE [Storage kernels]
        out = torch_f.huber_loss(x, y, reduction=reduction, delta=delta)

        def backward(grad):
            slope = _huber_slope(x, y, delta)
            return (*_difference_grads(needs, reduction, grad, slope), None, None)

        return out, backward


class BinaryCrossEntropy(Function):
    """-w (y log x + (1 - y) log(1 - x)) per element, for probabilities x and targets y in
    [0, 1] (torch clamps each log at -100), reduced. Backward, PyTorch's formulas:
    w (x - y) / max(x (1 - x), 1e-12) for x and w (log(1 - x) - log x) for y, times the
    upstream gradient (/ numel for "mean"). The weight w is a constant (storage)."""

    node_name = "BinaryCrossEntropyBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, x, y, weight, reduction):
        ctx.save_for_backward(x, y)
        ctx.weight, ctx.reduction = weight, reduction
        return _new(torch_f.binary_cross_entropy(x._data, y._data, weight, reduction=reduction))

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        needs, weight, reduction = ctx.needs_input_grad, ctx.weight, ctx.reduction
        if plain_backward():
            grad, x, y = storages(grad, x, y)
            return (*wrap_storages(*_bce_grads(needs, reduction, grad, x, y, weight)), None, None)
        weight = None if weight is None else _new(weight)
        return (*_bce_grads(needs, reduction, grad, x, y, weight), None, None)

    @staticmethod
    def on_storage(needs, x, y, weight, reduction):  # NOTE [Storage kernels]
        out = torch_f.binary_cross_entropy(x, y, weight, reduction=reduction)
        return out, lambda grad: (*_bce_grads(needs, reduction, grad, x, y, weight), None, None)


def _bce_grads(needs: tuple, reduction: str, grad, x, y, weight) -> tuple:
    grad = _per_element(grad, reduction, x.numel())
    if weight is not None:
        grad = grad * weight
    grad_x = grad_y = None
    if needs[0]:
        grad_x = grad * (x - y) / ((1 - x) * x).clamp(min=1e-12)
    if needs[1]:
        grad_y = grad * ((1 - x).log() - x.log())
    return grad_x, grad_y


class NllLoss(Function):
    """Negative log-likelihood of class-index targets: -w[t] * input[t] for each prediction,
    where input holds log-probabilities, shaped (C,), (N, C), or (N, C, H, W) for the subclass
    NllLoss2d (PyTorch's node for 4-D inputs; `functional.nll_loss` views other ranks as 4-D, as
    PyTorch does). w holds the class weights (1 without them); a target equal to ignore_index
    counts for nothing, and "mean" divides by the total weight w[t] of the others.

    Backward: the input's gradient is -w[t] at each target class and 0 elsewhere, times the
    upstream gradient (/ the total weight for "mean")."""

    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, input, target, weight, ignore_index, reduction):
        ctx.target, ctx.weight, ctx.ignore_index = target, weight, ignore_index
        ctx.reduction, ctx.shape = reduction, input.shape
        out = torch_f.nll_loss(
            input._data, target, weight, ignore_index=ignore_index, reduction=reduction
        )
        return _new(out)

    @staticmethod
    def backward(ctx, grad):
        weights, total = _target_weights(
            ctx.target, ctx.weight, ctx.ignore_index, ctx.shape, grad.dtype
        )
        if plain_backward():
            grad_input = _new(_nll_grad(ctx.reduction, grad._data, weights, total))
        else:
            grad_input = _nll_grad(ctx.reduction, grad, _new(weights), _new(total))
        return grad_input, None, None, None, None

    @staticmethod
    def on_storage(needs, input, target, weight, ignore_index, reduction):  # NOTE [Storage kernels]
        out = torch_f.nll_loss(
            input, target, weight, ignore_index=ignore_index, reduction=reduction
        )

        def backward(grad):
            weights, total = _target_weights(target, weight, ignore_index, input.shape, grad.dtype)
            return _nll_grad(reduction, grad, weights, total), None, None, None, None

        return out, backward


class NllLoss2d(NllLoss):
    node_name = "NllLoss2DBackward0"


def _target_weights(target, weight, ignore_index, shape, dtype) -> tuple:
    """Storage of the input's `shape` holding w[t] at each prediction's target class t (0 where
    t is ignore_index) and 0 elsewhere; and its sum, the divisor of "mean"."""
    class_dim = 0 if len(shape) == 1 else 1
    index = target.unsqueeze(class_dim)
    keep = index != ignore_index
    index = index * keep  # an ignored prediction points at class 0, with weight 0
    picked = keep.to(dtype) if weight is None else weight[index] * keep
    weights = torch.zeros(shape, dtype=dtype, device=target.device)
    return weights.scatter_(class_dim, index, picked), picked.sum()


def _nll_grad(reduction: str, grad, weights, total_weight):
    """-weights times the upstream gradient of each prediction (storage or minitorch)."""
    if reduction == "none":  # one gradient per prediction: broadcast it along the classes
        grad = grad.unsqueeze(0 if weights.dim() == 1 else 1)
    elif reduction == "mean":
        grad = grad / total_weight
    return weights * -grad


# Scalar arithmetic as PyTorch's C++ losses record it: inside cross_entropy, `(1 - s) * loss` is
# mul(Tensor, Scalar), a node with one edge (MulBackward1); in Python, `x * 0.9` wraps the number
# as a tensor (MulBackward0, with a (None, 0) edge for it).
class MulNumber(Mul):
    node_name = "MulBackward1"
    wraps_numbers = False


class AddNumber(Add):
    node_name = "AddBackward1"
    wraps_numbers = False


class DivNumber(Div):
    node_name = "DivBackward1"
    wraps_numbers = False


class BinaryCrossEntropyWithLogits(Function):
    """Binary cross-entropy of sigmoid(x) against targets y, computed stably from the logits x,
    then reduced: elementwise -w * (p * y * log s(x) + (1 - y) * log(1 - s(x))), where s is the
    sigmoid, w the optional element weight and p the optional positive-class weight. The
    weights are constants (storage on ctx), as they are for torch's node."""

    node_name = "BinaryCrossEntropyWithLogitsBackward0"
    saved_names = ("self", "target")

    @staticmethod
    def forward(ctx, x, y, weight, pos_weight, reduction):
        ctx.save_for_backward(x, y)
        ctx.weight, ctx.pos_weight, ctx.reduction = weight, pos_weight, reduction
        return _new(
            torch_f.binary_cross_entropy_with_logits(
                x._data, y._data, weight=weight, pos_weight=pos_weight, reduction=reduction
            )
        )

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        if ctx.reduction == "mean":
            grad = grad / x.numel()
        if ctx.weight is not None:
            grad = grad * _new(ctx.weight)
        pos_weight = None if ctx.pos_weight is None else _new(ctx.pos_weight)
        grad_x = grad_y = None
        if need_x:
            if pos_weight is None:
                local = x.sigmoid() - y
            else:
                # d/dx = (1 + (p - 1) y) s(x) - p y
                local = (1 + (pos_weight - 1) * y) * x.sigmoid() - pos_weight * y
            grad_x = sum_to_shape(grad * local, x.shape)
        if need_y:
            # d/dy = -x + (p - 1) softplus(-x), with softplus(-x) = log(1 + e^-|x|) + relu(-x)
            local = -x
            if pos_weight is not None:
                softplus = ((-x.abs()).exp() + 1).log() + (-x).relu()
                local = local + (pos_weight - 1) * softplus
            grad_y = sum_to_shape(grad * local, y.shape)
        return grad_x, grad_y, None, None, None


# Layer normalisation ----------------------------------------------------------------------------
class NativeLayerNorm(Function):
    """(x - mean) / sqrt(var + eps) over the last dims (the biased variance), times weight plus
    bias: one node, as PyTorch records it. Forward is torch.native_layer_norm on storage, which
    also gives each row's mean and rstd = 1 / sqrt(var + eps). Backward, with
    x_hat = (x - mean) * rstd and g = grad * weight (means over the normalised dims, sums over
    the others):
        dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)),  dweight = sum(grad * x_hat),
        dbias = sum(grad).
    A plain backward uses forward's mean and rstd; under create_graph=True they are computed
    again from x with minitorch ops, so that the second derivative sees how they depend on x."""

    node_name = "NativeLayerNormBackward0"
    saved_names = ("input", "weight")

    @staticmethod
    def forward(ctx, x, weight, bias, normalized_shape, eps):
        w, b = storages(weight, bias)
        out, mean, rstd = torch.native_layer_norm(x._data, normalized_shape, w, b, eps)
        ctx.save_for_backward(x, weight)
        ctx.mean, ctx.rstd, ctx.eps = mean, rstd, eps
        ctx.dims = tuple(range(x.dim() - len(normalized_shape), x.dim()))
        return _new(out)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        needs, dims = ctx.needs_input_grad, ctx.dims
        if plain_backward():
            grad, x, weight = storages(grad, x, weight)
            grads = _layer_norm_grads(needs, dims, grad, x, weight, ctx.mean, ctx.rstd)
            return (*wrap_storages(*grads), None, None)
        mean = x.mean(dims, keepdim=True)
        centered = x - mean
        rstd = 1 / ((centered * centered).mean(dims, keepdim=True) + ctx.eps).sqrt()
        return (*_layer_norm_grads(needs, dims, grad, x, weight, mean, rstd), None, None)

    @staticmethod
    def on_storage(needs, x, weight, bias, normalized_shape, eps):  # NOTE [Storage kernels]
        out, mean, rstd = torch.native_layer_norm(x, normalized_shape, weight, bias, eps)
        dims = tuple(range(x.dim() - len(normalized_shape), x.dim()))

        def backward(grad):
            return (*_layer_norm_grads(needs, dims, grad, x, weight, mean, rstd), None, None)

        return out, backward


def _layer_norm_grads(needs: tuple, dims: tuple, grad, x, weight, mean, rstd) -> tuple:
    x_hat = (x - mean) * rstd
    batch_dims = tuple(range(dims[0]))  # the dims weight and bias are shared across

    def sum_over_batch(t):
        return t.sum(batch_dims) if batch_dims else t

    grad_x = grad_weight = grad_bias = None
    if needs[0]:
        g = grad if weight is None else grad * weight
        g_mean = g.mean(dims, keepdim=True)
        grad_x = rstd * (g - g_mean - x_hat * (g * x_hat).mean(dims, keepdim=True))
    if needs[1]:
        grad_weight = sum_over_batch(grad * x_hat)
    if needs[2]:
        grad_bias = sum_over_batch(grad)
    return grad_x, grad_weight, grad_bias


# Embedding --------------------------------------------------------------------------------------
class Embedding(Function):
    """Rows of `weight` picked by integer `indices` (any shape). Backward adds each output
    gradient row into the row it came from; the `padding_idx` row gets no gradient."""

    node_name = "EmbeddingBackward0"
    saved_names = ("indices",)

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.save_for_backward(_new(indices))
        ctx.shape, ctx.padding_idx = weight.shape, padding_idx
        return _new(weight._data[indices])

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        flat = indices._data.reshape(-1)
        rows = grad.reshape(-1, ctx.shape[1])
        if ctx.padding_idx is not None:
            keep = (flat != ctx.padding_idx).to(grad.dtype).unsqueeze(1)
            rows = rows * _new(keep)
        return IndexAdd.apply(rows, 0, flat, ctx.shape), None, None


# Convolution as matrix products -----------------------------------------------------------------
class Unfold(Function):
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), one column per sliding-window position.
    Its backward is `Fold` (which sums overlapping windows back) and vice versa."""

    node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, kernel_size, dilation, padding, stride):
        ctx.args = (x.shape[-2:], kernel_size, dilation, padding, stride)
        return _new(torch_f.unfold(x._data, kernel_size, dilation, padding, stride))

    @staticmethod
    def backward(ctx, grad):
        return Fold.apply(grad, *ctx.args), None, None, None, None


class Fold(Function):
    """col2im: (N, C*kh*kw, L) -> (N, C, H, W), summing where windows overlap."""

    node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, cols, output_size, kernel_size, dilation, padding, stride):
        ctx.args = (kernel_size, dilation, padding, stride)
        return _new(torch_f.fold(cols._data, output_size, kernel_size, dilation, padding, stride))

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, *ctx.args), None, None, None, None, None


class Conv2d(Function):
    """2-D cross-correlation (groups=1). Forward is torch's convolution on storage; backward is
    written with Unfold/Fold and matrix products (all minitorch ops):
    cols = unfold(x) (N, C*kh*kw, L), dW = sum_n dY_n @ cols_n^T, dx = fold(W^T @ dY)."""

    node_name = "ConvolutionBackward0"
    saved_names = ("input", "weight")

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation):
        ctx.save_for_backward(x, weight)
        ctx.args = (stride, padding, dilation)
        b = None if bias is None else bias._data
        return _new(torch_f.conv2d(x._data, weight._data, b, stride, padding, dilation))

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if plain_backward():
            return wrap_storages(
                *_conv_grads(ctx, *storages(grad, x, weight), torch_f.fold, torch_f.unfold)
            )
        return _conv_grads(ctx, grad, x, weight, Fold.apply, Unfold.apply)


def _conv_grads(ctx, grad, x, weight, fold, unfold) -> tuple:
    stride, padding, dilation = ctx.args
    need_x, need_w, need_b = ctx.needs_input_grad[:3]
    kernel = tuple(weight.shape[2:])
    n, out_channels = grad.shape[0], grad.shape[1]
    grad_rows = grad.reshape(n, out_channels, -1)  # (N, O, L)
    grad_x = grad_w = grad_b = None
    if need_x:
        cols = weight.reshape(out_channels, -1).t() @ grad_rows  # (N, C*kh*kw, L)
        grad_x = fold(cols, tuple(x.shape[-2:]), kernel, dilation, padding, stride)
    if need_w:
        cols = unfold(x, kernel, dilation, padding, stride)
        grad_w = (grad_rows @ cols.transpose(1, 2)).sum(0).reshape(weight.shape)
    if need_b:
        grad_b = grad.sum((0, 2, 3))
    return grad_x, grad_w, grad_b, None, None, None


# Pooling ----------------------------------------------------------------------------------------
class MaxPool2d(Function):
    """Maximum over each window. Backward sends each output gradient to the input position that
    held the maximum (a scatter-add over the flattened spatial dims, whose own backward is a
    gather)."""

    node_name = "MaxPool2DWithIndicesBackward0"
    saved_names = ("result1",)  # the indices: what backward needs of (result0, result1)

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, dilation, ceil_mode):
        out, indices = torch_f.max_pool2d_with_indices(
            x._data, kernel_size, stride, padding, dilation, ceil_mode
        )
        ctx.save_for_backward(_new(indices))
        ctx.shape = x.shape
        indices_tensor = _new(indices)
        ctx.mark_non_differentiable(indices_tensor)
        return _new(out), indices_tensor

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        shape = ctx.shape
        flat_shape = (*shape[:-2], shape[-2] * shape[-1])
        flat_grad = grad.reshape(*grad.shape[:-2], -1)
        flat_index = indices._data.reshape(*indices.shape[:-2], -1)
        grad_x = ScatterAdd.apply(flat_grad, -1, flat_index, flat_shape).reshape(shape)
        return grad_x, None, None, None, None, None


# Padding ----------------------------------------------------------------------------------------
class ConstantPad(Function):
    """Pad (or, for negative amounts, crop) the last dims with a constant. `pad` lists
    (before, after) amounts starting from the last dim, as `torch.nn.functional.pad` does.
    Backward crops what forward padded: it is this op with every amount negated."""

    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pad, value):
        ctx.pad = pad
        return _new(torch_f.pad(x._data, pad, mode="constant", value=value))

    @staticmethod
    def backward(ctx, grad):
        return ConstantPad.apply(grad, tuple(-p for p in ctx.pad), 0.0), None, None


# Random masks and one-hot codes -----------------------------------------------------------------
# Both are computed by ops, not directly on storage, so that a forward record sees them: a replay
# draws a new dropout mask, as eager mode does (NOTE [Forward record] in autograd/record.py).
class DropoutMask(Function):
    """The mask dropout multiplies by: each element is 0 with probability p, else 1 / (1 - p);
    shaped like `x`. Not differentiable (`x` only gives the shape, dtype and device)."""

    non_differentiable_args = (0,)

    @staticmethod
    def forward(ctx, x, p):
        if p == 1.0:
            mask = torch.zeros_like(x._data)
        else:
            mask = torch.empty_like(x._data).bernoulli_(1 - p).div_(1 - p)
        mask = _new(mask)
        ctx.mark_non_differentiable(mask)
        return mask


class OneHot(Function):
    """Integer class indices -> int64 one-hot codes (never differentiable)."""

    @staticmethod
    def forward(ctx, indices, num_classes):
        return _new(torch_f.one_hot(indices._data, num_classes))
