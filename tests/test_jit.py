"""minitorch.jit.trace: replay equals eager (outputs and every gradient), guards retrace,
on_branch modes, the cache limit, and clear errors for what a trace cannot do."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

import minitorch
import minitorch.jit
from minitorch.nn import functional as F

DTYPE = torch.float64


def tensor(*shape: int, seed: int, requires_grad: bool = False) -> minitorch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    values = torch.rand(shape, generator=gen, dtype=DTYPE) * 4 - 2
    return minitorch.as_tensor(values).requires_grad_(requires_grad)


def outputs_and_grads(fn, args, params) -> list[torch.Tensor]:
    """fn(*args) and the gradient of its outputs' sum w.r.t. every param and input that
    requires grad, as storage."""
    leaves = [*params, *(a for a in args if isinstance(a, minitorch.Tensor) and a.requires_grad)]
    for leaf in leaves:
        leaf.grad = None
    out = fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = sum((o * (k + 1)).sum() for k, o in enumerate(outs))
    total.backward()
    return [o._data.clone() for o in outs] + [leaf.grad._data.clone() for leaf in leaves]


def check_replays_equal_eager(fn, make_args, params, calls: int = 100) -> None:
    traced = minitorch.jit.trace(fn)
    for seed in range(calls):
        args = make_args(seed)
        replayed = outputs_and_grads(traced, args, params)
        assert traced.state == ("capture" if seed == 0 else "replay"), traced.explain()
        eager = outputs_and_grads(fn, args, params)
        for r, e in zip(replayed, eager, strict=True):
            torch.testing.assert_close(r, e, rtol=1e-12, atol=1e-12)
    assert len(traced.traces) == 1


# -------------------------------------------------------------------------------------------------
# Replay equals eager
# -------------------------------------------------------------------------------------------------
def test_mlp_training_loss_replays_equal_eager_on_100_inputs():
    minitorch.manual_seed(0)
    model = minitorch.nn.Sequential(
        minitorch.nn.Linear(4, 8), minitorch.nn.ReLU(), minitorch.nn.Linear(8, 3)
    ).double()
    targets = minitorch.tensor([0, 2, 1, 1, 0])
    fn = lambda x: F.cross_entropy(model(x), targets)
    check_replays_equal_eager(fn, lambda s: (tensor(5, 4, seed=s),), list(model.parameters()))


def test_unrolled_lstm_cell_replays_equal_eager_on_100_inputs():
    minitorch.manual_seed(0)
    cell = minitorch.nn.LSTMCell(3, 4).double()

    def fn(xs, h, c):
        for t in range(xs.shape[0]):
            h, c = cell(xs[t], (h, c))
        return h, c

    make = lambda s: (
        tensor(5, 2, 3, seed=s),
        tensor(2, 4, seed=s + 1000, requires_grad=True),
        tensor(2, 4, seed=s + 2000),
    )
    check_replays_equal_eager(fn, make, list(cell.parameters()))


def test_fan_out_and_broadcasting_replay_equal_eager_on_100_inputs():
    w = tensor(1, 3, seed=99, requires_grad=True)

    def fn(x):
        y = x * w
        z = y.sin() * y + y.tanh()  # y fans out three ways
        return (z - x).exp().mean(0), z

    check_replays_equal_eager(fn, lambda s: (tensor(4, 3, seed=s, requires_grad=True),), [w])


def test_gru_layer_replays_equal_eager():
    minitorch.manual_seed(0)
    gru = minitorch.nn.GRU(3, 4).double()
    fn = lambda x: gru(x)[0]
    check_replays_equal_eager(fn, lambda s: (tensor(6, 2, 3, seed=s),), list(gru.parameters()))


def test_ops_without_a_storage_kernel_replay_through_their_own_forward_and_backward():
    w = tensor(4, seed=99, requires_grad=True)

    def fn(x):
        values, _ = (x * w).max(dim=1)  # two outputs, the indices unused
        y = minitorch.where(x > 0, x.clamp(-1, 1), x.softmax(1)).masked_fill(x < -1.5, 0.0)
        return values.sum() + y.logsumexp(1)

    traced = minitorch.jit.trace(fn)
    traced(tensor(3, 4, seed=0))
    kernels = [
        minitorch.autograd.function.storage_kernel(op.function)
        for op in traced.traces[0].program.ops
    ]
    assert None in kernels  # some ops go the general way (forward_with_ctx)
    check_replays_equal_eager(fn, lambda s: (tensor(3, 4, seed=s, requires_grad=True),), [w])


def test_dropout_draws_a_new_mask_on_every_replay():
    fn = lambda x: F.dropout(x, 0.5) * 2
    traced = minitorch.jit.trace(fn)
    x = tensor(300, seed=0, requires_grad=True)
    traced(x)
    torch.manual_seed(5)
    first = traced(x)
    assert traced.state == "replay"
    second = traced(x)
    assert not torch.equal(first._data, second._data)
    torch.manual_seed(5)
    assert torch.equal(first._data, fn(x)._data)


def test_an_optimizer_step_between_calls_is_seen_by_the_next_replay():
    minitorch.manual_seed(0)
    model = minitorch.nn.Linear(3, 1).double()
    opt = minitorch.optim.SGD(model.parameters(), lr=0.1)
    traced = minitorch.jit.trace(lambda x: model(x).pow(2).mean())
    x = tensor(4, 3, seed=0)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = traced(x)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert traced.state == "replay" and len(traced.traces) == 1
    assert losses == sorted(losses, reverse=True) and losses[0] > losses[-1]
    torch.testing.assert_close(traced(x)._data, model(x).pow(2).mean()._data)


def test_parameter_hooks_and_accumulation_work_as_eagerly():
    w = tensor(3, seed=0, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append(g._data.clone()))
    traced = minitorch.jit.trace(lambda x: (x * w).sum())
    for k in range(3):
        traced(tensor(3, seed=k)).backward()
    assert len(seen) == 3  # the replays' gradients went through w's hook
    expected = sum(tensor(3, seed=k)._data for k in range(3))
    torch.testing.assert_close(w.grad._data, expected)  # .grad accumulated over calls


def test_backward_twice_needs_retain_graph_as_eagerly():
    w = tensor(3, seed=0, requires_grad=True)
    traced = minitorch.jit.trace(lambda x: (x * w).exp().sum())
    traced(tensor(3, seed=1))
    loss = traced(tensor(3, seed=2))
    loss.backward(retain_graph=True)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    with pytest.raises(RuntimeError, match="create_graph=True through a traced function"):
        minitorch.autograd.grad(traced(tensor(3, seed=3)), [w], create_graph=True)


def test_no_tensor_keeps_torch_autograd_state():
    """Storage never requires grad: not the outputs, not the gradients, not one value the ops
    keep for backward; and torch's autograd saves nothing while a replay runs."""
    w = tensor(3, seed=0, requires_grad=True)
    traced = minitorch.jit.trace(lambda x: (x * w).tanh().sum(0) * x.sigmoid())

    def refuse(t):
        raise AssertionError("torch's autograd saved a tensor during a replay")

    traced(tensor(3, seed=0, requires_grad=True))
    for k in range(3):
        with torch.autograd.graph.saved_tensors_hooks(refuse, refuse):
            out = traced(tensor(3, seed=k, requires_grad=True))
            kept = [
                cell.cell_contents
                for backward in out.grad_fn.backwards
                for cell in backward.__closure__ or ()
                if isinstance(cell.cell_contents, torch.Tensor)
            ]
            out.sum().backward()
        assert traced.state == "replay" and kept, "the kernels keep storages for backward"
        for t in [out._data, w.grad._data, *kept]:
            assert not t.requires_grad and t.grad_fn is None


