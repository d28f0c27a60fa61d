"""What lost batching in an `autobatch.batch()` block, and what to write instead.

`autobatch.stats().lost` lists `LostBatching` records (stats.py) and `str(stats())` prints them,
as `torch._dynamo.explain` prints graph breaks: per cause and line of user code, how often, and
the fix. The recorder (recorder.py) owns one `Explainer` per block and calls it at three places:
when a signature is first met, when a flush starts, and when a flush has run.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from minitorch.autobatch.lazy import CONST, RAW, SAMPLE, SHARED
from minitorch.autobatch.signature import const_key
from minitorch.autobatch.stats import (
    DEPENDENT_CHAIN,
    NO_RULE,
    SHAPES_DIFFER,
    VALUE_READ,
    LostBatching,
    Stats,
)

if TYPE_CHECKING:
    from minitorch.autobatch.lazy import LazyOp
    from minitorch.autobatch.signature import OpKind

# NOTE [Explaining lost batching]
# Ops of one signature run as one call unless something keeps them apart. Four things do, and
# each is found where finding it is cheap:
# - VALUE READ: a flush forced inside the block (`.item()`, `float(t)`, `if t:`, `print(t)`,
#   `.tolist()`, an in-place op, backward, an op whose output shape depends on values). Ops
#   recorded after it cannot join the batches before it, so it counts once an op is recorded
#   after it (the next flush that has ops to run); a read after the last op loses nothing.
# - DEPENDENT CHAIN: an op that ran alone though it has a batching rule, because it waited for
#   an op of its own signature that ran alone too (reading back through ops that ran alone):
#   `total = total + loss` over the samples, `h = (h + x).tanh()` carried from sample to
#   sample, or the levels of the deepest tree that no other tree reaches. Each such op is one
#   call more than one batch would have made. Found by the flush, from its schedule. In a
#   flush that a read cut short (forced by a read that counts, or the first after one) every
#   op waits for its own kind, as the other samples are in other flushes: the read is the
#   cause, and only the read is reported.
# - NO BATCHING RULE: a signature whose op has no rule, or arguments its rule cannot batch: each
#   op runs alone. Counted when a flush runs two or more of one signature.
# - SHAPES DIFFER: ops of one line of user code, on the same shared tensors, whose signatures
#   differ only in per-sample shapes or in numbers (`x.tanh()` on lengths 3, 5, 7; a `stack`
#   of 5 or of 6 steps; `h * depth`): a batch per signature. Counted as the calls beyond those
#   the line's commonest signature needed.
# Recording must stay cheap (autobatch spends a few microseconds per op), so no frame is walked
# per op. The user line (the innermost frame outside the minitorch package) is taken once per
# signature, when its OpKind is made, and once per forced flush. So the ops of a chain, a
# signature without a rule or a shape that differs are reported at the line that recorded the
# FIRST op of their signature in the block (the same op written on two lines shows the first).

# Frames that are not the user's: minitorch's own, and contextlib's (`with unrecorded(...)`).
_NOT_USER = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # minitorch/
    contextlib.__file__,
)
_UNKNOWN = ("?", 0)

# What to write instead of a forced flush, by what forced it (the first pattern that matches
# the flush's reason, as recorder.py words it).
_READ_ADVICE = (
    (r"^(item|float|int|tolist|numpy|index)\(\)",
     "keep it a tensor and read it after the block"),
    (r"^bool\(\)", "decide with tensor ops (`minitorch.where`) or after the block"),
    (r"^(repr|format)\(\)", "print after the block"),
    (r"^in-place op", "write it out of place (`h = h + x`, not `h += x`)"),
    (r"backward", "call backward() after the block"),
    (r"output shape could not be found|storage of a pending tensor",
     "use a fixed-shape form (`minitorch.where`, a multiply by the mask) or do it after the "
     "block"),
    (r"alias of a pending tensor", "use the tensor itself; take `.detach()` after the block"),
    (r"", "do it after the block"),
)  # fmt: skip
_CHAIN_ADVICE = (
    "collect the values in a list and combine them once (`minitorch.stack(losses).sum()`); "
    "the last steps of a deeper or longer sample run alone (bucket samples by depth or length)"
)
_NO_RULE_ADVICE = (
    "compute it once after the block on the stacked results, or write it with ops that batch"
)
_SHAPES_ADVICE = (
    "pad to one length or bucket samples by shape; pass a per-sample number as a tensor"
)


def user_line() -> tuple[str, int]:
    """(file, line) of the innermost frame outside the minitorch package: the user's code."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_NOT_USER):
        frame = frame.f_back
    if frame is None:
        return _UNKNOWN
    return frame.f_code.co_filename, frame.f_lineno


