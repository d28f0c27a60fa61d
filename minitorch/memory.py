"""Where the memory goes: exact byte counts of minitorch storage, peaks, and what a graph keeps.

Most figures count *storages* (the torch tensors minitorch uses as n-d arrays), each once, even
when several tensors (views, `detach()` aliases, parameters and their transposes) share one.
The graph's nodes are memory too, Python objects outside every storage: `node_bytes` counts them.

- `memory_allocated(device=None)`: bytes of all storages that live minitorch tensors use now.
- `memory_stats()`: the same per device; on CUDA also `torch.cuda.memory_allocated()`.
- `storage_bytes(tensors)`: bytes of the distinct storages behind the given tensors.
- `saved_bytes(t, include_parameters=False)`: bytes the graph behind `t` keeps alive through
  tensors saved for backward.
- `graph_bytes(t)`: bytes of the Python objects that make up the nodes of the graph behind `t`
  (each node, its edges, shapes and saved-tensor records); `node_bytes(live_nodes())` is the
  same for every node alive. A graph that backward has freed still costs this much while
  something references it: the `total += loss` leak grows here, not in the storages.
- `track(timeline=False)`: a context manager measuring the peak inside a block, optionally with a
  timeline of every allocation and release; `plot_timeline()` draws it.

Nothing here costs anything while no `track()` block runs: live figures come from a scan of the
objects Python's garbage collector knows (`gc.get_objects()`), and only a running tracker asks
minitorch to report each new tensor (one check in `Tensor._init`). A tracker learns that a
tensor died from a weak reference, so its running total is exact at every allocation, which is
where peaks happen.
"""

from __future__ import annotations

import gc
import sys
import types
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from minitorch.autograd import engine as _engine_module
from minitorch.autograd import function as _function_module
from minitorch.autograd.function import AccumulateGrad, Node, SavedTensor
from minitorch.autograd.graph import saved_tensors
from minitorch.tensor import Tensor

# `minitorch.tensor` is also the name of the function that makes tensors, so fetch the module.
_tensor_module = sys.modules["minitorch.tensor"]

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "MemoryTracker",
    "Sample",
    "graph_bytes",
    "graph_nodes",
    "live_nodes",
    "live_tensors",
    "memory_allocated",
    "memory_stats",
    "node_bytes",
    "plot_timeline",
    "saved_bytes",
    "storage_bytes",
    "track",
]

StorageKey = tuple[str, int]  # (device, address of the storage's first byte)


def _storage_of(data: torch.Tensor) -> tuple[StorageKey, int]:
    """The key identifying the storage behind a torch tensor, and that storage's size in bytes."""
    storage = data.untyped_storage()
    return (str(data.device), storage.data_ptr()), storage.nbytes()