# -------------------------------------------------------------------------------------------------
# Guards
# -------------------------------------------------------------------------------------------------
def mul_by(x, k):
    return x * k


@pytest.mark.parametrize(
    "second_call, reason",
    [
        (
            lambda: (tensor(5, seed=1), 2.0),
            "tensor 'x' size mismatch at index 0. expected 4, actual 5",
        ),
        (lambda: (tensor(4, 1, seed=1), 2.0), "tensor 'x' rank mismatch. expected 1, actual 2"),
        (lambda: (tensor(4, seed=1).float(), 2.0), "tensor 'x' dtype mismatch"),
        (
            lambda: (tensor(4, seed=1, requires_grad=True), 2.0),
            "tensor 'x' requires_grad mismatch. expected False, actual True",
        ),
        (lambda: (tensor(4, seed=1), 3.0), "'k' == 2.0 failed, actual 3.0"),
        (lambda: (tensor(4, seed=1), 2), "'k' == 2.0 failed, actual 2"),
    ],
    ids=["size", "rank", "dtype", "requires_grad", "value", "type"],
)
def test_each_guard_kind_triggers_a_retrace(second_call, reason):
    traced = minitorch.jit.trace(mul_by)
    traced(tensor(4, seed=0), 2.0)
    args = second_call()
    out = traced(*args)
    assert traced.state == "retrace"
    assert traced.reasons[-1].startswith(reason), traced.reasons
    torch.testing.assert_close(out._data, mul_by(*args)._data)
    traced(*args)
    assert traced.state == "replay"  # the new trace is cached


