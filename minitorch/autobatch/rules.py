"""Batching rules: how to run one op for many samples as a single call of an ordinary op.

The executor (execute.py) hands a rule the arguments of the first op of a batch, with every
per-sample argument replaced by the samples' values stacked along a new leading dim of size
`size` (`batched[i]` is True), and every shared argument as it is (`batched[i]` False: a
parameter, a constant, or data that happens to be the same tensor in every sample). The rule
returns the op's outputs for the whole batch, each with that leading dim: row i is sample i's
result. The executor checks the shapes.

A rule only reshapes arguments and shifts dims (`sum(dim=0)` of a sample is `sum(dim=1)` of the
batch), then calls an existing Function, so backward is that Function's own.
`check` looks at a signature's arguments (signature.ArgInfo) and says why the rule cannot
batch them, or None; it runs once per signature.

Families: elementwise ops (broadcasting does the work), reductions and softmax (dims + 1), shape
ops, cat/stack, matmul with a shared right operand or per-sample matrices, `nn.Linear`, the
fused LSTM and GRU steps and the LSTM cell (samples' rows concatenated), embedding lookups, and
the creations of per-sample data (`FromData`, `Filled`).
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autobatch.lazy import CONST, RAW, SAMPLE, SHARED, VALUES
from minitorch.ops import elementwise as ew
from minitorch.ops import indexing, linalg, reduction, rnn, shape
from minitorch.ops import nn as nn_ops
from minitorch.tensor import Tensor


class Rule:
    """Base rule: `check` accepts everything, `run` must be written by each family."""

    matmul_like = False  # the agenda scheduler defers these on ties (DyNet's heuristic)

    def check(self, function: type, args: tuple) -> str | None:
        """Why a batch of ops with these arguments cannot run as one call, or None."""
        return None

    def run(self, function: type, args: list, batched: list[bool], size: int, kind: Any) -> tuple:
        """The outputs of `size` samples at once, each with a leading dim of `size`."""
        raise NotImplementedError


def _expanded(value: Any, is_batched: bool, size: int) -> Any:
    """A per-sample tensor argument with its leading batch dim, even when every sample passed
    the same tensor (then it is expanded: a view, no copy)."""
    if is_batched or not isinstance(value, Tensor):
        return value
    return value.expand(size, *value.shape)


def _as_tuple(outputs: Any) -> tuple:
    return outputs if isinstance(outputs, tuple) else (outputs,)


# Elementwise -------------------------------------------------------------------------------------
class Elementwise(Rule):
    """Ops that broadcast: stacked samples get size-1 dims so that every argument lines up with
    the (batch, *output) result; shared arguments broadcast as they did for one sample.

    A VALUES argument (a number per sample, beside a float tensor: recorder.py) arrives as the
    list of the samples' numbers: one number when they are all equal, else a tensor of the
    other operand's dtype with a row per sample, which gives the very values the op computes
    with one number (ops/scalars.number_storage casts it to that dtype too)."""

    def run(self, function, args, batched, size, kind):
        rank = len(kind.outputs[0].shape)
        args = list(args)
        for i, value in enumerate(args):
            if kind.args[i].role == VALUES:
                args[i] = _numbers(value, args[1 - i], size, rank)
            elif batched[i] and value.dim() - 1 < rank:
                sample_shape = tuple(value.shape[1:])
                ones = (1,) * (rank - len(sample_shape))
                args[i] = value.reshape(size, *ones, *sample_shape)
        return _as_tuple(function.apply(*args))


def _numbers(values: list, like: Tensor, size: int, rank: int) -> Any:
    """The samples' numbers as one operand: the number itself if all are equal, else a tensor
    of `like`'s dtype and device of shape (size, 1, ..., 1) (rank + 1 dims)."""
    first = values[0]
    if all(v == first and type(v) is type(first) for v in values):
        return first
    data = torch.tensor(values, dtype=like._data.dtype, device=like._data.device)
    return Tensor._make(data.reshape(size, *(1,) * rank))