def _device_name(device: Any) -> str:
    """A device's name; plain "cuda" means the current CUDA device, as in torch.cuda."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return str(device)


# ----------------------------------------------------------------------------------------------
# Live memory, from a scan of all objects
# ----------------------------------------------------------------------------------------------
def live_tensors() -> list[Tensor]:
    """Every minitorch tensor that exists now (including `.grad`s, saved tensors, parameters and
    tensors only kept by reference cycles that the garbage collector has not freed yet)."""
    # type() rather than isinstance(): some objects compute `__class__` lazily, with warnings.
    return [obj for obj in gc.get_objects() if issubclass(type(obj), Tensor)]


def storage_bytes(tensors: Iterable[Any], device: Any = None) -> int:
    """Bytes of the distinct storages behind `tensors` (minitorch or torch tensors; nested lists
    and tuples are searched), each storage counted once, optionally only those on `device`."""
    wanted = None if device is None else _device_name(device)
    sizes = _storage_sizes(list(tensors))
    return sum(n for (dev, _), n in sizes.items() if wanted is None or dev == wanted)


def memory_allocated(device: Any = None) -> int:
    """Bytes of storage that live minitorch tensors use now, on `device` (all devices if None).
    Shared storage is counted once. Exact: it sums over every tensor that exists."""
    return storage_bytes(live_tensors(), device)


def memory_stats() -> dict[str, dict[str, int]]:
    """Per device: `{"minitorch": bytes}`; CUDA devices also get
    `"torch.cuda.memory_allocated"`, torch's own figure (it includes torch's temporaries and any
    storage not wrapped by a minitorch tensor, and rounds blocks up to 512 bytes)."""
    stats: dict[str, dict[str, int]] = {}
    for (device, _), nbytes in _storage_sizes(live_tensors()).items():
        entry = stats.setdefault(device, {"minitorch": 0})
        entry["minitorch"] += nbytes
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            entry = stats.setdefault(f"cuda:{index}", {"minitorch": 0})
            entry["torch.cuda.memory_allocated"] = torch.cuda.memory_allocated(index)
    return stats


def _tensors_in(value: Any) -> Iterable[Any]:
    """The minitorch and torch tensors in a value: a tensor, lists and tuples of them, or an
    object returned by a pack hook that says what it keeps alive through a `kept_tensors()`
    method (checkpoint's placeholders do)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (Tensor, torch.Tensor)):
            yield item
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif hasattr(item, "kept_tensors"):
            stack.append(item.kept_tensors())


def _storage_sizes(value: Any) -> dict[StorageKey, int]:
    """Size of each distinct storage behind the tensors in `value`."""
    sizes: dict[StorageKey, int] = {}
    for t in _tensors_in(value):
        key, nbytes = _storage_of(t._data if isinstance(t, Tensor) else t)
        sizes[key] = nbytes
    return sizes


# ----------------------------------------------------------------------------------------------
# What a graph keeps alive
# ----------------------------------------------------------------------------------------------
def graph_nodes(roots: Any) -> list[Node]:
    """Every node reachable from `roots` (tensors, nodes or a list of them), outputs first."""
    if not isinstance(roots, (list, tuple)):
        roots = [roots]
    start = [r.grad_fn if isinstance(r, Tensor) else r for r in roots]
    seen: dict[Node, None] = {}
    stack = [n for n in start if n is not None][::-1]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = None
        stack.extend(child for child, _ in reversed(node.next_functions) if child is not None)
    return list(seen)


def saved_bytes(t: Any, include_parameters: bool = False) -> int:
    """Bytes that the graph behind `t` keeps alive through tensors saved for backward.

    Walks every node reachable from `t` (a tensor, a node, or a list of them) and adds the size
    of each distinct storage a node saved (or, under saved-tensor hooks, that a pack hook
    returned). With `include_parameters=False`, storages of parameters (leaves that require
    grad, reached through the graph or saved directly) are left out: the graph references them,
    it does not keep them alive. After backward (without `retain_graph`) the figure is 0.
    """
    nodes = graph_nodes(t)
    parameters: set[StorageKey] = set()
    saved: dict[StorageKey, int] = {}
    for node in nodes:
        if isinstance(node, AccumulateGrad):
            parameters.add(_storage_of(node.variable._data)[0])
        for _, value in saved_tensors(node):
            for item in _tensors_in(value):
                key, nbytes = _storage_of(item._data if isinstance(item, Tensor) else item)
                if isinstance(item, Tensor) and item.is_leaf and item.requires_grad:
                    parameters.add(key)
                saved[key] = nbytes
    return sum(n for key, n in saved.items() if include_parameters or key not in parameters)


# ----------------------------------------------------------------------------------------------
# What the nodes themselves cost
# ----------------------------------------------------------------------------------------------
# NOTE [Node memory]
#   A node is a Python object: its attributes hold its edges (`next_functions`), the shapes and
#   dtypes of its inputs and outputs, its sequence number and its saved-tensor records. None of
#   that is a storage, so `memory_allocated` never sees it, yet it lives as long as the graph is
#   referenced, also after backward freed the saved tensors. `node_bytes` adds up, for each
#   node, `sys.getsizeof(node)`, one 8-byte pointer per attribute (Python shares the attribute
#   names among the nodes of a class), and `sys.getsizeof` of every object the node owns, each
#   object once. It leaves out what a node only points to: other nodes (counted as themselves),
#   tensors (their storages are counted by `saved_bytes` and `memory_allocated`) and objects the
#   whole process shares (types, functions, dtypes, strings, None, booleans, small integers).
#   The attributes are read with `gc.get_referents`, not `vars()`, which would make Python 3.11+
#   build a dict for every node it measures (some 60 bytes more each). tests/test_memory.py
#   checks the count against `tracemalloc`, which sees every allocation Python makes: on graphs
#   whose saved tensors are freed the count is a few percent lower (allocator rounding, the
#   header of each node's attribute table, the dict of a node whose `__dict__` was read).
_SHARED = (
    Node,
    Tensor,
    torch.Tensor,
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    torch.dtype,
    str,
    bool,
    type(None),
)
_CONTAINERS = (tuple, list, set, frozenset)  # torch.Size is a tuple


def live_nodes() -> list[Node]:
    """Every graph node that exists now: nodes of graphs something still references (a loss, a
    running total), and nodes only kept by reference cycles the garbage collector has not freed."""
    return [obj for obj in gc.get_objects() if issubclass(type(obj), Node)]


def node_bytes(nodes: Iterable[Node]) -> int:
    """Bytes of the Python objects that make up `nodes`: each node object, its attributes, and
    the tuples, shapes, devices and saved-tensor records it owns, each object counted once.
    Tensors are not included (their storages are what `saved_bytes` and `memory_allocated`
    count). NOTE [Node memory]."""
    seen: set[int] = set()
    total = 0
    for node in nodes:
        if id(node) in seen:
            continue
        seen.add(id(node))
        values = _attribute_values(node)
        total += sys.getsizeof(node) + 8 * len(values)
        for value in values:
            total += _owned_bytes(value, seen)
    return total


def _attribute_values(node: Node) -> list[Any]:
    """The values of a node's instance attributes, read without building its `__dict__`: the
    garbage collector's referents of a node are its attribute values and its class, or its
    class and its `__dict__` when Python has built one."""
    cls = type(node)
    values = [r for r in gc.get_referents(node) if r is not cls]
    if len(values) == 1 and type(values[0]) is dict and values[0] is node.__dict__:
        return list(values[0].values())
    return values


def _owned_bytes(root: Any, seen: set[int]) -> int:
    """Bytes of `root` and of the objects it holds, leaving out shared objects and those in
    `seen` (which this adds to)."""
    total = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SHARED):
            continue
        if type(obj) is int and -5 <= obj <= 256:  # CPython's cached small integers
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, _CONTAINERS):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, SavedTensor):
            stack.extend(getattr(obj, name) for name in SavedTensor.__slots__)
    return total


