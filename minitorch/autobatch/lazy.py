"""The lazy graph: one `LazyOp` per recorded op of one sample, and a `Pending` record per result.

NOTE [Autobatch] below is the contract that the other files of minitorch.autobatch rely on.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from minitorch.autobatch.signature import OpKind
    from minitorch.autograd.function import BackwardNode
    from minitorch.tensor import Tensor

# NOTE [Autobatch]
# Inside `with autobatch.batch():` the forward record's hook (NOTE [Forward record] in
# autograd/record.py) hands every op to a `BatchRecorder` (recorder.py). Each tensor argument
# has a ROLE: SHARED (a `Parameter`, any other leaf that requires grad, or the result of a
# shared op), RAW (a torch storage that an op takes as it is: embedding indices) or per-SAMPLE
# (anything else: the results of lazy ops, and data). Then each op is one of:
#
# 1. A shared op: every tensor argument is shared (`W.t()`, `b_ih + b_hh` inside LSTMCell).
#    It is the same for every sample, so it runs at once, eagerly, and (for ops with a batching
#    rule, which are pure) its result is remembered: the next sample gets the very same tensor,
#    and the batched ops meet one shared weight instead of one copy per sample.
# 2. A lazy op: some argument is per-sample. The op is not run: it becomes a `LazyOp`, and the
#    caller gets placeholders, plain `Tensor`s with the right shape, dtype, requires_grad and
#    grad_fn class, whose storage is a NaN (or zero) scalar expanded to that shape. Each
#    placeholder has its own storage object (`_data`); `BatchRecorder._pending` maps
#    `id(_data)` to its `Pending`.
# 3. An eager op: one that cannot wait (its output shape cannot be found without running it,
#    it reads the storage of a placeholder directly, or an in-place op is running). What is
#    pending runs first (a flush), then the op runs as usual.
#
# The SIGNATURE of a lazy op decides what batches together (signature.py): the op class, the
# grad mode, the constants with their types, and per tensor argument its identity and version
# (shared) or its shape and dtype (per-sample). The first op of each signature gets an `OpKind`:
# the batching rule that accepts these arguments (rules.py) or the reason why none does, and the
# output shapes, found by running the op's forward once on stand-ins with no meaningful values.
#
# A FLUSH (leaving the block; or a value is needed: `item()`, `bool`, `print`, backward ...)
# schedules the lazy ops into batches of equal signature (schedulers.py) and runs each batch
# as ONE ordinary op on stacked rows (execute.py, with the argument rows moved by the ops in
# gather.py); shared arguments are passed as they are. Sample i's result is row i of the
# batched result, and then:
# - each placeholder storage object still alive is re-pointed (`torch.Tensor.set_`) at its row:
#   the placeholder, and any `detach()`/`.data` alias of it, now shows the value;
# - each placeholder still alive becomes row i of the batched result for autograd too (a view
#   made by `SplitRows`, gather.py), so gradients reach the batched op, whose backward is the
#   op's own: a parameter's gradient is summed over the batch;
# - a placeholder nobody holds any more never becomes a row: later batches read its value out
#   of the batched result directly. The lazy graph holds placeholders only through weak
#   references for that reason.
# The lazy graph is many small objects: the cyclic garbage collector is paused during the block,
# and the one reference cycle (a LazyOp and its Pending results) is cut after each flush.
#
# Per-sample code also makes small tensors and numbers per sample, and combines the samples'
# results one by one; three things keep those from costing one call per sample:
# - a number that differs per sample where an arithmetic op meets a float tensor (`pred -
#   target_value`) is a VALUES argument: the signature keeps its type only, and the batched op
#   gets the samples' numbers as one tensor (rules.py, `Elementwise`);
# - `tensor(data)`, `zeros`, `ones` and `full` of numbers are lazy CREATIONS (`Create` in
#   rules.py): their batch builds one tensor of all the samples' rows;
# - a chain of adds over samples (`total = total + loss`, Python's `sum(losses)`) whose
#   running totals nobody else reads is folded into one sum of the gathered terms before the
#   flush schedules (`fold_add_chains`, schedulers.py).


# The roles of arguments (NOTE [Autobatch]); a batching rule reads them (signature.ArgInfo).
SHARED = "shared"  # the same tensor for every sample: used as it is
SAMPLE = "sample"  # a tensor per sample (pending or data): stacked into (batch, *shape)
RAW = "raw"  # a storage per sample (embedding indices): stacked, no autograd involved
CONST = "const"  # not a tensor: equal in every op of a batch
VALUES = "values"  # Python data per sample (a number, a creation's list): listed, one per op


class Pending:
    """Result `nr` of a `LazyOp`, and (weakly) the placeholder that stands for it and that
    placeholder's storage object. `value` is the op's output once it ran alone; a result of a
    batched op is row `op.row` of that batch's output instead (execute.py)."""

    __slots__ = ("op", "nr", "key", "tensor_ref", "data_ref", "value", "readers")

    def __init__(self, op: LazyOp, nr: int, key: tuple, placeholder: Tensor) -> None:
        self.op = op
        self.nr = nr
        self.key = key  # (shape, dtype): the signature entry of an argument that is this value
        self.tensor_ref = weakref.ref(placeholder)
        self.data_ref = weakref.ref(placeholder._data)
        self.value: Tensor | None = None
        self.readers = 0  # how many arguments of lazy ops it is (at least: schedulers.py)