class Explainer:
    """Finds what lost batching in one block and keeps it in `stats.lost` (NOTE [Explaining
    lost batching]). The recorder calls `new_kind`, `flush_started` and `flush_ran`."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        self._lines: dict[int, tuple[str, int]] = {}  # id(kind) -> line of its first op
        self._records: dict[tuple, LostBatching] = {}  # (cause, what or name, file, line)
        self._read: tuple[str, tuple[str, int]] | None = None  # forced flush, no op after yet
        self._families: dict[int, tuple] = {}  # id(kind) -> its family (_family)
        # The chains of a flush cut short by a read are the read's doing (NOTE): skipped after
        # a read, and taken back from the flush that a read forced once that read counts.
        self._after_read = False
        self._forced = False
        self._chains_of_forced: list[tuple[LostBatching, int]] = []

    def new_kind(self, kind: OpKind) -> None:
        """A signature is met for the first time: remember the user line that recorded it."""
        self._lines[id(kind)] = user_line()

    def flush_started(self, reason: str | None) -> None:
        """A flush with ops to run starts; `reason` is why, if it was forced inside the block."""
        self._after_read = self._read is not None
        if self._read is not None:  # ops were recorded after that forced flush: it cost batches
            what, (file, line) = self._read
            self._add(VALUE_READ, what, what, file, line, 1, _read_advice(what))
            self._read = None
            for record, count in self._chains_of_forced:
                self._take_back(record, count)
        self._chains_of_forced = []
        self._forced = reason is not None
        if reason is not None:
            # "item() at x.py:3": the record shows where, with the source line.
            self._read = (re.sub(r" at \S+:\d+$", "", reason), user_line())

    def flush_ran(self, batches: Sequence[Sequence[LazyOp]]) -> None:
        """Read one flush's schedule (each op's `batch` and `row` set) for the causes it shows."""
        kinds: dict[int, OpKind] = {}
        alone_without_rule: dict[int, int] = {}  # id(kind) -> ops run alone
        chained: dict[int, int] = {}  # id(kind) -> ops that waited for one of their kind
        calls: dict[tuple, dict[int, int]] = {}  # family -> id(kind) -> calls
        for batch in batches:
            first = batch[0]
            kind = first.kind
            key = id(kind)
            kinds[key] = kind
            if kind.rule is None:
                alone_without_rule[key] = alone_without_rule.get(key, 0) + len(batch)
                continue
            if len(batch) == 1 and _waits_for_its_kind(first):
                chained[key] = chained.get(key, 0) + 1
            per_kind = calls.setdefault(self._family(first), {})
            per_kind[key] = per_kind.get(key, 0) + 1
        for key, count in chained.items() if not self._after_read else ():
            file, line = self._lines.get(key, _UNKNOWN)
            record = self._add(DEPENDENT_CHAIN, kinds[key].name, None, file, line, count,
                               _CHAIN_ADVICE)  # fmt: skip
            if self._forced:
                self._chains_of_forced.append((record, count))
        for key, count in alone_without_rule.items():
            if count >= 2:
                kind = kinds[key]
                file, line = self._lines.get(key, _UNKNOWN)
                what = f"{kind.name}: {kind.reason}"
                self._add(NO_RULE, what, what, file, line, count, _NO_RULE_ADVICE)
        for per_kind in calls.values():
            if len(per_kind) < 2:
                continue
            extra = sum(per_kind.values()) - max(per_kind.values())
            kind = kinds[next(iter(per_kind))]
            file, line = self._lines.get(id(kind), _UNKNOWN)
            what = _describe_signatures([kinds[i] for i in per_kind])
            self._add(SHAPES_DIFFER, what, kind.name, file, line, extra, _SHAPES_ADVICE)

    def _family(self, op: LazyOp) -> tuple:
        """What an op's signature is without its per-sample shapes and numbers: the op, the line
        that first recorded its signature, its shared tensors and other constants. Ops of one
        family whose signatures differ could have batched but for their shapes or numbers."""
        kind = op.kind
        family = self._families.get(id(kind))
        if family is not None:
            return family
        parts: list = [kind.name, self._lines.get(id(kind), _UNKNOWN)]
        for info, value in zip(kind.args, op.args):
            if info.role == SAMPLE or info.role == RAW:
                part = (info.role, info.dtype)
                if parts[-1] == part:  # any number of them in a row (cat, stack)
                    continue
            elif info.role == SHARED:
                part = (SHARED, id(value))
            elif type(value) is int or type(value) is float:
                part = type(value)
            else:
                part = const_key(value)
            parts.append(part)
        family = self._families[id(kind)] = tuple(parts)
        return family

    def _add(self, cause: str, what: str, key: str | None, file: str, line: int, count: int,
             advice: str) -> LostBatching:  # fmt: skip
        """Count `count` more of (cause, key, file, line); a record keyed by None collects the
        names of the ops (`what`) that share its line."""
        record = self._records.get((cause, key, file, line))
        if record is None:
            source = linecache.getline(file, line).strip() if line else ""
            record = LostBatching(cause, what, 0, file, line, source, advice)
            self._records[(cause, key, file, line)] = record
            self.stats.lost.append(record)
        elif key is None and what not in record.what.split(", "):
            record.what += f", {what}"
        record.count += count
        return record

    def _take_back(self, record: LostBatching, count: int) -> None:
        record.count -= count
        if record.count <= 0:
            self.stats.lost.remove(record)
            self._records = {k: r for k, r in self._records.items() if r is not record}


def _waits_for_its_kind(op: LazyOp, budget: int = 64) -> bool:
    """Does `op` (which ran alone) read, directly or through ops that ran alone, an op of its
    own signature that ran alone? Looks at `budget` ops at most."""
    kind = op.kind
    todo = list(op.producers)
    seen: set[int] = set()
    while todo and budget > 0:
        producer = todo.pop()
        budget -= 1
        if producer.row is not None or id(producer) in seen:  # ran in a batch, or seen
            continue
        if producer.kind is kind:
            return True
        seen.add(id(producer))
        todo += producer.producers
    return False


def _read_advice(what: str) -> str:
    for pattern, advice in _READ_ADVICE:
        if re.search(pattern, what):
            return advice
    return _READ_ADVICE[-1][1]


def _describe_signatures(kinds: list[OpKind], most: int = 3) -> str:
    """What differs between the signatures of one family, e.g. "Tanh with 3 signatures: [3];
    [5]; [7]": per signature, its per-sample shapes (equal ones in a row counted: "[1, 8] x 5")
    and the constant numbers that are not the same in all of them."""
    numbers: dict[int, set] = {}  # position -> the numbers found there
    for kind in kinds:
        for position, info in enumerate(kind.args):
            if info.role == CONST and (type(info.value) is int or type(info.value) is float):
                numbers.setdefault(position, set()).add(info.value)
    described = []
    for kind in kinds[:most]:
        runs: list[list] = []  # [text, how many in a row]
        for position, info in enumerate(kind.args):
            if info.role == SAMPLE or info.role == RAW:
                text = str(list(info.shape))
            elif len(numbers.get(position, ())) > 1:  # a number that differs (not a dim)
                text = repr(info.value)
            else:
                continue
            if runs and runs[-1][0] == text:
                runs[-1][1] += 1
            else:
                runs.append([text, 1])
        described.append(", ".join(t if n == 1 else f"{t} x {n}" for t, n in runs))
    more = ", ..." if len(kinds) > most else ""
    return f"{kinds[0].name} with {len(kinds)} signatures: {'; '.join(described)}{more}"
