"""`Stats`: what one `autobatch.batch()` block did, and where its time went."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Stats:
    """Counters of one `with autobatch.batch():` block (read them with `autobatch.stats()`).

    - `ops_recorded`: ops put into the lazy graph (one per op per sample);
    - `shared_ops`: ops on parameters only, run once when first met (`W.t()`), and
      `shared_reused`: how many times such a result was handed out again;
    - `calls`: op calls the flushes made to run the lazy graph (one per batch; an op that ran
      alone is a batch of one); `batched_ops`: lazy ops that ran in batches of two or more,
      `ran_alone`: the others (so `batched_ops + ran_alone == ops_recorded` after the block);
      `largest_batch`;
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
      batched ops, rows). `overhead_seconds` is the first two: what autobatch adds.
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

    @property
    def overhead_seconds(self) -> float:
        """Recording plus scheduling: the time batching costs on top of running the ops."""
        return self.record_seconds + self.schedule_seconds

    @property
    def unbatched_ops(self) -> int:
        """How many ops ran one sample at a time because they could not batch."""
        return sum(self.unbatched.values())

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
        lines += [f"  flush: {reason}" for reason in self.flush_reasons]
        lines += [f"  unbatched: {n} x {reason}" for reason, n in self.unbatched.items()]
        return "\n".join(lines)
