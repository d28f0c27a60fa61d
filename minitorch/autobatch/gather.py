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
it] in ops/fused.py); they are the "gather" and "scatter-add" of notebook 6. The plain
scatter-add (`add_rows`) avoids torch's `index_add_`, which stalls with several torch threads
(NOTE [Scatter-add without index_add_]).
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
    each one into the rows it came from (`add_rows`): one tensor of the source's shape in all,
    and a row used by two readers gets both gradients."""

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
            listed = [(g._data, group) for g, group in zip(grads, ctx.groups) if g is not None]
            if not listed:
                return None, None
            return Tensor._make(add_rows(ctx.shape, listed)), None
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


def add_rows(shape: torch.Size, listed: list[tuple]) -> torch.Tensor:
    """zeros(`shape`) with each `(grad, group)` of `listed` added into rows `group` (SplitRows'
    groups: an int, a slice or an int64 storage of rows), without `index_add_`.

    NOTE [Scatter-add without index_add_]: torch's CPU `index_add_` (and `scatter_add_` with
    an index expanded along the row) on dim 0 of a contiguous tensor takes a path made for
    graph networks (`cpu_scatter_reduce_expanded_index`): a parallel radix sort of the index,
    then three `parallel_for` loops of grain 1. With one torch thread that is fast; with two,
    every call, however small, enters several parallel regions (and barriers inside the sort),
    and on a busy machine each barrier waits until the OS runs the other thread: a call that
    takes 0.1 ms took up to 0.65 s (benchmarks/bench_autobatch_gather.py measures it). So with
    one torch thread the rows go by `index_add_` (there it is the fastest), and with more by
    ops that split work across threads only above torch's grain size (32,768 elements), with
    no cross-thread reduction:
    - rows that no other listed row repeats (the usual case: each value of a tree has one
      reader) are COPIED, `index_copy_` per group, into zeros (into an empty tensor when they
      cover every row);
    - otherwise the rows are taken in rounds, the k-th occurrence of each row in round k: a
      round's rows are distinct, so it adds by `index_select` + add + `index_copy_`.
    Slices and single rows then add in place (`total[group] += grad`), as before. Every
    gradient row is added exactly once, so the sums are exact (in another order than
    index_add_'s only where a row is read more than once). The create_graph backward still
    records `IndexAdd` (second derivatives are rare)."""
    indexed = [(grad, group) for grad, group in listed if isinstance(group, torch.Tensor)]
    rest = [(grad, group) for grad, group in listed if not isinstance(group, torch.Tensor)]
    grad0 = listed[0][0]
    rows = shape[0]
    if not indexed or torch.get_num_threads() == 1:  # one thread: index_add_ is the fastest
        total = grad0.new_zeros(shape)
        for grad, group in indexed:
            total.index_add_(0, group, grad)
    else:
        index = indexed[0][1] if len(indexed) == 1 else torch.cat([g for _, g in indexed])
        counts = torch.bincount(index, minlength=rows)
        if index.numel() == 0 or int(counts.max()) <= 1:  # distinct rows: copies
            covered = index.numel() == rows  # a permutation: every row is written
            total = grad0.new_empty(shape) if covered else grad0.new_zeros(shape)
            for grad, group in indexed:
                total.index_copy_(0, group, grad.reshape(len(group), *shape[1:]))
        else:
            total = grad0.new_zeros(shape)
            values = torch.cat([grad.reshape(len(group), *shape[1:]) for grad, group in indexed])
            _add_in_rounds(total, index, values)
    for grad, group in rest:
        total[group] += grad
    return total


def _add_in_rounds(total: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> None:
    """`total[index[i]] += values[i]` for all i, where `index` repeats rows: round k adds the
    k-th occurrence of each row (a stable sort ranks the occurrences), whose rows are distinct."""
    order = torch.argsort(index, stable=True)
    ranked = index.index_select(0, order)
    positions = torch.arange(len(index), device=index.device)
    starts = torch.ones_like(ranked, dtype=torch.bool)
    starts[1:] = ranked[1:] != ranked[:-1]
    rank = positions - torch.where(starts, positions, 0).cummax(0).values
    for k in range(int(rank.max()) + 1):
        take = order[rank == k]
        rows = index.index_select(0, take)
        values_k = values.index_select(0, take)
        if k:
            values_k += total.index_select(0, rows)
        total.index_copy_(0, rows, values_k)


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