def test_grad_mode_and_captured_tensors_are_guarded():
    w = tensor(3, seed=0, requires_grad=True)
    traced = minitorch.jit.trace(lambda x: x * w)
    traced(tensor(3, seed=1))
    with minitorch.no_grad():
        out = traced(tensor(3, seed=2))
    assert traced.state == "retrace" and "grad mode mismatch" in traced.reasons[-1]
    assert out.grad_fn is None and not out.requires_grad
    w.requires_grad_(False)
    traced(tensor(3, seed=3))
    assert traced.state == "retrace"
    assert traced.reasons[-1] == (
        "trace 0: tensor 'w' requires_grad mismatch. expected True, actual False; "
        "trace 1: grad mode mismatch. expected False, actual True"
    )


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x * 3


def test_a_branch_on_a_value_is_a_guard_that_retraces():
    traced = minitorch.jit.trace(branchy)
    positive, negative = tensor(3, seed=0).abs(), -tensor(3, seed=0).abs()
    traced(positive)
    out = traced(negative)
    assert traced.state == "retrace"
    assert re.search(r"read bool\(%\d+\) = True, this call reads False", traced.reasons[-1])
    torch.testing.assert_close(out._data, negative._data * 3)
    for x in (positive, negative):  # both branches are cached now
        torch.testing.assert_close(traced(x)._data, branchy(x)._data)
        assert traced.state == "replay"
    report = str(traced.explain())
    assert "bool(the result of Compare (shape [])) == False" in report and "test_jit.py" in report


def test_on_branch_bake_freezes_the_branch_with_a_tracer_warning():
    traced = minitorch.jit.trace(branchy, on_branch="bake")
    positive, negative = tensor(3, seed=0).abs(), -tensor(3, seed=0).abs()
    with pytest.warns(minitorch.jit.TracerWarning, match=r"Python bool at test_jit.py:\d+"):
        traced(positive)
    out = traced(negative)  # like torch.jit.trace: silently the branch seen when tracing
    assert traced.state == "replay"
    torch.testing.assert_close(out._data, negative._data * 2)


def test_on_branch_error_raises_naming_the_line():
    traced = minitorch.jit.trace(branchy, on_branch="error")
    with pytest.raises(RuntimeError, match=r"test_jit.py:\d+ reads a tensor's value \(bool\(\) of"):
        traced(tensor(3, seed=0))
    shape_only = minitorch.jit.trace(lambda x: x * len(x), on_branch="error")
    shape_only(tensor(3, seed=0))  # len() depends on the shape only: allowed