# Dims: reductions, softmax, unsqueeze, transpose, split ... -------------------------------------
class ShiftDims(Rule):
    """The per-sample tensor at `tensor` gets a leading batch dim, so every dim argument (at
    `dims`: an int or a tuple of ints) moves up by one. A reduction (`reduces`) of a 0-d
    sample reduces nothing: the batch gets a size-1 dim to reduce instead."""

    def __init__(self, tensor: int, *dims: int, reduces: bool = False) -> None:
        self.tensor = tensor
        self.dims = dims
        self.reduces = reduces

    def check(self, function, args):
        if args[self.tensor].role != SAMPLE:
            return "the tensor argument is not per-sample"
        if (
            len(args[self.tensor].shape) == 0
            and not self.reduces
            and function is not shape.Unsqueeze
        ):
            return "it works on a 0-d tensor (no dim to shift)"
        for position in self.dims:
            if args[position].value is None:
                return "dim=None (it works on the flattened tensor)"
        return None

    def run(self, function, args, batched, size, kind):
        args = list(args)
        a = _expanded(args[self.tensor], batched[self.tensor], size)
        zero_dim = self.reduces and a.dim() == 1
        args[self.tensor] = a.unsqueeze(1) if zero_dim else a
        for position in self.dims:
            dims = args[position]
            if isinstance(dims, int):
                args[position] = dims + 1
            else:
                args[position] = (1,) if zero_dim else tuple(d + 1 for d in dims)
        outputs = _as_tuple(function.apply(*args))
        if zero_dim:  # keepdim=True would leave the size-1 dim: back to (size, *sample shape)
            outputs = tuple(o.reshape(size, *m.shape) for o, m in zip(outputs, kind.outputs))
        return outputs


class Squeeze(ShiftDims):
    """squeeze() with no dim squeezes every size-1 dim of the sample: name them explicitly, or
    the batch dim would go too when the batch has one sample."""

    def __init__(self) -> None:
        super().__init__(0)

    def run(self, function, args, batched, size, kind):
        dims = args[1]
        if dims is None:
            dims = tuple(d for d, n in enumerate(args[0].shape[1:]) if n == 1)
        a = _expanded(args[0], batched[0], size)
        return _as_tuple(function.apply(a, tuple(d + 1 for d in dims)))


class Permute(ShiftDims):
    def __init__(self) -> None:
        super().__init__(0)

    def run(self, function, args, batched, size, kind):
        a = _expanded(args[0], batched[0], size)
        return _as_tuple(function.apply(a, (0, *(d + 1 for d in args[1]))))


class NewShape(ShiftDims):
    """view, reshape and expand: the target shape is the sample's output shape behind the
    batch dim (any -1 in it was resolved when the output shape was found)."""

    def __init__(self) -> None:
        super().__init__(0)

    def run(self, function, args, batched, size, kind):
        a = _expanded(args[0], batched[0], size)
        out_shape = tuple(kind.outputs[0].shape)
        if function is shape.Expand and a.dim() - 1 < len(out_shape):  # expand adds dims in front
            ones = (1,) * (len(out_shape) - (a.dim() - 1))
            a = a.reshape(size, *ones, *a.shape[1:])
        return _as_tuple(function.apply(a, (size, *out_shape)))


class BasicIndex(ShiftDims):
    """`x[i]`, `x[1:3]`, `x[:, None]`: the same index behind a full slice of the batch dim."""

    def __init__(self) -> None:
        super().__init__(0)

    def check(self, function, args):
        reason = super().check(function, args)
        if reason is None and (args[1].role != CONST or not indexing._is_basic(args[1].value)):
            return "advanced indexing (with a tensor or a list)"
        return reason

    def run(self, function, args, batched, size, kind):
        a = _expanded(args[0], batched[0], size)
        index = args[1] if isinstance(args[1], tuple) else (args[1],)
        return _as_tuple(function.apply(a, (slice(None), *index)))


class Concatenate(Rule):
    """cat and stack: `(dim, *tensors)`, every tensor per-sample (or the same in each sample)."""

    def run(self, function, args, batched, size, kind):
        tensors = [_expanded(a, b, size) for a, b in zip(args[1:], batched[1:])]
        return _as_tuple(function.apply(args[0] + 1, *tensors))


