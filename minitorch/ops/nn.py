"""The Functions behind `minitorch.nn.functional`: fused ops whose forward runs on storage (one
torch call where possible) and whose backward is written with minitorch ops, so that
`create_graph=True` differentiates through them."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as torch_f

from minitorch.autograd.function import Function
from minitorch.ops.broadcasting import sum_to_shape
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


# Classification losses --------------------------------------------------------------------------
def class_rows(input: Tensor) -> Tensor:
    """(N, C, d1, ..., dk) -> (N * d1 * ... * dk, C); (C,) -> (1, C): one row per prediction.
    Works on minitorch tensors and on storage alike."""
    if input.dim() == 1:
        return input.reshape(1, -1)
    if input.dim() > 2:
        input = input.permute(0, *range(2, input.dim()), 1)
    return input.reshape(-1, input.shape[-1])


def rows_to_input_layout(rows: Tensor, shape: torch.Size) -> Tensor:
    """Undo `class_rows` on a (rows, C) tensor: back to `shape`."""
    if len(shape) <= 2:
        return rows.reshape(shape)
    moved = rows.reshape(shape[0], *shape[2:], shape[1])
    return moved.permute(0, len(shape) - 1, *range(1, len(shape) - 1))


class TargetDistribution:
    """Class-index targets as a distribution over classes, one row per prediction:
    q[i] = hot[i] * onehot(index[i]) + spread * keep[i], with hot[i] = (1 - smoothing) * w[t_i]
    and spread = smoothing / C * w (w: the class weights, 1 without them); keep[i] is 0 for
    ignored entries, whose row is all zero. `scale` holds the row sums of q and `divisor` the
    divisor of the mean (the total weight w[t_i] of the entries that are not ignored). All
    storage, kept sparse: q itself is only built by `dense()`."""

    def __init__(
        self,
        target: torch.Tensor,
        weight: torch.Tensor | None,
        ignore_index: int,
        smoothing: float,
        classes: int,
        dtype: torch.dtype,
    ) -> None:
        flat = target.reshape(-1, 1)
        keep = flat != ignore_index
        self.index = flat * keep  # ignored entries point at class 0 with weight 0
        self.keep = keep.to(dtype)
        row_weight = self.keep if weight is None else weight[self.index] * self.keep
        self.divisor = row_weight.sum()
        self.hot = row_weight * (1 - smoothing) if smoothing else row_weight
        self.spread = None
        self.scale = self.hot
        if smoothing:
            self.spread = torch.full(
                (1, classes), smoothing / classes, dtype=dtype, device=target.device
            )
            if weight is not None:
                self.spread = self.spread * weight
            self.scale = self.hot + self.spread.sum() * self.keep
        self.shape = (flat.shape[0], classes)

    def dense(self) -> torch.Tensor:
        q = torch.zeros(self.shape, dtype=self.hot.dtype, device=self.hot.device)
        q.scatter_(1, self.index, self.hot)
        return q if self.spread is None else q + self.spread * self.keep

    def subtract_from(self, rows: torch.Tensor) -> torch.Tensor:
        """rows - q, in place on `rows` (storage)."""
        rows.scatter_add_(1, self.index, -self.hot)
        if self.spread is not None:
            rows -= self.spread * self.keep
        return rows


class ClassNll(Function):
    """Negative log-likelihood of class-index targets, in one node: `nll_loss` on
    log-probabilities, or (subclass `CrossEntropy`) `cross_entropy` on logits, with class
    weights, ignore_index, label smoothing and reduction. `target` and `weight` arrive as
    storage: they are constants of the loss (no gradient, no edge).

    Forward is torch's fused loss on storage (so its checks and messages are PyTorch's own).
    Backward writes the targets as a distribution q over classes (`TargetDistribution`); row
    i's loss is -sum_j q_ij logp_ij, so its gradient is -q for log-probabilities and
    softmax(logits) * sum_j q_ij - q for logits."""

    node_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, input, target, weight, ignore_index, reduction, smoothing):
        _remember_targets(ctx, input, target, weight, ignore_index, reduction, smoothing, False)
        out = torch_f.nll_loss(
            input._data, target, weight, ignore_index=ignore_index, reduction=reduction
        )
        return _new(out)

    @staticmethod
    def backward(ctx, grad):
        classes = ctx.shape[1] if len(ctx.shape) > 1 else ctx.shape[0]
        targets = TargetDistribution(
            ctx.target, ctx.weight, ctx.ignore_index, ctx.smoothing, classes, grad.dtype
        )
        (logits,) = ctx.saved_tensors if ctx.takes_logits else (None,)
        if ctx.reduction == "none":
            coef = grad.reshape(-1, 1)
        elif ctx.reduction == "mean":
            coef = grad / _new(targets.divisor)
        else:
            coef = grad
        if plain_backward():
            # The formula below on storage, without materialising q.
            if logits is None:
                rows = targets.subtract_from(grad._data.new_zeros(targets.shape))
            else:
                rows = targets.subtract_from(class_rows(logits._data).softmax(1) * targets.scale)
            grad_input = _new(rows_to_input_layout(rows * coef._data, ctx.shape))
        else:
            q = _new(targets.dense())
            if logits is None:
                rows = -q
            else:
                rows = class_rows(logits).softmax(1) * _new(targets.scale) - q
            grad_input = rows_to_input_layout(rows * coef, ctx.shape)
        return grad_input, None, None, None, None, None


class CrossEntropy(ClassNll):
    node_name = "CrossEntropyLossBackward0"

    @staticmethod
    def forward(ctx, input, target, weight, ignore_index, reduction, smoothing):
        _remember_targets(ctx, input, target, weight, ignore_index, reduction, smoothing, True)
        ctx.save_for_backward(input)
        out = torch_f.cross_entropy(
            input._data,
            target,
            weight,
            ignore_index=ignore_index,
            reduction=reduction,
            label_smoothing=smoothing,
        )
        return _new(out)


def _remember_targets(
    ctx, input, target, weight, ignore_index, reduction, smoothing, takes_logits
) -> None:
    ctx.target, ctx.weight, ctx.ignore_index = target, weight, ignore_index
    ctx.reduction, ctx.smoothing, ctx.shape = reduction, smoothing, input.shape
    ctx.takes_logits = takes_logits


class BinaryCrossEntropyWithLogits(Function):
    """Binary cross-entropy of sigmoid(x) against targets y, computed stably from the logits x,
    then reduced: elementwise -w * (p * y * log s(x) + (1 - y) * log(1 - s(x))), where s is the
    sigmoid, w the optional element weight and p the optional positive-class weight. The
    weights are constants (storage on ctx), as they are for torch's node."""

    node_name = "BinaryCrossEntropyWithLogitsBackward0"

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


# Embedding --------------------------------------------------------------------------------------
class Embedding(Function):
    """Rows of `weight` picked by integer `indices` (any shape). Backward adds each output
    gradient row into the row it came from; the `padding_idx` row gets no gradient."""

    node_name = "EmbeddingBackward0"

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