class LazyOp:
    """`function.apply(*args)` for one sample, recorded but not run.

    `args` are the arguments as given, except that each placeholder is replaced by its
    `Pending` (so that the lazy graph holds no placeholder alive); `inputs` lists those
    positions and `producers` the ops that make them. `depth` is 0 for an op that reads no
    pending value, else 1 + the largest depth of its producers. `mode` is (grad_enabled,
    inference) when it was recorded; the batched op runs in the same mode.

    What the schedulers read (schedulers.py): `signature` (ops with equal signatures may run as
    one batch; None: this op always runs alone), `producers`, `depth` and `matmul_like`
    (matrix products gain the most from larger batches: the agenda defers them on ties).
    """

    __slots__ = ("function", "args", "inputs", "producers", "kind", "signature", "depth",
                 "matmul_like", "mode", "ctx", "outputs", "batch", "row", "folded")  # fmt: skip

    def __init__(self, function: type, args: Sequence, inputs: Sequence[int],
                 producers: Sequence[LazyOp], kind: OpKind, depth: int,
                 mode: tuple[bool, bool], ctx: BackwardNode | None) -> None:  # fmt: skip
        self.function = function
        self.args = args
        self.inputs = inputs
        self.producers = producers
        self.kind = kind
        self.signature = kind.index if kind.rule is not None else None
        self.depth = depth
        self.matmul_like = kind.matmul_like
        self.mode = mode
        self.ctx = ctx  # the placeholders' grad_fn until they become rows (None: no grad)
        self.outputs: list[Pending] = []
        self.batch: int | None = None  # where the flush runs it: which batch,
        self.row: int | None = None  # and which row of the batched result (None: alone)
        self.folded = 1  # how many recorded ops it stands for (an AddChain: its adds)

    def __repr__(self) -> str:
        return f"<LazyOp {self.function.__name__} depth={self.depth}>"


def placeholder_storage(template: torch.Tensor) -> torch.Tensor:
    """A new storage object for one placeholder: the template (a scalar expanded to the output
    shape) under a new torch tensor object, so that `set_` can re-point it alone later."""
    return template.detach()


def template_for(shape: tuple, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """What a placeholder holds until its op runs: NaN for floating dtypes (so that a value read
    by mistake shows), zero otherwise, expanded (no memory) to `shape`."""
    fill = float("nan") if dtype.is_floating_point or dtype.is_complex else 0
    return torch.full((), fill, dtype=dtype, device=device).expand(shape)
