"""A small profiler: which minitorch ops ran, how often, and how long their forward took.

    with minitorch.autograd.profiler.profile() as prof:
        with minitorch.autograd.profiler.record_function("my_block"):
            y = (x * 2).sin().sum()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5))

While a `profile` is open, `Function.apply` (function.py) runs every op's forward through
`profile.run_forward`, which times it under the op's Function name (`Mul`, `Sin`, `Sum`; PyTorch
shows its own kernels, `aten::mul`). `record_function(name)` times a block of code under `name`.
Ranges nest: an op that runs inside a `record_function` block (or inside another op's forward)
is its child. Each range keeps its *total* time, and its *self* time, the total minus the time
of its children. `key_averages()` groups the ranges by name and `table()` prints them with
PyTorch's columns. Backward formulas are minitorch ops too, so ops that run during
`backward()` are counted under their own names.

Only CPU wall-clock times, names and call counts are recorded. PyTorch's other options (shapes,
memory, stacks, FLOPs, CUDA activity) are accepted so that tutorial code runs, and ignored.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from minitorch.autograd import function as _function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class FunctionEvent:
    """One timed range: an op's forward or a `record_function` block. Times in microseconds."""

    # Only CPU time is measured; sorting by PyTorch's device columns sorts by zeros.
    device_time_total = self_device_time_total = 0.0

    def __init__(self, name: str, start_us: float) -> None:
        self.name = self.key = name
        self.start_us = start_us
        self.cpu_time_total = 0.0  # the whole range
        self.children_time = 0.0  # the part spent in ranges nested inside it
        self.count = 1

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - self.children_time

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent name={self.name} cpu_time_total={_format_time(self.cpu_time_total)} "
            f"self_cpu_time_total={_format_time(self.self_cpu_time_total)}>"
        )


class FunctionEventAvg:
    """The ranges of one name added up: `count`, `cpu_time_total`, `self_cpu_time_total`
    (microseconds) and `cpu_time`, the average total per call."""

    device_time_total = self_device_time_total = 0.0

    def __init__(self, key: str) -> None:
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, event: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} "
            f"self_cpu_time={_format_time(self.self_cpu_time_total)} "
            f"cpu_time={_format_time(self.cpu_time)} count={self.count}>"
        )


class EventList(list):
    """A list of events (or of averages) that can print itself as PyTorch's table."""

    def key_averages(self) -> EventList:
        """One `FunctionEventAvg` per name, in the order the names first appeared."""
        averages: dict[str, FunctionEventAvg] = {}
        for event in self:
            averages.setdefault(event.key, FunctionEventAvg(event.key)).add(event)
        return EventList(averages.values())

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_name_column_width: int = 55,
        header: str | None = None,
        top_level_events_only: bool = False,
        time_unit: str | None = None,
        **ignored: Any,
    ) -> str:
        """PyTorch's table: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg and
        # of Calls, one row per event (at most `row_limit`), sorted by the attribute `sort_by`
        (largest first; e.g. "self_cpu_time_total", "cpu_time_total", "count")."""
        return _build_table(self, sort_by, row_limit, max_name_column_width, header, time_unit)

    def __str__(self) -> str:
        return self.table()