def test_cache_limit_falls_back_to_eager_with_correct_results():
    traced = minitorch.jit.trace(mul_by, cache_limit=2)
    traced(tensor(1, seed=0), 2.0)
    traced(tensor(2, seed=0), 2.0)
    with pytest.warns(UserWarning, match=r"traced 2 times \(cache_limit=2\); it runs eagerly"):
        out = traced(tensor(3, seed=0), 2.0)
    assert traced.state == "eager"
    torch.testing.assert_close(out._data, tensor(3, seed=0)._data * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning came once
        out = traced(tensor(4, seed=1), 5.0)
        assert traced(tensor(1, seed=0), 2.0) is not None and traced.state == "eager"
    torch.testing.assert_close(out._data, tensor(4, seed=1)._data * 5)


def test_a_captured_tensor_whose_storage_changes_shape_retraces():
    w = tensor(3, seed=0, requires_grad=True)
    traced = minitorch.jit.trace(lambda x: x * w)
    traced(tensor(3, seed=1))
    w.data = tensor(1, seed=2)  # outside the traced function
    out = traced(tensor(3, seed=1))
    assert traced.reasons[-1] == "tensor 'w' size mismatch at index 0. expected 3, actual 1"
    torch.testing.assert_close(out._data, tensor(3, seed=1)._data * w._data)


@pytest.mark.cuda
def test_the_device_guard_retraces():
    traced = minitorch.jit.trace(mul_by)
    traced(tensor(3, seed=0), 2.0)
    out = traced(tensor(3, seed=0).cuda(), 2.0)
    assert traced.state == "retrace" and "tensor 'x' device mismatch" in traced.reasons[-1]
    assert out.device.type == "cuda"


# -------------------------------------------------------------------------------------------------
# Clear errors
# -------------------------------------------------------------------------------------------------
def test_clear_errors_for_what_a_trace_cannot_do():
    total = minitorch.zeros(3, dtype=DTYPE)

    def accumulates(x):
        total.add_(x)
        return x * 2

    with pytest.raises(RuntimeError, match="in-place Add writes into a tensor the function did"):
        minitorch.jit.trace(accumulates)(tensor(3, seed=0))
    with pytest.raises(RuntimeError, match=r"calls \.numpy\(\) on input 0"):
        minitorch.jit.trace(lambda x: x * float(x.numpy().sum()))(tensor(3, seed=0))
    with pytest.raises(TypeError, match="must return a tensor or a tuple of tensors.*float"):
        minitorch.jit.trace(lambda x: 1.0)(tensor(3, seed=0))
    w = tensor(3, seed=0, requires_grad=True)

    def trains(x):
        loss = (x * w).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match=r"backward\(\) happened during the traced call"):
        minitorch.jit.trace(trains)(tensor(3, seed=1))
    traced = minitorch.jit.trace(mul_by)
    traced(tensor(3, seed=0), 2.0)
    with pytest.raises(TypeError, match="traced with 2 positional arguments, but 1 were given"):
        traced(tensor(3, seed=0))
    with pytest.raises(ValueError, match="on_branch must be one of"):
        minitorch.jit.trace(mul_by, on_branch="maybe")


def test_example_inputs_trace_at_once():
    traced = minitorch.jit.trace(mul_by, (tensor(3, seed=0), 2.0))
    assert traced.state == "capture" and len(traced.traces) == 1
    traced(tensor(3, seed=1), 2.0)
    assert traced.state == "replay"


# -------------------------------------------------------------------------------------------------
# explain, repeated ops, saved-tensor hooks, modules
# -------------------------------------------------------------------------------------------------
def test_explain_reports_traces_breaks_guards_ops_and_why_each_retrace_happened():
    def fn(x):
        y = x.relu() * 2
        return y if y.sum() > 0 else -y

    traced = minitorch.jit.trace(fn)
    traced(tensor(16, seed=0).abs())
    report = minitorch.jit.explain(traced, tensor(32, seed=0).abs())
    assert (report.trace_count, report.break_count, report.op_count) == (2, 2, 8)
    assert report.retrace_reasons == ["tensor 'x' size mismatch at index 0. expected 16, actual 32"]
    assert report.traces[0].guards[:2] == [
        "tensor 'x': [16], torch.float64, cpu",
        "grad mode is on",
    ]
    assert re.fullmatch(
        r"bool\(the result of Compare \(shape \[\]\)\) == True  \(value read at "
        r"test_jit.py:\d+, checked\)",
        report.traces[0].breaks[0],
    )
    text = str(report)
    assert text.startswith("fn: 2 trace(s), 2 break(s) (value reads), 8 op(s), 1 retrace(s)")
    assert "retrace 1: tensor 'x' size mismatch at index 0. expected 16, actual 32" in text
    fresh = minitorch.jit.explain(lambda x: x * 2, tensor(3, seed=0))  # a function, traced now
    assert (fresh.trace_count, fresh.break_count, fresh.op_count, fresh.state) == (
        1,
        0,
        1,
        "capture",
    )


