"""`Stats`: what one `autobatch.batch()` block did, where its time went, and what lost batching
(`LostBatching` records, found by explain.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# The causes of lost batching, in the order `str(stats())` lists them (NOTE [Explaining lost
# batching] in explain.py), and what a record's `count` counts for each.
VALUE_READ = "value read"
DEPENDENT_CHAIN = "dependent chain"
NO_RULE = "no batching rule"
SHAPES_DIFFER = "shapes differ"
CAUSES = (VALUE_READ, DEPENDENT_CHAIN, NO_RULE, SHAPES_DIFFER)
_UNITS = {
    VALUE_READ: ("flush", "flushes"),
    DEPENDENT_CHAIN: ("op ran after another of its kind", "ops ran one after another"),
    NO_RULE: ("op ran one sample at a time", "ops ran one sample at a time"),
    SHAPES_DIFFER: ("more call", "more calls"),
}


@dataclass
class LostBatching:
    """One reason why a block made more calls than it could have, at one line of user code.

    - `cause`: one of `CAUSES`: "value read" (a flush forced inside the block), "dependent
      chain" (ops that could only run one after another), "no batching rule" (an op without a
      rule, or with arguments its rule cannot batch), "shapes differ" (ops from one line that
      did not batch because their per-sample shapes or numbers differ);
    - `what`: the read, or the op(s), e.g. "item()" or "Linear with 3 signatures: ...";
    - `count`: how often, in the cause's unit: forced flushes; ops that waited for an op of
      their own kind (each one call more); ops run one sample at a time; calls more than the
      line's commonest signature needed;
    - `file`, `line`, `source`: the user code (the innermost frame outside minitorch) and its
      text (empty when it cannot be read); `where` is `file.py:line`;
    - `advice`: what to write instead.
    """

    cause: str
    what: str
    count: int
    file: str
    line: int
    source: str
    advice: str

    @property
    def where(self) -> str:
        """`name.py:line` (`cell:line` for a notebook cell)."""
        if not self.line:
            return "an unknown line"
        directory, name = os.path.split(self.file)
        if os.path.basename(directory).startswith("ipykernel_") or name.startswith("<ipython"):
            name = "cell"
        return f"{name}:{self.line}"

    @property
    def unit(self) -> str:
        """What `count` counts, e.g. "flushes"."""
        one, many = _UNITS.get(self.cause, ("time", "times"))
        return one if self.count == 1 else many

    def __str__(self) -> str:
        source = f": {self.source}" if self.source else ""
        return (
            f"{self.cause}, {self.count} {self.unit}: {self.what}\n"
            f"  at {self.where}{source}\n"
            f"  instead: {self.advice}"
        )


@dataclass
class Stats:
    """Counters of one `with autobatch.batch():` block (read them with `autobatch.stats()`).

    - `ops_recorded`: ops put into the lazy graph (one per op per sample; a creation of
      numbers, `tensor([[x]])`, is one too);
    - `shared_ops`: ops on parameters only, run once when first met (`W.t()`), and
      `shared_reused`: how many times such a result was handed out again;
    - `calls`: op calls the flushes made to run the lazy graph (one per batch; an op that ran
      alone is a batch of one); `batched_ops`: lazy ops that ran in batches of two or more,
      `ran_alone`: the others (so `batched_ops + ran_alone == ops_recorded` after the block);
      `largest_batch`. A chain of adds run as one sum (NOTE [Add chains] in schedulers.py) is
      one call, its adds counted in `batched_ops`;
    - `flushes`: every flush, that is every time the pending ops were scheduled and run: the
      flush at the end of the block (when ops are pending there) and those forced inside it;
      `forced_flushes`: the ones forced inside the block by reading a pending value, an
      in-place op, backward ... (lost batching opportunities: ops recorded after one cannot
      join the batches before it), with their `flush_reasons`. Exercise 7 of notebook 6
      counts flushes the same way;
    - `gather_bytes`: bytes copied to gather per-sample arguments (slices copy nothing);
    - `unbatched`: ops that ran one sample at a time, by reason (an op without a batching rule
      or with arguments its rule cannot batch);
    - `record_seconds`: time spent in the recorder's hooks (signatures, placeholders);
      `schedule_seconds`: in the scheduler; `run_seconds`: running the batches (gathers,
      batched ops, rows). `overhead_seconds` is the first two: what autobatch adds;
    - `lost`: what lost batching, one `LostBatching` per cause and line of user code, with the
      count and what to write instead (explain.py); empty when everything that could batch
      did. A forced flush is in it once ops were recorded after it.
    """

    scheduler: str
    ops_recorded: int = 0
    shared_ops: int = 0
    shared_reused: int = 0
    calls: int = 0
    batched_ops: int = 0
    ran_alone: int = 0
    largest_batch: int = 0
    flushes: int = 0
    forced_flushes: int = 0
    flush_reasons: list[str] = field(default_factory=list)
    gather_bytes: int = 0
    unbatched: dict[str, int] = field(default_factory=dict)
    record_seconds: float = 0.0
    schedule_seconds: float = 0.0
    run_seconds: float = 0.0
    lost: list[LostBatching] = field(default_factory=list)

    @property
    def overhead_seconds(self) -> float:
        """Recording plus scheduling: the time batching costs on top of running the ops."""
        return self.record_seconds + self.schedule_seconds

    @property
    def unbatched_ops(self) -> int:
        """How many ops ran one sample at a time because they could not batch."""
        return sum(self.unbatched.values())

    def explain(self) -> str:
        """The "lost batching" section of `str(stats)`: each cause with its count, line of user
        code and what to write instead, most costly first within a cause."""
        if not self.lost:
            return "lost batching: nothing (every op that could batch did)"
        order = {cause: i for i, cause in enumerate(CAUSES)}
        records = sorted(self.lost, key=lambda r: (order.get(r.cause, len(order)), -r.count))
        lines = [f"lost batching ({len(records)} {'cause' if len(records) == 1 else 'causes'}):"]
        for record in records:
            first, *rest = str(record).splitlines()
            lines.append(f"- {first}")
            lines += [f"  {line}" for line in rest]
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [
            f"autobatch ({self.scheduler} scheduler)",
            f"  ops recorded        {self.ops_recorded}",
            f"  shared ops          {self.shared_ops} run once, reused {self.shared_reused} times",
            f"  calls               {self.calls} (largest batch {self.largest_batch}; "
            f"{self.batched_ops} ops in batches, {self.ran_alone} alone)",
            f"  flushes             {self.flushes} ({self.forced_flushes} forced inside the "
            "block: lost batching opportunities)",
            f"  gather copies       {self.gather_bytes / 1e6:.3f} MB",
            f"  time                record {self.record_seconds * 1e3:.1f} ms, schedule "
            f"{self.schedule_seconds * 1e3:.1f} ms, run {self.run_seconds * 1e3:.1f} ms",
        ]
        lines += [f"  unbatched: {n} x {reason}" for reason, n in self.unbatched.items()]
        lines += [f"  {line}" for line in self.explain().splitlines()]
        return "\n".join(lines)