class profile:
    """`with profile() as prof:` records every minitorch op run inside the block (and every
    `record_function` range). Then `prof.key_averages().table(...)`.

    Both PyTorch spellings work: `torch.autograd.profiler.profile(enabled=True, ...)` and
    `torch.profiler.profile(activities=[ProfilerActivity.CPU], ...)`. `schedule` and
    `on_trace_ready` are not supported (NotImplementedError). Profilers do not nest: the one
    opened last records until it closes.
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        activities: Any = None,
        schedule: Any = None,
        on_trace_ready: Any = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
        with_modules: bool = False,
        **ignored: Any,
    ) -> None:
        if schedule is not None or on_trace_ready is not None:
            raise NotImplementedError(
                "minitorch's profiler records one block: schedule= and on_trace_ready= are not "
                "supported"
            )
        self.enabled = enabled
        self._events: list[FunctionEvent] = []
        self._open: list[FunctionEvent] = []  # the ranges that have started and not ended
        self._previous: Any = None
        self._running = False

    # Starting and stopping -----------------------------------------------------------------------
    def __enter__(self) -> profile | None:
        if not self.enabled:
            return None  # as in PyTorch: `with profile(enabled=False) as p` sets p to None
        if self._running:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start recording (what `with` does on entry)."""
        if not self.enabled or self._running:
            return
        self._previous = _function._profiler
        _function._profiler = self
        self._running = True

    def stop(self) -> None:
        """Stop recording (what `with` does on exit)."""
        if not self._running:
            return
        _function._profiler = self._previous
        self._previous = None
        self._running = False

    def step(self) -> None:
        """PyTorch's step marks the end of one iteration for a schedule; without one it is a
        no-op."""

    # Timing ranges -------------------------------------------------------------------------------
    def begin_range(self, name: str) -> None:
        event = FunctionEvent(name, time.perf_counter_ns() / 1000)
        self._open.append(event)
        self._events.append(event)

    def end_range(self) -> None:
        event = self._open.pop()
        event.cpu_time_total = time.perf_counter_ns() / 1000 - event.start_us
        if self._open:
            self._open[-1].children_time += event.cpu_time_total

    def run_forward(self, cls: type, ctx: Any, args: tuple) -> Any:
        """The hook point: `Function.apply` calls this instead of `cls.forward(ctx, *args)`."""
        self.begin_range(cls.__name__)
        try:
            return cls.forward(ctx, *args)
        finally:
            self.end_range()

    # Results -------------------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every range recorded, in the order they started."""
        return EventList(self._events)

    def key_averages(
        self, group_by_input_shape: bool = False, group_by_stack_n: int = 0
    ) -> EventList:
        """The events grouped by name (see `EventList.key_averages`)."""
        return self.events().key_averages()

    def table(self, *args: Any, **kwargs: Any) -> str:
        return self.key_averages().table(*args, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self._events)

    def __str__(self) -> str:
        return str(self.events())


class record_function(contextlib.ContextDecorator):
    """`with record_function("name"):` times the block as one range called `name` (its ops are
    its children). Usable as a decorator too. Does nothing when no profiler is open."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._profiler: profile | None = None

    def __enter__(self) -> record_function:
        self._profiler = _function._profiler
        if self._profiler is not None:
            self._profiler.begin_range(self.name)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._profiler is not None:
            self._profiler.end_range()
            self._profiler = None


# ----------------------------------------------------------------------------------------------
# The table, as torch.autograd.profiler_util._build_table prints it
# ----------------------------------------------------------------------------------------------
def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def _format_in(time_us: float, unit: str | None) -> str:
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(unit or "")
    return _format_time(time_us) if scale is None else f"{time_us / scale:.3f}{unit}"


def _build_table(
    events: list,
    sort_by: str | None,
    row_limit: int,
    max_name_column_width: int,
    header: str | None,
    time_unit: str | None,
) -> str:
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(
            events, key=lambda e: getattr(e, sort_by.replace("cuda", "device")), reverse=True
        )
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    headers = [
        "Name",
        "Self CPU %",
        "Self CPU",
        "CPU total %",
        "CPU total",
        "CPU time avg",
        "# of Calls",
    ]
    widths = [name_width] + [12] * (len(headers) - 1)
    row_format = "".join("{:>" + str(w) + "}  " for w in widths)
    separator = "".join("-" * w + "  " for w in widths)
    total = sum(e.self_cpu_time_total for e in events)

    lines = []
    if header is not None:
        lines += ["=" * (sum(w + 2 for w in widths) - 2), header]
    lines += [separator, row_format.format(*headers), separator]
    if row_limit >= 0:  # PyTorch: a negative row_limit prints every row
        events = events[:row_limit]
    for event in events:
        name = event.key
        if len(name) >= max_name_column_width - 3:
            name = name[: max_name_column_width - 3] + "..."
        lines.append(
            row_format.format(
                name,
                _format_share(event.self_cpu_time_total, total),
                _format_in(event.self_cpu_time_total, time_unit),
                _format_share(event.cpu_time_total, total),
                _format_in(event.cpu_time_total, time_unit),
                _format_in(event.cpu_time, time_unit),
                event.count,
            )
        )
    lines += [separator, f"Self CPU time total: {_format_time(total)}"]
    return "\n".join(lines) + "\n"
