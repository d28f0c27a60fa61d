"""Running the scheduled batches, and turning placeholders into rows (NOTE [Autobatch]).

Each batch is one call: of the op itself when the batch has one op or no rule (its pending
arguments are first made into real tensors), or of the batching rule on gathered arguments.
Every call is an ordinary `Function.apply`, run in the grad mode the ops were recorded in.

Before running anything, `_plan` reads the whole schedule: which batch and row each op gets,
and for every argument of every batch, which rows of which earlier batches it reads. So when a
batch has run, its results are cut at once into the pieces their readers need (gather.py).
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autobatch.gather import GatherRows, SplitRows
from minitorch.autobatch.lazy import CONST, RAW, SAMPLE, VALUES, LazyOp, Pending
from minitorch.autobatch.rules import AddChain
from minitorch.autobatch.stats import Stats
from minitorch.autograd import grad_mode
from minitorch.autograd.function import BackwardNode
from minitorch.ops.shape import stack
from minitorch.tensor import Tensor


def _runs_batched(ops: list[LazyOp]) -> bool:
    return len(ops) > 1 and ops[0].kind.rule is not None


# NOTE [One torch thread for small batches]
# The batched ops of per-sample code are small (a tree's level: some thousand rows of 64-128
# features), and with more than one torch thread each of them enters parallel regions (torch's
# grain is 32,768 elements; MKL threads its products). On an idle machine that gains little;
# on a busy one every barrier waits for the OS to run the other thread: with 2 threads on a
# busy 2-core machine the flush of bench_autobatch's Tree-RNN (26 calls) took 55 ms against 16
# ms with one thread (the per-sample ops of eager code are below the grain, never parallel).
# So a flush whose batched outputs are all below `_THREADED_OUTPUTS` elements runs with one
# torch thread, and the setting is restored after it; larger batches keep torch's threads.
_THREADED_OUTPUTS = 1 << 20


def _largest_output(batches: list[list[LazyOp]]) -> int:
    """The most elements any batch's first output has (the samples' rows together)."""
    largest = 0
    for ops in batches:
        outputs = ops[0].kind.outputs
        if outputs:
            elements = len(ops) * outputs[0].shape.numel()
            if elements > largest:
                largest = elements
    return largest


class Executor:
    """Runs the batches of one flush."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self._results: dict[tuple, Tensor] = {}  # (batch, output nr) -> the batched result
        # (batch, output nr) -> its readers: ((reader batch, position), rows, reader positions)
        self._readers: dict[tuple, list] = {}
        # (batch, position) -> the pieces of that argument made so far: (piece, positions)
        self._pieces: dict[tuple, list] = {}
        # (batch, position) -> positions of samples whose value is not a row of a batch
        self._others: dict[tuple, list] = {}

    def run(self, batches: list[list[LazyOp]]) -> None:
        self._plan(batches)
        threads = torch.get_num_threads()
        one_thread = threads > 1 and _largest_output(batches) < _THREADED_OUTPUTS
        if one_thread:  # NOTE [One torch thread for small batches]
            torch.set_num_threads(1)
        try:
            self._run(batches)
        finally:
            if one_thread:
                torch.set_num_threads(threads)

    def _run(self, batches: list[list[LazyOp]]) -> None:
        for number, ops in enumerate(batches):
            kind = ops[0].kind
            try:
                if _runs_batched(ops):
                    self._run_batch(number, ops)
                else:
                    for op in ops:
                        if op.function is AddChain:
                            self._run_chain(op)
                        else:
                            self._run_alone(op)
            except (RuntimeError, ValueError, IndexError, TypeError) as error:
                shapes = ", ".join(str(list(a.shape)) for a in kind.args if a.role != CONST)
                raise type(error)(
                    f"autobatch: {kind.name} on a batch of {len(ops)} samples (each with "
                    f"argument shapes {shapes}) failed: {error}"
                ) from error

    # Planning -------------------------------------------------------------------------------------
    def _plan(self, batches: list[list[LazyOp]]) -> None:
        for number, ops in enumerate(batches):
            if _runs_batched(ops):
                for i, op in enumerate(ops):
                    op.batch = number
                    op.row = i
            else:
                for op in ops:
                    op.batch = number
                    op.row = None
        for number, ops in enumerate(batches):
            if not _runs_batched(ops):
                continue
            for position, info in enumerate(ops[0].kind.args):
                if info.role == SAMPLE:
                    self._plan_argument(number, position, ops)

    def _plan_argument(self, number: int, position: int, ops: list[LazyOp]) -> None:
        """Note which rows of which earlier batches argument `position` of batch `number`
        reads, in its sample order (nothing to plan when every sample passed the same tensor)."""
        first = ops[0].args[position]
        if type(first) is not Pending and all(op.args[position] is first for op in ops):
            return
        reader = (number, position)
        if type(first) is Pending and first.op.row is not None:
            # The common case: every row from one batched result (one pass to check).
            batch, nr, rows = first.op.batch, first.nr, []
            for op in ops:
                value = op.args[position]
                if type(value) is not Pending or value.nr != nr:
                    break
                producer = value.op
                if producer.batch != batch or producer.row is None:
                    break
                rows.append(producer.row)
            else:
                self._pieces[reader] = []
                self._others[reader] = []
                self._readers.setdefault((batch, nr), []).append((reader, rows, range(len(rows))))
                return
        groups: dict[tuple, tuple[list, list]] = {}  # (batch, output nr) -> (rows, positions)
        others = []
        for j, op in enumerate(ops):
            value = op.args[position]
            if type(value) is Pending and value.op.row is not None:
                key = (value.op.batch, value.nr)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = ([], [])
                group[0].append(value.op.row)
                group[1].append(j)
            else:
                others.append(j)
        self._pieces[reader] = []
        self._others[reader] = others
        for key, (rows, positions) in groups.items():
            self._readers.setdefault(key, []).append((reader, rows, positions))

    # A batch --------------------------------------------------------------------------------------
    def _run_batch(self, number: int, ops: list[LazyOp]) -> None:
        first, size = ops[0], len(ops)
        kind = first.kind
        args = list(first.args)
        batched = [False] * len(args)
        for position, info in enumerate(kind.args):
            if info.role == SAMPLE or info.role == RAW:
                args[position], batched[position] = self._argument(number, position, ops)
            elif info.role == VALUES:  # listed: the rule makes what it needs of them
                args[position] = [op.args[position] for op in ops]
        if not any(batched):  # every sample passed the same tensors: give one the batch dim
            position = next(
                (p for p, info in enumerate(kind.args) if info.role in (SAMPLE, RAW)), None
            )
            if position is not None:  # (a creation has no tensor argument)
                args[position] = args[position].expand(size, *args[position].shape)
                batched[position] = True
        with _mode(first.mode):
            outputs = kind.rule.run(first.function, args, batched, size, kind)
        self.stats.calls += 1
        self.stats.batched_ops += size
        self.stats.largest_batch = max(self.stats.largest_batch, size)
        for nr, (out, meta) in enumerate(zip(outputs, kind.outputs)):
            if out._data.shape != (size, *meta.shape):
                raise RuntimeError(
                    f"the batching rule made output {nr} of shape {list(out.shape)}, expected "
                    f"{[size, *meta.shape]} (a bug in minitorch/autobatch/rules.py)"
                )
            self._hand_out_rows(ops, nr, out)
            self._cut_for_readers(number, nr, out, first.mode)

    def _argument(self, number: int, position: int, ops: list[LazyOp]) -> tuple[Any, bool]:
        """The batch's argument at `position`, from its pieces (and stacked other values), and
        whether it has the batch dim (False: every sample passed this same tensor)."""
        pieces = self._pieces.pop((number, position), None)
        if pieces is None:  # not planned: the same tensor for all, or raw storages
            values = [op.args[position] for op in ops]
            first = values[0]
            if all(v is first for v in values):
                return first, False
            stacked = torch.stack(values)  # raw storages (indices): no autograd involved
            self.stats.gather_bytes += stacked.nbytes
            return stacked, True
        others = self._others.pop((number, position))
        if others:
            stacked = stack([_value(ops[j].args[position]) for j in others])
            self.stats.gather_bytes += stacked._data.nbytes
            pieces.append((stacked, others))
        if len(pieces) == 1:  # one piece holds every sample's row, in order
            return pieces[0][0], True
        device = pieces[0][0]._data.device
        positions = tuple(torch.tensor(p, device=device) for _, p in pieces)
        out = GatherRows.apply(positions, len(ops), *(piece for piece, _ in pieces))
        self.stats.gather_bytes += out._data.nbytes
        return out, True

    def _cut_for_readers(self, number: int, nr: int, out: Tensor, mode: tuple) -> None:
        """Cut output `nr` of batch `number` into the pieces its readers need (gather.py)."""
        readers = self._readers.pop((number, nr), None)
        if not readers:
            return
        size = out.shape[0]
        if len(readers) == 1 and readers[0][1] == list(range(size)):
            reader, _, positions = readers[0]
            self._pieces[reader].append((out, positions))
            return
        groups = []
        for _, rows, _ in readers:
            start = rows[0]
            if rows == list(range(start, start + len(rows))):
                groups.append(slice(start, start + len(rows)))
            else:
                groups.append(torch.tensor(rows, device=out.device))
                self.stats.gather_bytes += len(rows) * (out._data.nbytes // size)
        with _mode(mode):
            pieces = SplitRows.apply(out, tuple(groups))
        for (reader, _, positions), piece in zip(readers, pieces):
            self._pieces[reader].append((piece, positions))

    def _hand_out_rows(self, ops: list[LazyOp], nr: int, out: Tensor) -> None:
        """Row i of `out` is output `nr` of `ops[i]`: re-point the storage of each placeholder
        that is still around at its row, and make live placeholders rows of `out` for autograd
        too (one `SplitRows` for all of them)."""
        self._results[(ops[0].batch, nr)] = out
        data = out._data
        storage, offset, step = data.untyped_storage(), data.storage_offset(), data.stride(0)
        shape, stride = data.shape[1:], data.stride()[1:]
        live = []
        results = [op.outputs[nr] for op in ops]
        # A storage nobody refers to any more (None) needs no row: later batches read `out`.
        for i, placeholder_data in enumerate([r.data_ref() for r in results]):
            if placeholder_data is None:
                continue
            placeholder_data.set_(storage, offset + i * step, shape, stride)
            placeholder = results[i].tensor_ref()
            if placeholder is not None:
                live.append((i, placeholder, ops[i].ctx))
        if live:
            with _mode(ops[0].mode):
                rows = SplitRows.apply(out, tuple(i for i, _, _ in live))
            for (_, placeholder, ctx), row in zip(live, rows):
                _become(placeholder, row, ctx)

    # One op alone ---------------------------------------------------------------------------------
    def _run_alone(self, op: LazyOp) -> None:
        args = list(op.args)
        needed: dict[tuple, list] = {}  # batched results this op reads rows of -> positions
        for position in op.inputs:
            pending = args[position]
            placeholder = pending.tensor_ref()
            if pending.op.row is None:  # made by an op that ran alone: its output
                args[position] = pending.value
            elif placeholder is not None:  # a live placeholder is that row already
                args[position] = placeholder
            else:
                needed.setdefault((pending.op.batch, pending.nr), []).append(position)
        for key, positions in needed.items():  # one SplitRows per batched result read
            rows = tuple(args[p].op.row for p in positions)
            with _mode(op.mode):
                pieces = SplitRows.apply(self._results[key], rows)
            for p, piece in zip(positions, pieces):
                args[p] = piece
        with _mode(op.mode):
            outputs = op.function.apply(*args)
        self._give_results(op, outputs if isinstance(outputs, tuple) else (outputs,))
        self.stats.calls += 1
        self.stats.ran_alone += 1
        self.stats.largest_batch = max(self.stats.largest_batch, 1)
        if op.kind.rule is None:
            reason = f"{op.kind.name}: {op.kind.reason}"
            self.stats.unbatched[reason] = self.stats.unbatched.get(reason, 0) + 1

    def _run_chain(self, op: LazyOp) -> None:
        """A folded chain of adds (NOTE [Add chains] in schedulers.py): the terms that are rows
        of one batched result are taken as one piece and summed over its rows, then the pieces,
        the other terms and the numbers are added."""
        rows_of: dict[tuple, list[int]] = {}  # (batch, output nr) -> rows that are terms
        tensors, number = [], 0
        for term in op.args:
            if type(term) is Pending:
                if term.op.row is None:
                    tensors.append(term.value)
                else:
                    rows_of.setdefault((term.op.batch, term.nr), []).append(term.op.row)
            elif isinstance(term, Tensor):
                tensors.append(term)
            else:
                number += term
        with _mode(op.mode):
            parts = []
            for key, rows in rows_of.items():
                result = self._results[key]
                start = rows[0]
                if rows == list(range(start, start + len(rows))):
                    group: Any = slice(start, start + len(rows))
                else:
                    group = torch.tensor(rows, device=result._data.device)
                (piece,) = SplitRows.apply(result, (group,))
                parts.append(piece.sum(0))
            if len(tensors) > 1:
                parts.append(stack(tensors).sum(0))
            elif tensors:
                parts.append(tensors[0])
            total = parts[0]
            for part in parts[1:]:
                total = total + part
            if number:
                total = total + number
        self._give_results(op, (total,))
        self.stats.calls += 1
        self.stats.batched_ops += op.folded  # its adds ran as one call
        self.stats.largest_batch = max(self.stats.largest_batch, op.folded)

    def _give_results(self, op: LazyOp, outputs: tuple) -> None:
        """The outputs of an op that ran alone become its placeholders' values and links."""
        for pending, out in zip(op.outputs, outputs):
            pending.value = out
            data = pending.data_ref()
            if data is not None:
                out_data = out._data
                data.set_(out_data.untyped_storage(), out_data.storage_offset(),
                          out_data.shape, out_data.stride())  # fmt: skip
                placeholder = pending.tensor_ref()
                if placeholder is not None:
                    _become(placeholder, out, op.ctx)


def _value(value: Any) -> Tensor:
    """A sample's value that is not a row of a batch: data, or the output of an op run alone."""
    return value.value if type(value) is Pending else value


def _become(placeholder: Tensor, value: Tensor, pending_ctx: BackwardNode | None) -> None:
    """Give a placeholder (whose storage already shows the value) the autograd links of
    `value`, and move the tensor hooks and retain_grad() registered on it meanwhile."""
    if placeholder._requires_grad and value.grad_fn is None and not value._requires_grad:
        # requires_grad_() on a placeholder of a creation: as eagerly, a leaf of its own (its
        # storage is the row already).
        return
    old_nr = placeholder._output_nr
    placeholder.grad_fn = value.grad_fn
    placeholder._output_nr = value._output_nr
    placeholder._requires_grad = value._requires_grad
    placeholder._version_counter = value._version_counter
    placeholder._is_view = value._is_view
    placeholder._base = value._base
    placeholder._view_fn = value._view_fn
    node = value.grad_fn
    if pending_ctx is None or node is None or not pending_ctx.__dict__:
        return
    hooks = pending_ctx.__dict__.get("_tensor_prehooks", {}).get(old_nr)
    if hooks:
        node._tensor_hooks_for(placeholder._output_nr).extend(hooks)
    if old_nr in pending_ctx.__dict__.get("_retained", {}):
        node._retain_grad_of(placeholder)


class _mode:
    """Run a block in a recorded (grad_enabled, inference) mode."""

    __slots__ = ("mode", "previous")

    def __init__(self, mode: tuple[bool, bool]) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        state = grad_mode._state
        self.previous = (state.grad_enabled, state.inference)
        state.grad_enabled, state.inference = self.mode

    def __exit__(self, *exc_info: Any) -> None:
        state = grad_mode._state
        state.grad_enabled, state.inference = self.previous