def test_repeated_ops_run_once_and_the_numbers_stay_exactly_eager():
    """An unrolled RNN cell adds its two biases and transposes its two weights at every step:
    the replay runs those once."""
    minitorch.manual_seed(0)
    cell = minitorch.nn.RNNCell(3, 4).double()

    def fn(xs, h):
        for t in range(xs.shape[0]):
            h = cell(xs[t], h)
        return h

    traced = minitorch.jit.trace(fn)
    params = list(cell.parameters())
    for seed in range(3):
        args = (tensor(6, 2, 3, seed=seed), tensor(2, 4, seed=seed + 1, requires_grad=True))
        replayed = outputs_and_grads(traced, args, params)
        eager = outputs_and_grads(fn, args, params)
        assert all(torch.equal(r, e) for r, e in zip(replayed, eager, strict=True))
    assert traced.traces[0].runner.shared_ops == 15  # 5 of each: two transposes, a bias sum
    assert "54 op(s), 15 of them repeats run once" in str(traced.explain())


def test_an_op_repeated_under_no_grad_is_not_shared_with_the_one_that_needs_gradients():
    w = tensor(3, seed=0, requires_grad=True)

    def fn(x):
        with minitorch.no_grad():
            frozen = x * w
        return (x * w).exp() + frozen

    check_replays_equal_eager(fn, lambda s: (tensor(3, seed=s),), [w], calls=5)


def test_under_saved_tensor_hooks_or_a_memory_tracker_the_call_runs_eagerly():
    w = tensor(3, seed=0, requires_grad=True)
    traced = minitorch.jit.trace(lambda x: (x * w).exp().sum())
    traced(tensor(3, seed=1))
    packed = []
    with minitorch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        traced(tensor(3, seed=2)).backward()
    assert traced.state == "eager" and packed  # the hooks saw what the ops saved
    with minitorch.memory.MemoryTracker() as memory:
        traced(tensor(3, seed=2))
    assert traced.state == "eager" and memory.peak_bytes > memory.start_bytes
    traced(tensor(3, seed=2))
    assert traced.state == "replay"


def test_a_module_is_traced_and_its_parameters_named_in_the_guards():
    minitorch.manual_seed(0)
    model = minitorch.nn.Sequential(minitorch.nn.Linear(3, 2), minitorch.nn.Tanh()).double()
    check_replays_equal_eager(model, lambda s: (tensor(4, 3, seed=s),), list(model.parameters()), 5)
    traced = minitorch.jit.trace(model, (tensor(4, 3, seed=0),))
    guards = traced.traces[0].guards
    assert [g.name for g in guards.captured] == ["self.0.weight", "self.0.bias"]
    assert traced.__name__ == "Sequential" and guards.arguments[0].name == "input"


def test_minitorch_jit_is_a_lazy_attribute_and_a_missing_submodule_is_a_clean_attribute_error(
    monkeypatch,
):
    import subprocess
    import sys

    code = "import sys, minitorch; assert 'minitorch.jit' not in sys.modules; minitorch.jit.trace"
    subprocess.run([sys.executable, "-c", code], check=True)
    monkeypatch.setattr(minitorch, "_LAZY_SUBMODULES", (*minitorch._LAZY_SUBMODULES, "notyet"))
    assert not hasattr(minitorch, "notyet")
    with pytest.raises(AttributeError, match="has no attribute 'notyet'"):
        minitorch.notyet  # noqa: B018


