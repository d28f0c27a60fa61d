"""Moving rows between batches: the two ops that carry values (and gradients) from the batch
that made them to the batches that read them.

After a batch ran, sample i's result is row i of the batched result (NOTE [Autobatch] in
lazy.py). A later batch needs, for one argument, one row per sample, in its own sample order,
possibly from several earlier batches. Because the whole schedule is known before anything
runs, the executor knows every reader of a batched result in advance, and moves rows in two
steps:
1. `SplitRows`: right after a batch ran, its result is cut ONCE into one piece per reader:
   the rows that reader needs, in the reader's order (a view when they are consecutive, else one
   `index_select`). All its readers' gradients come back into one node, so backward costs one
   pass over the result, however many batches read from it. The same op gives the single rows
   that placeholders become, and that ops running alone read.
2. `GatherRows`: a reader whose argument comes from several pieces (several earlier batches,
   or data tensors stacked together) interleaves them into its sample order.
A reader whose rows are all the rows of one result, in order, uses that result as it is.

Both are ordinary Functions whose backward is the scatter-add that mirrors them, written with
minitorch ops under `create_graph=True` (NOTE [Fused ops: one backward formula, two ways to run
it] in ops/fused.py); they are the "gather" and "scatter-add" of notebook 6.
"""

from __future__ import annotations

import torch

from minitorch.autograd.function import Function
from minitorch.ops.fused import plain_backward
from minitorch.ops.indexing import IndexAdd, IndexSelect
from minitorch.tensor import Tensor


class SplitRows(Function):
    """`SplitRows.apply(source, groups)`: piece k = `source[groups[k]]`, where a group is an
    int (one row: a view without the row dim), a `slice` of consecutive rows (a view) or an
    int64 storage of row indices (a copy, by `index_select`).

    Backward gets the gradients of all pieces at once (None for a piece nobody used) and adds
    each one into the rows it came from: one zero tensor of the source's shape in all, and a
    row used by two readers gets both gradients."""

    node_name = "SplitRowsBackward"

    @staticmethod
    def forward(ctx, source, groups):
        ctx.groups, ctx.shape = groups, source.shape
        ctx.set_materialize_grads(False)
        data = source._data
        pieces = []
        for group in groups:
            if isinstance(group, torch.Tensor):
                pieces.append(Tensor._make(data.index_select(0, group)))
            else:
                pieces.append(source._view(data[group]))
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        if plain_backward():
            total = None
            for grad, group in zip(grads, ctx.groups):
                if grad is None:
                    continue
                if total is None:
                    total = grad._data.new_zeros(ctx.shape)
                if isinstance(group, torch.Tensor):
                    total.index_add_(0, group, grad._data)
                else:
                    total[group] += grad._data
            return (None if total is None else Tensor._make(total)), None
        total = None  # create_graph: the same sum, recorded
        for grad, group in zip(grads, ctx.groups):
            if grad is None:
                continue
            if not isinstance(group, torch.Tensor):  # a row or a slice: as a list of rows
                group = torch.arange(ctx.shape[0], device=grad.device)[group].reshape(-1)
                grad = grad.reshape(len(group), *ctx.shape[1:])
            part = IndexAdd.apply(grad, 0, group, ctx.shape)
            total = part if total is None else total + part
        return total, None


class GatherRows(Function):
    """`GatherRows.apply(positions, size, *pieces)`: a tensor of `size` rows whose rows
    `positions[k]` (an int64 storage) are the rows of `pieces[k]`, in order. Backward hands
    each piece the gradient rows at its positions."""

    node_name = "GatherRowsBackward"

    @staticmethod
    def forward(ctx, positions, size, *pieces):
        ctx.positions = positions
        first = pieces[0]._data
        out = first.new_empty((size, *first.shape[1:]))
        for where, piece in zip(positions, pieces):
            out.index_copy_(0, where, piece._data)
        return Tensor._make(out)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad[2:]
        return (
            None,
            None,
            *(
                IndexSelect.apply(grad, 0, where) if need else None
                for where, need in zip(ctx.positions, needs)
            ),  # fmt: skip
        )
