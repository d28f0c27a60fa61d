"""minitorch.memory: exact byte counts, checked against sums over the tensors known to be alive.

Each test measures a baseline (after a garbage collection, so that leftovers of earlier tests do
not disappear in the middle), creates tensors of known sizes, and compares the figures with the
sizes it knows. `saved_bytes` is also compared with what PyTorch's own saved-tensor hooks see for
the same program. Node memory (`graph_bytes`, `node_bytes`), which no storage figure sees, is
compared with what `tracemalloc` measures of the same graphs.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import memory

F64 = 8  # bytes per float64 element
tensor_module = __import__("sys").modules["minitorch.tensor"]


def baseline() -> int:
    gc.collect()
    return memory.memory_allocated()


def test_live_bytes_count_each_storage_once():
    start = baseline()
    a = minitorch.zeros(10, 20, dtype=torch.float64)
    b = minitorch.ones(7, dtype=torch.float32)
    views = [a.t(), a[3], a.detach(), a.reshape(200), a.data]
    assert memory.memory_allocated() - start == 200 * F64 + 7 * 4
    assert memory.storage_bytes([a, b, views]) == 200 * F64 + 7 * 4
    assert memory.memory_allocated("cpu") - start == 200 * F64 + 7 * 4
    assert memory.memory_stats()["cpu"]["minitorch"] == memory.memory_allocated()
    del a, views
    assert memory.memory_allocated() - start == 7 * 4
    del b
    assert memory.memory_allocated() == start


def make_mlp(n: int, m: int, k: int, x_requires_grad: bool = False):
    gen = torch.Generator().manual_seed(n + 10 * m + 100 * k)
    values = [torch.randn(*s, generator=gen, dtype=torch.float64) for s in [(n, m), (k, m), (k,)]]
    return values


def step(lib, x, w, b):
    hidden = (x @ w.t() + b).tanh()
    return (hidden * hidden.sigmoid()).sum() + hidden.exp().mean()


def torch_saved_bytes(x, w, b, include_parameters: bool) -> int:
    """What PyTorch's own saved-tensor hooks see for `step`: distinct storages, parameters'
    storages left out unless asked for."""
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step(torch, x, w, b)
    # "parameters": leaves that require grad (x too, when it does)
    parameters = {p.untyped_storage().data_ptr() for p in (x, w, b) if p.requires_grad}
    return sum(n for ptr, n in storages.items() if include_parameters or ptr not in parameters)


@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.booleans())
def test_saved_bytes_agree_with_pytorch(n, m, k, x_requires_grad):
    x, w, b = make_mlp(n, m, k)
    tx, tw, tb = x.clone().requires_grad_(x_requires_grad), w.clone(), b.clone()
    tw.requires_grad_()
    tb.requires_grad_()
    mx = minitorch.tensor(x.tolist(), dtype=torch.float64, requires_grad=x_requires_grad)
    mw = minitorch.tensor(w.tolist(), dtype=torch.float64, requires_grad=True)
    mb = minitorch.tensor(b.tolist(), dtype=torch.float64, requires_grad=True)
    loss = step(minitorch, mx, mw, mb)
    for include in (False, True):
        assert memory.saved_bytes(loss, include_parameters=include) == torch_saved_bytes(
            tx, tw, tb, include
        )


def test_saved_bytes_exact_on_a_known_graph():
    x = minitorch.randn(8, 4, dtype=torch.float64)
    w = minitorch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    hidden = (x @ w.t()).relu()  # Mm saves x; Relu saves its result
    loss = (hidden * hidden).sum()  # Mul saves hidden twice: one storage
    assert memory.saved_bytes(loss) == (8 * 4 + 8 * 6) * F64
    x.requires_grad_()
    x2 = x * 2  # a non-leaf that requires grad: Mm now also saves w.t(), the parameter's storage
    loss = (x2 @ w.t()).sum()
    assert memory.saved_bytes(loss) == 8 * 4 * F64
    assert memory.saved_bytes(loss, include_parameters=True) == (8 * 4 + 6 * 4) * F64
    loss = (x @ w.t()).sum()  # x is a leaf that requires grad: counted with the parameters
    assert memory.saved_bytes(loss) == 0
    loss.backward()
    assert memory.saved_bytes(loss, include_parameters=True) == 0


def test_memory_returns_to_baseline_after_backward_and_del():
    w = minitorch.randn(50, 40, dtype=torch.float64, requires_grad=True)
    x = minitorch.randn(30, 40, dtype=torch.float64)
    start = baseline()
    hidden = (x @ w.t()).tanh()
    loss = hidden.sum()
    # hidden (30x50) is alive and saved by Tanh; the Mm output died; loss is 1 element.
    assert memory.memory_allocated() - start == (30 * 50 + 1) * F64
    assert memory.saved_bytes(loss) == (30 * 40 + 30 * 50) * F64 - 30 * 40 * F64 + 30 * 40 * F64
    del hidden
    assert memory.memory_allocated() - start == (30 * 50 + 1) * F64, "the graph keeps hidden"
    loss.backward()
    assert memory.memory_allocated() - start == (1 + 50 * 40) * F64, "saved freed, w.grad kept"
    del loss
    w.grad = None
    assert memory.memory_allocated() == start


def test_retain_graph_keeps_saved_tensors_until_the_output_is_dropped():
    w = minitorch.randn(100, dtype=torch.float64, requires_grad=True)
    start = baseline()
    loss = w.exp().sum()
    loss.backward(retain_graph=True)
    assert memory.saved_bytes(loss) == 100 * F64
    assert memory.memory_allocated() - start == (1 + 100 + 100) * F64  # loss, exp result, grad
    del loss
    assert memory.memory_allocated() - start == 100 * F64
    w.grad = None


@pytest.mark.parametrize("keep_graph", [True, False], ids=["total+=loss", "loss.item()"])
def test_accumulating_the_loss_tensor_keeps_every_graph(keep_graph):
    w = minitorch.randn(64, dtype=torch.float64, requires_grad=True)
    x = minitorch.randn(64, dtype=torch.float64)
    start = baseline()
    total = 0.0
    used = []
    for _ in range(4):
        loss = ((w * x).tanh() ** 2).sum()
        total += loss if keep_graph else loss.item()
        del loss
        used.append(memory.memory_allocated() - start)
    growth = [b - a for a, b in zip(used, used[1:])]
    if keep_graph:
        # each iteration's graph keeps its tanh result (saved by Tanh and Pow); Mul saves x,
        # which exists anyway, and the running total stays one element
        assert growth == [64 * F64] * 3
    else:
        assert growth == [0, 0, 0] and used[-1] == 0
    del total


def add_chain(n: int) -> minitorch.Tensor:
    """A graph of n + 2 nodes: AccumulateGrad, Mul, then n identical AddBackward0 nodes. Every
    intermediate result dies: only the nodes stay, and they save nothing."""
    w = minitorch.randn(4, dtype=torch.float64, requires_grad=True)
    h = w * 1.0
    for _ in range(n):
        h = h + 1.0
    return h


def test_graph_bytes_are_bytes_per_node_times_nodes():
    graphs = [add_chain(n) for n in (100, 200, 300)]
    assert [len(memory.graph_nodes(g)) for g in graphs] == [102, 202, 302]
    sizes = [memory.graph_bytes(g) for g in graphs]
    per_node = (sizes[1] - sizes[0]) / 100
    assert sizes[2] - sizes[1] == sizes[1] - sizes[0], "identical nodes cost the same"
    assert 300 < per_node < 3000, f"{per_node} bytes per AddBackward0 node"
    assert memory.graph_bytes(graphs[0].detach()) == 0, "a tensor without a graph"
    assert memory.node_bytes(memory.graph_nodes(graphs[1]) * 2) == sizes[1], "each node once"


def traced_growth_and_count(build):
    """What tracemalloc sees allocated by `build()` and still alive, and `graph_bytes` of what
    `build` returned (counted inside the traced window: reading a node's `__dict__` may create
    it, NOTE [Node memory])."""
    build()  # warm up: caches and first-time allocations are not the graph's
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = build()
        counted = memory.graph_bytes(out)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return growth, counted


def backwarded_mlp_steps(n: int):
    """n training steps summed with `total += loss`: the saved tensors are freed by each
    backward, the nodes of every step stay reachable from the total."""
    gen = torch.Generator().manual_seed(1)
    w1, w2 = (
        minitorch.tensor(torch.randn(*s, generator=gen).tolist(), dtype=torch.float64)
        for s in [(16, 8), (1, 16)]
    )
    w1.requires_grad_()
    w2.requires_grad_()
    x = minitorch.randn(32, 8, dtype=torch.float64)

    def build():
        total = 0.0
        for _ in range(n):
            loss = ((x @ w1.t()).tanh() @ w2.t()).pow(2).mean()
            loss.backward()
            total += loss
        return total

    return build


@pytest.mark.parametrize(
    "build", [lambda: add_chain(2000), backwarded_mlp_steps(300)], ids=["adds", "mlp-steps"]
)
def test_graph_bytes_agree_with_tracemalloc(build):
    growth, counted = traced_growth_and_count(build)
    assert 0.85 * growth <= counted <= 1.05 * growth, (
        f"graph_bytes {counted}, tracemalloc saw {growth} bytes allocated"
    )


@pytest.mark.parametrize("keep_graph", [True, False], ids=["total+=loss", "loss.item()"])
def test_running_loss_total_leaks_nodes_not_storage(keep_graph):
    """The issue's loop: backward frees each step's saved tensors, so the storages grow by
    nothing, while `total += loss` keeps every step's nodes: linear growth in node memory."""
    w = minitorch.randn(64, dtype=torch.float64, requires_grad=True)
    x = minitorch.randn(64, dtype=torch.float64)
    total = 0.0
    storages, nodes = [], []
    for _ in range(5):
        w.grad = None
        loss = ((w * x).tanh() ** 2).sum()
        loss.backward()
        total += loss if keep_graph else loss.item()
        del loss
        gc.collect()
        storages.append(memory.memory_allocated())
        nodes.append(memory.node_bytes(memory.live_nodes()))
    assert [b - a for a, b in zip(storages, storages[1:])] == [0, 0, 0, 0]
    growth = [b - a for a, b in zip(nodes, nodes[1:])]
    if keep_graph:
        assert growth[0] > 0 and growth == [growth[0]] * 4, f"node bytes per step: {growth}"
        assert 4 * growth[0] < memory.graph_bytes(total) < 6 * growth[0], "5 steps' nodes"
    else:
        assert growth == [0, 0, 0, 0]
    del total
    w.grad = None