def graph_bytes(t: Any) -> int:
    """Bytes of the nodes of the graph behind `t` (a tensor, a node, or a list of them):
    `node_bytes(graph_nodes(t))`. Unlike `saved_bytes`, this does not fall to 0 after backward:
    the nodes live as long as something references the graph's output."""
    return node_bytes(graph_nodes(t))


# ----------------------------------------------------------------------------------------------
# Peaks and timelines
# ----------------------------------------------------------------------------------------------
class Sample(NamedTuple):
    """One point of a timeline: after the `step`-th change, `bytes` were allocated in total."""

    step: int
    bytes: int
    delta: int  # bytes allocated (> 0) or released (< 0) by this change
    device: str
    phase: str  # "forward" or "backward" (inside the backward engine)
    op: str  # the op being recorded or the node running in backward, "" if none


class _Ledger:
    """While some tracker runs: which storages live minitorch tensors use, and how many tensors
    use each. A storage counts from its first tensor's creation to its last tensor's death."""

    def __init__(self) -> None:
        self.refs: dict[int, tuple[weakref.ref, StorageKey]] = {}
        self.users: dict[StorageKey, int] = {}
        self.sizes: dict[StorageKey, int] = {}
        self.current: dict[str, int] = {}
        self.trackers: list[MemoryTracker] = []

    def start(self) -> None:
        for t in live_tensors():
            self.add(t, notify=False)

    def add(self, tensor: Tensor, notify: bool = True) -> None:
        ident = id(tensor)
        old = self.refs.get(ident)
        if old is not None and old[0]() is tensor:  # its storage was replaced (`t.data = ...`)
            self._release(old[1], notify)
        key, nbytes = _storage_of(tensor._data)
        ref = weakref.ref(tensor, lambda _, ident=ident, key=key: self._died(ident, key))
        self.refs[ident] = (ref, key)
        count = self.users.get(key, 0)
        self.users[key] = count + 1
        if count == 0:
            self.sizes[key] = nbytes
            self._change(key[0], nbytes, notify)

    def _died(self, ident: int, key: StorageKey) -> None:
        entry = self.refs.get(ident)
        if entry is not None and entry[1] == key and entry[0]() is None:
            del self.refs[ident]
            self._release(key, True)

    def _release(self, key: StorageKey, notify: bool) -> None:
        count = self.users[key] - 1
        if count:
            self.users[key] = count
            return
        del self.users[key]
        self._change(key[0], -self.sizes.pop(key), notify)

    def _change(self, device: str, delta: int, notify: bool) -> None:
        self.current[device] = self.current.get(device, 0) + delta
        if notify:
            for tracker in self.trackers:
                tracker._observe(device, delta)


