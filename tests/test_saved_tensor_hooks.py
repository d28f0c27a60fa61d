"""autograd.graph.saved_tensors_hooks and save_on_cpu, compared with torch.autograd.graph's own.

The same program runs on PyTorch and on minitorch (`lib` is either module) under hooks that log
what they see; the logs must agree: which tensors are packed (count and shapes), when pack and
unpack run, what grad mode they run in, and the errors.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch.autograd.graph import saved_tensors


def graph_module(lib):
    return lib.autograd.graph


def leaves(lib, n: int, m: int, k: int):
    gen = torch.Generator().manual_seed(n * 100 + m * 10 + k)
    x = torch.randn(n, m, generator=gen, dtype=torch.float64)
    w = torch.randn(k, m, generator=gen, dtype=torch.float64)
    b = torch.randn(k, generator=gen, dtype=torch.float64)
    x, w, b = (lib.tensor(v.tolist(), dtype=torch.float64) for v in (x, w, b))
    return x, w.requires_grad_(), b.requires_grad_()


def mlp(lib, x, w, b):
    hidden = (x @ w.t() + b).tanh()
    return (hidden * hidden).sum() + hidden.exp().mean() + (w.sin() * b.sigmoid().sum()).sum()


def run_logged(lib, program, n, m, k):
    """Run `program` under logging hooks; return (packed shapes, unpacked count, grads)."""
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.detach()

    def unpack(t):
        unpacked.append(tuple(t.shape))
        return t

    x, w, b = leaves(lib, n, m, k)
    with graph_module(lib).saved_tensors_hooks(pack, unpack):
        loss = program(lib, x, w, b)
    packed_in_forward = list(packed)
    assert unpacked == [], "unpack must not run before backward"
    loss.backward()
    return sorted(packed_in_forward), sorted(unpacked), (w.grad, b.grad), packed


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
def test_same_tensors_are_packed_and_unpacked_as_in_pytorch(n, m, k):
    t_packed, t_unpacked, t_grads, t_all = run_logged(torch, mlp, n, m, k)
    m_packed, m_unpacked, m_grads, m_all = run_logged(minitorch, mlp, n, m, k)
    assert m_packed == t_packed
    assert m_unpacked == t_unpacked
    assert len(m_all) == len(m_packed), "pack must not run during backward"
    for ours, theirs in zip(m_grads, t_grads):
        torch.testing.assert_close(ours._data, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_pack_sees_the_output_itself_with_grad_mode_off(lib):
    x = lib.tensor([0.5, 1.5], requires_grad=True)
    seen = []

    def pack(t):
        seen.append((t.grad_fn is not None, t.requires_grad, lib.is_grad_enabled()))
        return t.detach()

    def unpack(t):
        seen.append(("unpack", lib.is_grad_enabled()))
        return t

    with graph_module(lib).saved_tensors_hooks(pack, unpack):
        y = x.exp()
    assert seen == [(True, True, False)]
    y.sum().backward()
    assert seen[1:] == [("unpack", False)]
    torch.testing.assert_close(x.grad.tolist(), torch.tensor([0.5, 1.5]).exp().tolist())


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_only_the_innermost_hooks_apply(lib):
    outer, inner = [], []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    hooks = graph_module(lib).saved_tensors_hooks
    with hooks(lambda t: outer.append(t.shape) or t.detach(), lambda t: t):
        with hooks(lambda t: inner.append(t.shape) or t.detach(), lambda t: t):
            a = x.sin()
        b = x.cos()
    c = x.tanh()  # no hooks any more
    (a + b + c).sum().backward()
    assert (len(outer), len(inner)) == (1, 1)


def test_nesting_and_counts_agree_with_pytorch():
    counts = {}
    for lib in (torch, minitorch):
        log = []

        def logger(name, log=log):
            return lambda t: log.append(name) or t.detach()

        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        hooks = graph_module(lib).saved_tensors_hooks
        with hooks(logger("outer"), lambda t: t):
            y = x * x
            with hooks(logger("inner"), lambda t: t):
                z = y.exp() * x
            w = z.sigmoid()
        w.sum().backward()
        counts[lib] = sorted(log)
    assert counts[minitorch] == counts[torch] and "inner" in counts[torch]


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_unpack_is_called_on_every_read(lib):
    calls = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    def unpack(t):
        calls.append(1)
        return t

    with graph_module(lib).saved_tensors_hooks(lambda t: t.detach(), unpack):
        y = x.sin()
    first, second = y.grad_fn._saved_self, y.grad_fn._saved_self
    assert len(calls) == 2 and first.tolist() == second.tolist() == x.tolist()


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_round_trip_through_python_lists_gives_the_same_gradients(lib):
    """A pack hook may store anything: here plain Python lists, rebuilt in unpack."""

    def program(x, w):
        return ((x * w).tanh() * x.exp()).sum()

    def make():
        x = lib.tensor([[0.1, -0.2], [0.3, 0.4]], dtype=torch.float64, requires_grad=True)
        w = lib.tensor([0.5, -1.5], dtype=torch.float64, requires_grad=True)
        return x, w

    x, w = make()
    program(x, w).backward()
    expected = (x.grad.tolist(), w.grad.tolist())

    def pack(t):
        return (t.tolist(), t.dtype)

    def unpack(packed):
        values, dtype = packed
        return lib.tensor(values, dtype=dtype)

    x, w = make()
    with graph_module(lib).saved_tensors_hooks(pack, unpack):
        loss = program(x, w)
    loss.backward()
    assert (x.grad.tolist(), w.grad.tolist()) == expected


def test_errors_say_what_pytorch_says():
    messages = {}
    for lib in (torch, minitorch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        hooks = graph_module(lib).saved_tensors_hooks
        with hooks(lambda t: t.detach(), lambda t: 3):
            y = x.sin()
        with pytest.raises(TypeError) as not_a_tensor:
            y.sum().backward()

        def changes_input(t):
            t.add_(1)
            return t

        with pytest.raises(RuntimeError) as in_place:
            with hooks(changes_input, lambda t: t):
                (x * 1).sin()

        disable = graph_module(lib).disable_saved_tensors_hooks
        with pytest.raises(RuntimeError) as disabled:
            with disable("saved tensors hooks are off in this block"):
                with hooks(lambda t: t, lambda t: t):
                    pass
        messages[lib] = [str(e.value) for e in (not_a_tensor, in_place, disabled)]
    assert messages[minitorch][0] == messages[torch][0]
    assert messages[minitorch][2] == messages[torch][2]
    key = "A saved tensor pack hook is modifying its input in place."
    assert key in messages[torch][1] and key in messages[minitorch][1]


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_with_hooks_the_version_check_is_up_to_the_hooks(lib):
    """PyTorch does not check saved tensors' versions when hooks packed them: the hook's copy
    (here a clone) is what backward uses, so changing the original afterwards is harmless."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with graph_module(lib).saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        a = x * 1
        y = a.sin()
    with lib.no_grad():
        a.add_(100.0)
    y.sum().backward()
    torch.testing.assert_close(x.grad.tolist(), torch.tensor([1.0, 2.0]).cos().tolist())