def test_live_nodes_are_the_nodes_of_referenced_graphs():
    gc.collect()
    before = {id(n) for n in memory.live_nodes()}
    out = add_chain(10)
    nodes = memory.graph_nodes(out)
    alive = {id(n) for n in memory.live_nodes()}
    assert {id(n) for n in nodes} <= alive and len(alive - before) == len(nodes) == 12
    del out, nodes
    gc.collect()
    assert {id(n) for n in memory.live_nodes()} <= before


def test_tracker_peak_is_exact():
    start = baseline()
    n = 1000
    with memory.track() as mem:
        assert mem.start_bytes == start
        a = minitorch.zeros(n, dtype=torch.float64)
        b = minitorch.zeros(2 * n, dtype=torch.float64)
        assert mem.current_bytes == memory.memory_allocated() == start + 3 * n * F64
        del a
        c = minitorch.zeros(3 * n, dtype=torch.float64)
        assert mem.current_bytes == memory.memory_allocated()
        del b, c
    assert mem.peak_bytes == start + 5 * n * F64
    assert mem.peak_by_device["cpu"] == start + 5 * n * F64
    assert mem.end_bytes == start
    assert "peak" in mem.summary()


def test_tracker_sees_older_tensors_die_and_storage_replaced():
    old = minitorch.zeros(500, dtype=torch.float64)
    start = baseline()
    with memory.track() as mem:
        del old
        assert mem.current_bytes == start - 500 * F64
        t = minitorch.zeros(10, dtype=torch.float64)
        t.data = minitorch.zeros(40, dtype=torch.float64)  # the 10-element storage is dropped
        assert mem.current_bytes == memory.memory_allocated() == start - 460 * F64
    assert mem.peak_bytes == start
    del t