def test_forward_with_ctx_is_one_function_shared_with_the_notebook():
    from minitorch.autograd import function, watch
    from minitorch.ops.elementwise import Mul

    assert watch.forward_with_ctx is function.forward_with_ctx
    a, b = tensor(3, seed=0), tensor(3, seed=1)
    (out,), ctx = function.forward_with_ctx(Mul, (a, b), (True, False))
    assert out.grad_fn is None and torch.equal(out._data, a._data * b._data)
    grad_a, grad_b = Mul.backward(ctx, minitorch.ones(3, dtype=DTYPE))
    assert torch.equal(grad_a._data, b._data) and grad_b is None
    with pytest.raises(ValueError, match="2 arguments but 1 needs_input_grad flags for Mul"):
        function.forward_with_ctx(Mul, (a, b), (True,))


# -------------------------------------------------------------------------------------------------
# CUDA graphs
# -------------------------------------------------------------------------------------------------
def test_cuda_graph_needs_tensors_on_a_gpu():
    traced = minitorch.jit.trace(mul_by, cuda_graph=True)
    with pytest.raises(ValueError, match=r"cuda_graph=True\) needs every tensor on a CUDA device"):
        traced(tensor(3, seed=0), 2.0)


@pytest.mark.cuda
def test_cuda_graph_replays_equal_eager_and_see_optimizer_steps():
    minitorch.manual_seed(0)
    model = minitorch.nn.Sequential(
        minitorch.nn.Linear(4, 8), minitorch.nn.ReLU(), minitorch.nn.Linear(8, 3)
    ).double().cuda()  # fmt: skip
    targets = minitorch.tensor([0, 2, 1, 1, 0], device="cuda")
    fn = lambda x: F.cross_entropy(model(x), targets)
    traced = minitorch.jit.trace(fn, cuda_graph=True)
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    for seed in range(5):
        x = tensor(5, 4, seed=seed).cuda()
        replayed = outputs_and_grads(traced, (x,), params)
        eager = outputs_and_grads(fn, (x,), params)
        for r, e in zip(replayed, eager, strict=True):
            torch.testing.assert_close(r, e, rtol=1e-12, atol=1e-12)
        optimizer.step()
    assert traced.state == "replay"
    first = traced(tensor(5, 4, seed=0).cuda())
    traced(tensor(5, 4, seed=1).cuda())
    with pytest.raises(RuntimeError, match="called again before this call's backward"):
        first.backward()


def test_watch_ops_reports_every_read_as_one_of_read_kinds() -> None:
    """Notebook 5's READERS has a reader for each kind watch_ops reports: a tracer built on the
    hook can check every guard it records. Printing and numpy() are reported as tolist reads of
    the values they showed."""
    import inspect
    import operator
    import sys

    from minitorch.autograd import watch
    from minitorch.autograd.watch import READ_KINDS, watch_ops

    x = minitorch.tensor([1.5, -2.0, 3.0])
    index = minitorch.tensor(2)
    reads = []

    def read_everything() -> None:
        bool(x.sum() > 0)
        x.sum().item()
        float(x.sum())
        int(x.sum())
        operator.index(index)
        len(x)
        x.tolist()
        repr(x)
        f"{x.sum():.2f}"
        x.numpy()
        list(x)

    with watch_ops(lambda *args: None, lambda t, kind, value: reads.append((t, kind, value))):
        read_everything()
    kinds = [kind for _, kind, _ in reads]
    assert kinds[:10] == [
        *("bool", "item", "float", "int", "index", "len", "tolist"),
        *("tolist", "tolist", "tolist"),  # repr, format, numpy: the values they showed
    ]
    assert set(kinds[10:]) == {"len"}  # list(x): its length
    readers = {
        "bool": bool,
        "item": lambda t: t.item(),
        "float": float,
        "int": int,
        "index": operator.index,
        "len": len,
        "tolist": lambda t: t.tolist(),
    }
    assert set(readers) == set(READ_KINDS)
    for tensor, kind, value in reads:
        assert readers[kind](tensor) == value, kind
    source = inspect.getsource(sys.modules["minitorch.tensor"])
    declared = set(re.findall(r'@recorded_read\("(\w+)"\)', source))
    assert declared <= set(READ_KINDS) | watch._SHOWN_AS_VALUES, declared