_ledger: _Ledger | None = None


class MemoryTracker:
    """Measures minitorch storage inside a `with track():` block (see `track`).

    After the block: `start_bytes`, `end_bytes`, `peak_bytes` (all devices together, bytes that
    were live when the block started included), `peak_by_device`, and `samples` (the timeline,
    when asked for). `peak_bytes - start_bytes` is what the block needed on top. On CUDA,
    `torch_cuda_peak_bytes` is `torch.cuda.max_memory_allocated()` over the block.
    """

    def __init__(self, timeline: bool = False) -> None:
        self.timeline = timeline
        self.samples: list[Sample] = []
        self.start_bytes = self.end_bytes = self.peak_bytes = 0
        self.peak_by_device: dict[str, int] = {}
        self.torch_cuda_peak_bytes: int | None = None
        self._running = False

    @property
    def current_bytes(self) -> int:
        """Bytes allocated now (exact while the block runs)."""
        if _ledger is None or not self._running:
            return memory_allocated()
        return sum(_ledger.current.values())

    def __enter__(self) -> MemoryTracker:
        global _ledger
        if _ledger is None:
            _ledger = _Ledger()
            _ledger.start()
            _tensor_module._memory_watch = _ledger.add
        _ledger.trackers.append(self)
        self._running = True
        self.start_bytes = self.peak_bytes = self.current_bytes
        self.peak_by_device = dict(_ledger.current)
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        self.samples = []
        if self.timeline:
            self.samples.append(Sample(0, self.start_bytes, 0, "", "start", ""))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        global _ledger
        self.end_bytes = self.current_bytes
        self._running = False
        if torch.cuda.is_available():
            self.torch_cuda_peak_bytes = torch.cuda.max_memory_allocated()
        if _ledger is not None:
            _ledger.trackers.remove(self)
            if not _ledger.trackers:
                _tensor_module._memory_watch = None
                _ledger.refs.clear()  # drop the weak references (and their callbacks) now
                _ledger = None

    def _observe(self, device: str, delta: int) -> None:
        # No garbage collection while bookkeeping: it could free tensors, and so report a
        # release in the middle of reporting this change.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._record(device, delta)
        finally:
            if collecting:
                gc.enable()

    def _record(self, device: str, delta: int) -> None:
        current = _ledger.current
        total = sum(current.values())
        if total > self.peak_bytes:
            self.peak_bytes = total
        if current[device] > self.peak_by_device.get(device, 0):
            self.peak_by_device[device] = current[device]
        if self.timeline:
            phase, op = _running_op()
            self.samples.append(Sample(len(self.samples), total, delta, device, phase, op))

    def summary(self) -> str:
        """A few lines for people: start, peak and end in MiB (and torch's CUDA peak)."""
        mib = 2**20
        lines = [
            f"minitorch storage: start {self.start_bytes / mib:.2f} MiB, "
            f"peak {self.peak_bytes / mib:.2f} MiB, end {self.end_bytes / mib:.2f} MiB"
        ]
        if self.torch_cuda_peak_bytes is not None:
            lines.append(
                f"torch.cuda.max_memory_allocated: {self.torch_cuda_peak_bytes / mib:.2f} MiB"
            )
        return "\n".join(lines)