def test_trackers_nest_and_cost_nothing_outside():
    assert tensor_module._memory_watch is None
    start = baseline()
    with memory.track() as outer:
        big = minitorch.zeros(1000, dtype=torch.float64)
        del big
        with memory.track() as inner:
            small = minitorch.zeros(10, dtype=torch.float64)
        assert tensor_module._memory_watch is not None
    assert tensor_module._memory_watch is None
    assert outer.peak_bytes == start + 1000 * F64
    assert inner.peak_bytes == inner.start_bytes + 10 * F64 == start + 10 * F64
    del small


def test_timeline_rises_in_forward_and_falls_in_backward():
    gen = torch.Generator().manual_seed(0)
    ws = [minitorch.tensor(torch.randn(64, 64, generator=gen).tolist()) for _ in range(4)]
    for w in ws:
        w.requires_grad_()
    x = minitorch.randn(32, 64)
    baseline()
    with memory.track(timeline=True) as mem:
        h = x
        for w in ws:
            h = (h @ w.t()).relu()
        loss = h.sum()
        del h
        loss.backward()
        del loss
    samples = mem.samples
    forward = [s for s in samples if s.phase == "forward"]
    backward = [s for s in samples if s.phase == "backward"]
    assert forward and backward
    assert max(s.bytes for s in samples) == mem.peak_bytes
    top_of_forward = max(s.bytes for s in forward if s.step < backward[0].step)
    assert top_of_forward - mem.start_bytes >= 4 * 32 * 64 * 4, "forward keeps 4 activations"
    assert mem.end_bytes - mem.start_bytes == 4 * 64 * 64 * 4, "after backward: the grads"
    assert {"Relu", "MatMul"} <= {s.op for s in forward}
    assert {"ReluBackward0", "MmBackward0"} <= {s.op for s in backward}
    for previous, sample in zip(samples, samples[1:]):
        assert sample.bytes == previous.bytes + sample.delta
    ax = memory.plot_timeline(mem)
    assert len(ax.lines) == 1 and len(ax.collections) == 2
    for w in ws:
        w.grad = None