# Matrix products ---------------------------------------------------------------------------------
class MatMul(Rule):
    """- `x @ W` with a shared W (1-D or 2-D): the stacked samples are rows of one product;
    - `W @ x` with a shared matrix W: `X @ W^T` for vectors x, `W @ X` (broadcast) for matrices;
    - `a @ b` with per-sample matrices of equal rank >= 2: a batched product."""

    matmul_like = True

    def check(self, function, args):
        a, b = args
        if b.role == SHARED:
            if len(b.shape) > 2:
                return "the shared right operand has more than 2 dims"
            return None
        if a.role == SHARED:
            if len(a.shape) != 2 or len(b.shape) > 2:
                return "the shared left operand is not a matrix, or the right one has > 2 dims"
            return None
        if len(a.shape) < 2 or len(a.shape) != len(b.shape):
            return "per-sample operands that are not matrices of the same rank"
        return None

    def run(self, function, args, batched, size, kind):
        a, b = args
        a_role, b_role = kind.args[0].role, kind.args[1].role
        out_shape = (size, *kind.outputs[0].shape)
        if a_role == SHARED and len(kind.args[1].shape) == 1:  # W @ x for every x: X @ W^T
            return (linalg.MatMul.apply(_expanded(b, batched[1], size), a.t()),)
        a = _expanded(a, batched[0], size) if a_role != SHARED else a
        if b_role == SHARED:  # all samples' rows times one matrix: a single 2-D product
            rows = a.reshape(-1, a.shape[-1])
            return (linalg.MatMul.apply(rows, b).reshape(out_shape),)
        return (linalg.MatMul.apply(a, _expanded(b, batched[1], size)),)


class Linear(Rule):
    """`nn.Linear`: x @ W^T + b works on any leading dims, so the batch dim is one more."""

    matmul_like = True

    def check(self, function, args):
        x, weight, bias = args
        if weight.role != SHARED or bias.role not in (SHARED, CONST):
            return "the weight or bias is per-sample"
        if x.role != SAMPLE:
            return "the input is not per-sample"
        return None

    def run(self, function, args, batched, size, kind):
        x, weight, bias = args
        return (function.apply(_expanded(x, batched[0], size), weight, bias),)


class RowsStep(Rule):
    """The fused LSTM and GRU steps and the LSTM cell take (rows, features) matrices: the
    samples' rows are concatenated into one (size * rows, features) matrix, and the outputs
    split back. `state` lists the positions of the inputs and states, `weights` the rest."""

    matmul_like = True

    def __init__(self, state: tuple[int, ...], weights: tuple[int, ...]) -> None:
        self.state = state
        self.weights = weights

    def check(self, function, args):
        for position in self.weights:
            if args[position].role not in (SHARED, CONST):
                return "a weight is per-sample"
        rows = {args[p].shape[0] if len(args[p].shape) == 2 else None for p in self.state}
        if None in rows:
            return "the gates or the state are not 2-D"
        if len(rows) != 1:
            return "the state has more rows than the gates"
        return None

    def run(self, function, args, batched, size, kind):
        args = list(args)
        for p in self.state:
            value = _expanded(args[p], batched[p], size)
            args[p] = value.reshape(-1, value.shape[-1])
        outputs = _as_tuple(function.apply(*args))
        return tuple(out.reshape(size, -1, out.shape[-1]) for out in outputs)


class Embedding(Rule):
    """Embedding lookups: the samples' index tensors stacked, one lookup for all."""

    def check(self, function, args):
        weight, indices, _ = args
        if weight.role != SHARED or indices.role != RAW:
            return "the weight is per-sample"
        return None

    def run(self, function, args, batched, size, kind):
        weight, indices, padding_idx = args
        if not batched[1]:
            indices = indices.expand(size, *indices.shape)
        return (function.apply(weight, indices, padding_idx),)


# Creations ---------------------------------------------------------------------------------------
# `tensor(data)`, `zeros`, `ones` and `full` of numbers made inside per-sample code are recorded
# as lazy ops of these two op classes (recorder.py, `create`): the data or fill value is a VALUES
# argument, and a batch makes one tensor with a row per sample. Neither is a Function: they
# make leaves that need no gradient, like the factories they stand for.
class FromData:
    """`tensor(data, dtype=dtype, device=device)` of (nested lists of) Python numbers."""

    @staticmethod
    def apply(data: Any, dtype: Any, device: Any) -> Tensor:
        return Tensor._make(torch.tensor(data, dtype=dtype, device=device))


class Filled:
    """`full(shape, value, dtype=dtype, device=device)`: also `zeros` and `ones`."""

    @staticmethod
    def apply(shape: tuple, value: Any, dtype: Any, device: Any) -> Tensor:
        return Tensor._make(torch.full(shape, value, dtype=dtype, device=device))