def track(timeline: bool = False) -> MemoryTracker:
    """Measure the peak of minitorch storage inside a block::

        with minitorch.memory.track(timeline=True) as mem:
            loss = model(x).sum()
            loss.backward()
        print(mem.peak_bytes - mem.start_bytes)
        minitorch.memory.plot_timeline(mem)

    With `timeline=True` every allocation and release becomes a `Sample` naming the op that
    caused it (the forward op being recorded, or the backward node running). Trackers nest.
    """
    return MemoryTracker(timeline)


def _running_op() -> tuple[str, str]:
    """("backward", node name) inside the backward engine, else ("forward", the op whose forward
    is running, or ""). Found by looking up the Python stack, which only a timeline pays for.

    Locals are read only from short-lived frames (one node's backward or release): reading a
    frame's locals snapshots them into a dict that lives as long as the frame, and would keep
    tensors alive for the whole backward if taken from the engine's main loop."""
    node_frames = {
        _engine_module._call_node.__code__: "node",
        _engine_module._run_accumulate.__code__: "node",
        _function_module.BackwardNode.release_saved.__code__: "self",
    }
    apply_code = _function_module.Function.apply.__func__.__code__
    engine_code = _engine_module._execute.__code__
    op = ""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code in node_frames:
            node = frame.f_locals.get(node_frames[code])
            return "backward", node.name() if isinstance(node, Node) else ""
        if code is engine_code:
            return "backward", ""
        if frame.f_back is not None and frame.f_back.f_code is apply_code:
            op = code.co_qualname.split(".")[0]  # "Mul.forward" -> "Mul"; the outermost wins
        frame = frame.f_back
    return "forward", op


def plot_timeline(samples: MemoryTracker | list[Sample], ax: Axes | None = None,
                  title: str = "minitorch storage over one step") -> Axes:  # fmt: skip
    """Draw a timeline recorded with `track(timeline=True)`: bytes (MiB) after each change,
    forward in blue, backward in orange. Returns the matplotlib Axes."""
    if isinstance(samples, MemoryTracker):
        samples = samples.samples
    if ax is None:
        import matplotlib.pyplot as plt  # a pyplot figure: notebooks display it after the cell

        ax = plt.subplots(figsize=(7, 3.5))[1]
    steps = [s.step for s in samples]
    mib = [s.bytes / 2**20 for s in samples]
    ax.plot(steps, mib, color="0.6", linewidth=0.8, zorder=1)
    for phase, color in (("forward", "tab:blue"), ("backward", "tab:orange")):
        points = [(s.step, s.bytes / 2**20) for s in samples if s.phase == phase]
        if points:
            xs, ys = zip(*points)
            ax.scatter(xs, ys, s=8, color=color, label=phase, zorder=2)
    ax.set_xlabel("allocation / release event")
    ax.set_ylabel("MiB allocated")
    ax.set_title(title)
    if samples:  # a step rises from the start and falls back: the bottom middle stays clear
        ax.legend(loc="lower center")
    return ax