def test_pack_hook_that_keeps_the_tensor_itself_leaks_until_gc():
    """Storing the undetached output in a pack hook makes node -> packed -> output -> node a
    cycle: `del` does not free it, only the garbage collector does (as in PyTorch)."""
    w = minitorch.randn(256, dtype=torch.float64, requires_grad=True)
    start = baseline()
    gc.disable()
    try:
        for keep in ("detached", "itself"):
            pack = (lambda t: t.detach()) if keep == "detached" else (lambda t: t)
            with minitorch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                y = w.exp()
            del y
            leaked = memory.memory_allocated() - start
            assert leaked == (0 if keep == "detached" else 256 * F64), keep
    finally:
        gc.enable()
    gc.collect()
    assert memory.memory_allocated() == start


@pytest.mark.cuda
def test_cuda_figures_sit_next_to_torch_cuda_memory_allocated():
    start = baseline()
    with memory.track() as mem:
        a = minitorch.zeros(1024, 1024, device="cuda")
        stats = memory.memory_stats()
        device = str(a.device)
        assert memory.memory_allocated("cuda") - memory.memory_allocated(device) == 0
        assert stats[device]["minitorch"] >= 1024 * 1024 * 4
        assert stats[device]["torch.cuda.memory_allocated"] >= 1024 * 1024 * 4
        del a
    assert mem.peak_bytes - start == 1024 * 1024 * 4
    assert mem.torch_cuda_peak_bytes >= 1024 * 1024 * 4
    assert "torch.cuda.max_memory_allocated" in mem.summary()