class Creation(Rule):
    """A batch of creations is one: `torch.tensor` of all the samples' data, or one `full` (a
    tensor of the fill values, broadcast, when they differ)."""

    def run(self, function, args, batched, size, kind):
        if function is FromData:
            data, dtype, device = args
            return (Tensor._make(torch.tensor(data, dtype=dtype, device=device)),)
        shape, values, dtype, device = args
        first = values[0]
        if all(v == first for v in values):
            return (Tensor._make(torch.full((size, *shape), first, dtype=dtype, device=device)),)
        column = torch.tensor(values, dtype=dtype, device=device).reshape(size, *(1,) * len(shape))
        return (Tensor._make(column.expand(size, *shape).contiguous()),)


class AddChain:
    """A chain of adds over samples (`total = total + loss`, `sum(losses)`), folded into one sum
    of its terms before the flush schedules (schedulers.fold_add_chains). Its arguments are the
    terms (pending results, tensors) and numbers; the executor runs it as one sum of the
    gathered terms (execute.py, `_run_chain`), `apply` is the same sum on the values."""

    @staticmethod
    def apply(*terms: Any) -> Tensor:
        tensors = [t for t in terms if isinstance(t, Tensor)]
        total = shape.stack(tensors).sum(0)
        number = sum(t for t in terms if not isinstance(t, Tensor))
        return total + number if number else total


# The table ---------------------------------------------------------------------------------------
_ELEMENTWISE = (
    ew.Add, ew.Sub, ew.RSub, ew.Mul, ew.Div, ew.Remainder, ew.RemainderTensor, ew.Maximum,
    ew.Minimum, ew.PowScalar, ew.Pow, ew.RPow, ew.Neg, ew.Exp, ew.Log, ew.Sqrt, ew.Sin, ew.Cos,
    ew.Tanh, ew.Sigmoid, ew.TanhBackward, ew.SigmoidBackward, ew.Relu, ew.Abs, ew.Clamp,
    ew.Clone, ew.ToCopy, ew.Where, ew.MaskedFill, ew.Fill, ew.Compare, ew.LogicalNot,
)  # fmt: skip
_REDUCE_DIMS_AT_1 = (
    reduction.Sum, reduction.SumAll, reduction.Mean, reduction.MeanAll, reduction.Amax,
    reduction.Amin, reduction.MaxAll, reduction.MinAll, reduction.LogSumExp, reduction.Var,
    reduction.Std, reduction.Softmax, reduction.LogSoftmax, reduction.MaxDim, reduction.MinDim,
)  # fmt: skip

RULES: dict[type, Rule] = {}
RULES.update(dict.fromkeys(_ELEMENTWISE, Elementwise()))
RULES.update(dict.fromkeys(_REDUCE_DIMS_AT_1, ShiftDims(0, 1, reduces=True)))
RULES[reduction.Norm] = ShiftDims(0, 2, reduces=True)
RULES[reduction.ArgReduce] = ShiftDims(1, 2, reduces=True)
RULES[shape.Unsqueeze] = ShiftDims(0, 1)
RULES[shape.Transpose] = RULES[shape.T] = ShiftDims(0, 1, 2)
RULES[shape.Split] = RULES[shape.SplitWithSizes] = ShiftDims(0, 2)
RULES[shape.Unbind] = ShiftDims(0, 1)
RULES.update(dict.fromkeys((shape.Squeeze, shape.SqueezeDim, shape.SqueezeDims), Squeeze()))
RULES[shape.Permute] = Permute()
RULES.update(dict.fromkeys((shape.View, shape.Reshape, shape.Expand), NewShape()))
RULES.update(
    dict.fromkeys(
        (indexing.Index, indexing.Select, indexing.Slice, indexing.UnsqueezeIndex, indexing.Alias),
        BasicIndex(),
    )
)
RULES[shape.Cat] = RULES[shape.Stack] = Concatenate()
RULES.update(dict.fromkeys((linalg.MatMul, linalg.Mm, linalg.Mv, linalg.Dot), MatMul()))
RULES[nn_ops.Linear] = RULES[nn_ops.LinearNoBias] = Linear()
RULES[rnn.LSTMStep] = RowsStep(state=(0, 1, 2), weights=(3,))
RULES[rnn.GRUStep] = RowsStep(state=(0, 1), weights=(2, 3))
RULES[rnn.LSTMCellStep] = RowsStep(state=(0, 1, 2), weights=(3, 4, 5, 6))
RULES[nn_ops.Embedding] = Embedding()
RULES[FromData] = RULES[Filled] = Creation()


def rule_for(function: type) -> Rule | None:
    """The batching rule of an op class, or None (the op then runs one sample at a time)."""
    return RULES.get(function)