def test_save_on_cpu_gives_the_same_gradients_and_keeps_cpu_tensors():
    x, w, b = leaves(minitorch, 3, 4, 2)
    mlp(minitorch, x, w, b).backward()
    expected = (w.grad.tolist(), b.grad.tolist())
    w.grad = b.grad = None
    with minitorch.autograd.graph.save_on_cpu():
        loss = mlp(minitorch, x, w, b)
    node = loss.grad_fn
    while not saved_tensors(node):
        node = node.next_functions[0][0]
    for device, tensor in (value for _, value in saved_tensors(node)):
        assert device == torch.device("cpu") and tensor.device.type == "cpu"
    loss.backward()
    assert (w.grad.tolist(), b.grad.tolist()) == expected


@pytest.mark.cuda
def test_save_on_cpu_moves_cuda_tensors_to_cpu_and_back():
    for lib in (torch, minitorch):
        x = lib.tensor([[0.1, 0.2, 0.3]], device="cuda", requires_grad=True)
        with graph_module(lib).save_on_cpu(pin_memory=True):
            y = (x.exp() * x).sum()
        y.backward()
        assert x.grad.device.type == "cuda"
        torch.testing.assert_close(
            x.grad.cpu().tolist(), ((1 + x.detach().cpu()) * x.detach().cpu().exp()).tolist()
        )
    with minitorch.autograd.graph.save_on_cpu():
        x = minitorch.ones(3, device="cuda", requires_grad=True)
        y = x.exp()
    ((device, tensor),) = [value for _, value in saved_tensors(y.grad_fn)]
    assert device.type == "cuda" and tensor.device.type == "cpu"
