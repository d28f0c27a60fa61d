"""PyTorch fidelity, autograd side: module backward hooks, gradgradcheck,
torch.autograd.functional, the profiler, LBFGS and channel dropout, against real PyTorch.

Each test builds the same thing with both libraries (a function taking `lib`) and compares what
comes out, in float64: values and gradients, what hooks see (None where PyTorch gives None),
warnings and error messages.
"""

from __future__ import annotations

import sys
import warnings

import pytest
import torch
from oracle import assert_close

import minitorch
from minitorch import Tensor
from minitorch.nn import dropout as m_dropout

LIBS = pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
DOUBLE = torch.float64


def _tensor(lib, values, requires_grad=False):
    return lib.tensor(values, dtype=DOUBLE, requires_grad=requires_grad)


def _compare(m_value, t_value, what):
    """Nested tuples of tensors (or None) agree, structure included."""
    if isinstance(t_value, tuple):
        assert isinstance(m_value, tuple), f"{what}: minitorch gives {type(m_value).__name__}"
        assert len(m_value) == len(t_value), f"{what}: {len(m_value)} != {len(t_value)} entries"
        for i, (m, t) in enumerate(zip(m_value, t_value)):
            _compare(m, t, f"{what}[{i}]")
        return
    assert not isinstance(m_value, tuple), f"{what}: minitorch gives a tuple, torch a tensor"
    assert_close(m_value, t_value, what)
    if t_value is not None:
        assert m_value.requires_grad == t_value.requires_grad, f"{what}: requires_grad"


def _messages(record):
    return [(w.category, str(w.message)) for w in record]


# -------------------------------------------------------------------------------------------------
# Module backward hooks
# -------------------------------------------------------------------------------------------------
def _two_in_two_out(lib):
    class TwoInTwoOut(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(_tensor(lib, [0.5, -1.5]))

        def forward(self, a, b, k, scale=3.0):
            return a * b * k * self.w, (a + b).tanh() * scale

    return TwoInTwoOut()


def _hook_run(lib, use_second_output, b_requires_grad):
    """What the full backward hook and pre-hook of a two-input, two-output module see."""
    module = _two_in_two_out(lib)
    seen = []
    module.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", go)))
    module.register_full_backward_hook(lambda m, gi, go: seen.append(("full", gi, go)))
    a = _tensor(lib, [1.0, 2.0], requires_grad=True)
    b = _tensor(lib, [3.0, -4.0], requires_grad=b_requires_grad)
    u, v = module(a, b, 2, scale=0.5)
    loss = (u * u).sum() + (v.sum() if use_second_output else 0)
    loss.backward()
    return seen, a.grad, b.grad, module.w.grad


@pytest.mark.parametrize("use_second_output", [True, False])
@pytest.mark.parametrize("b_requires_grad", [True, False])
def test_full_backward_hooks_see_torchs_grad_input_and_grad_output(
    use_second_output, b_requires_grad
):
    m_seen, *m_grads = _hook_run(minitorch, use_second_output, b_requires_grad)
    t_seen, *t_grads = _hook_run(torch, use_second_output, b_requires_grad)
    assert [s[0] for s in m_seen] == [s[0] for s in t_seen] == ["pre", "full"]
    for m, t in zip(m_seen, t_seen):
        _compare(m[1:], t[1:], f"{t[0]} hook arguments")
    # grad_input: the int argument is None; b is zeros (not None) when it needs no grad, and the
    # keyword argument has no entry; grad_output is None for an unused output.
    assert len(m_seen[1][1]) == 3 and m_seen[1][1][2] is None
    assert (m_seen[0][1][1] is None) == (not use_second_output)
    for name, m, t in zip(["a", "b", "w"], m_grads, t_grads):
        assert_close(m, t, f"{name}.grad")


def _sequential_hooks(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(
        lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2), lib.nn.Sigmoid()
    ).double()
    events = []
    for name, layer in model.named_children():
        layer.register_full_backward_pre_hook(
            lambda m, go, name=name: events.append((f"pre {name}", go))
        )
        layer.register_full_backward_hook(
            lambda m, gi, go, name=name: events.append((f"full {name}", gi, go))
        )
    x = lib.randn(5, 3, dtype=DOUBLE, requires_grad=True)
    model(x).pow(2).sum().backward()
    return events, x.grad, [p.grad for p in model.parameters()]


def test_hooks_on_every_layer_fire_in_torchs_order_with_torchs_values():
    m_events, m_x, m_params = _sequential_hooks(minitorch)
    t_events, t_x, t_params = _sequential_hooks(torch)
    assert [e[0] for e in m_events] == [e[0] for e in t_events]
    for m, t in zip(m_events, t_events):
        _compare(m[1:], t[1:], t[0])
    assert_close(m_x, t_x, "x.grad")
    for m, t in zip(m_params, t_params):
        assert_close(m, t, "parameter grad")


def _fire_count(lib):
    layer = lib.nn.Tanh()
    calls = []
    layer.register_full_backward_hook(lambda m, gi, go: calls.append(go[0].sum().item()))
    x = _tensor(lib, [0.1, 0.2], requires_grad=True)
    y = layer(x)
    (y * 2 + y * 3).sum().backward()  # one output used twice: one call, with the sum
    layer(x).sum().backward()  # a second forward: a second call
    return calls


@LIBS
def test_hook_fires_once_per_backward_when_all_grad_outputs_are_known(lib):
    assert _fire_count(lib) == pytest.approx([10.0, 2.0])


def _replacing(lib):
    layer = lib.nn.Tanh()
    layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
    x = _tensor(lib, [0.1, 0.2], requires_grad=True)
    layer(x).sum().backward()
    return x.grad


def test_hooks_may_replace_grad_output_and_grad_input():
    assert_close(_replacing(minitorch), _replacing(torch), "x.grad")


@LIBS
def test_removed_and_prepended_hooks(lib):
    layer = lib.nn.Tanh()
    order = []
    first = layer.register_full_backward_hook(lambda m, gi, go: order.append("first"))
    layer.register_full_backward_hook(lambda m, gi, go: order.append("prepended"), prepend=True)
    pre = layer.register_full_backward_pre_hook(lambda m, go: order.append("pre"))
    x = _tensor(lib, [0.1], requires_grad=True)
    layer(x).sum().backward()
    assert order == ["pre", "prepended", "first"]
    first.remove()
    pre.remove()
    order.clear()
    layer(x).sum().backward()
    assert order == ["prepended"]


@LIBS
def test_wrong_number_of_gradients_from_a_hook_is_an_error(lib):
    x = _tensor(lib, [0.1], requires_grad=True)
    layer = lib.nn.Tanh()
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(
        RuntimeError,
        match="Backward hook returned an invalid number of grad_input, got 2, but expected 1",
    ):
        layer(x).sum().backward()
    layer = lib.nn.Tanh()
    layer.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    with pytest.raises(
        RuntimeError,
        match="Backward pre hook returned an invalid number of grad_output, got 2, but expected 1",
    ):
        layer(x).sum().backward()


def _no_input_requires_grad(lib):
    layer = lib.nn.Linear(2, 1).double()
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        layer(_tensor(lib, [[1.0, 2.0]])).sum().backward()
    return seen, _messages(record)


def test_hook_with_no_input_requiring_grad_fires_on_outputs_and_warns():
    m_seen, m_warnings = _no_input_requires_grad(minitorch)
    t_seen, t_warnings = _no_input_requires_grad(torch)
    assert m_warnings == t_warnings
    assert "since no inputs require gradients" in t_warnings[0][1]
    _compare(m_seen[0], t_seen[0], "hook arguments")
    assert m_seen[0][0] == (None,)


@LIBS
def test_hook_for_module_without_grad_inputs_must_return_none(lib):
    layer = lib.nn.Linear(2, 1).double()
    layer.register_full_backward_hook(lambda m, gi, go: (go[0],))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="should always return None or None for all"):
            layer(_tensor(lib, [[1.0, 2.0]])).sum().backward()


@LIBS
def test_no_hooks_under_no_grad_or_without_graph(lib):
    layer = lib.nn.Tanh()
    calls = []
    layer.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    x = _tensor(lib, [0.1], requires_grad=True)
    with lib.no_grad():
        y = layer(x)
    assert not y.requires_grad and calls == []


@LIBS
def test_full_and_old_backward_hooks_cannot_be_mixed(lib):
    message = (
        "Cannot use both regular backward hooks and full backward hooks on a single Module. "
        "Please use only one of them."
    )
    layer = lib.nn.Tanh()
    layer.register_full_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match=message):
        layer.register_backward_hook(lambda m, gi, go: None)
    layer = lib.nn.Tanh()
    layer.register_backward_hook(lambda m, gi, go: None)
    with pytest.raises(RuntimeError, match=message):
        layer.register_full_backward_hook(lambda m, gi, go: None)
    layer.register_full_backward_pre_hook(lambda m, go: None)  # pre-hooks mix with both


def _old_hook(lib, make_module):
    module = make_module(lib)
    seen = []
    handle = module.register_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    x = _tensor(lib, [0.3, -0.4], requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        module(x).sum().backward()
    handle.remove()
    module(x).sum().backward()
    return seen, _messages(record), x.grad


class _Scale:
    @staticmethod
    def make(lib):
        class Scale(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(_tensor(lib, [2.0, 3.0]))

            def forward(self, x):
                return x * self.w

        return Scale()


@pytest.mark.parametrize(
    "make_module",
    [
        _Scale.make,  # one op: the hook sees the module's gradients, no warning
        lambda lib: lib.nn.Sequential(lib.nn.Tanh(), lib.nn.Sigmoid()),  # two ops: a warning
    ],
    ids=["one-op", "two-ops"],
)
def test_deprecated_backward_hook_sees_the_output_node_and_warns_like_torch(make_module):
    m_seen, m_warnings, m_grad = _old_hook(minitorch, make_module)
    t_seen, t_warnings, t_grad = _old_hook(torch, make_module)
    assert m_warnings == t_warnings
    assert len(m_seen) == len(t_seen) == 1
    _compare(m_seen[0], t_seen[0], "old hook arguments")
    assert_close(m_grad, t_grad, "x.grad")


@LIBS
def test_deprecated_backward_hook_warns_for_nested_outputs(lib):
    class Nested(lib.nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    module = Nested()
    module.register_backward_hook(lambda m, gi, go: None)
    with pytest.warns(FutureWarning, match="does not return a single Tensor or a tuple"):
        module(_tensor(lib, [1.0], requires_grad=True))


def _double_backward_through_hooks(lib):
    layer = lib.nn.Tanh()
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append(gi[0]))
    x = _tensor(lib, [0.3, -0.7], requires_grad=True)
    (g,) = lib.autograd.grad(layer(x).pow(3).sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    return seen, g, gg


def test_hooks_under_create_graph_and_double_backward():
    m_seen, m_g, m_gg = _double_backward_through_hooks(minitorch)
    t_seen, t_g, t_gg = _double_backward_through_hooks(torch)
    assert len(m_seen) == len(t_seen)
    for m, t in zip(m_seen, t_seen):
        assert_close(m, t, "grad_input")
    assert_close(m_g, t_g, "first derivative")
    assert_close(m_gg, t_gg, "second derivative")


# -------------------------------------------------------------------------------------------------
# gradgradcheck
# -------------------------------------------------------------------------------------------------
def _wrong_second_derivative(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x.detach()  # right values, half the second derivative

    return Cube.apply


@LIBS
def test_gradgradcheck_passes_on_correct_second_derivatives(lib):
    a = _tensor(lib, [[0.5, 1.5], [0.2, -0.3]], requires_grad=True)
    b = _tensor(lib, [[0.1, -0.2], [0.7, 0.4]], requires_grad=True)
    assert lib.autograd.gradgradcheck(lambda a, b: (a.tanh() @ b, a * b.exp()), (a, b))
    assert lib.autograd.gradgradcheck(lambda a: a.sin(), a, gen_non_contig_grad_outputs=True)
    grad_out = _tensor(lib, [[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
    assert lib.autograd.gradgradcheck(lambda a: a.pow(3), (a,), grad_out)
    assert lib.autograd.gradgradcheck(lambda a: a * 2, (a,))  # a zero second derivative


def _gradgradcheck_failure(lib):
    lib.manual_seed(0)
    x = _tensor(lib, [0.5, 1.5], requires_grad=True)
    cube = _wrong_second_derivative(lib)
    assert lib.autograd.gradcheck(cube, (x,))
    assert lib.autograd.gradgradcheck(cube, (x,), raise_exception=False) is False
    lib.manual_seed(0)
    # `from torch.autograd.gradcheck import GradcheckError` works for both libraries
    error_type = sys.modules[f"{lib.__name__}.autograd.gradcheck"].GradcheckError
    with pytest.raises(error_type) as info:
        lib.autograd.gradgradcheck(cube, (x,))
    return str(info.value)


def test_gradgradcheck_reports_torchs_mismatch_for_the_same_random_grad_outputs():
    message = _gradgradcheck_failure(minitorch)
    assert message == _gradgradcheck_failure(torch)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0")


@LIBS
def test_gradgradcheck_option_errors_and_warnings(lib):
    x = _tensor(lib, [0.5, 1.5], requires_grad=True)
    with pytest.raises(AssertionError, match="at least one of check_fwd_over_rev or check_rev"):
        lib.autograd.gradgradcheck(lambda a: a**3, (x,), check_rev_over_rev=False)
    with pytest.raises(ValueError, match="expects at least one input tensor to require gradient"):
        lib.autograd.gradgradcheck(lambda a: a**3, (x.detach(),), (x.detach(),))
    x32 = lib.tensor([0.5, 1.5], requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        lib.autograd.gradgradcheck(lambda a: a * 2, (x32,), atol=1e-2, rtol=1e-2, eps=1e-3)
    # the input, then the random grad_output (float32 like the output)
    assert [str(w.message)[:56] for w in record] == [
        f"Input #{i} requires gradient and is not a double precision" for i in (0, 1)
    ]


def test_gradcheck_forward_mode_options_are_refused():
    x = _tensor(minitorch, [0.5], requires_grad=True)
    with pytest.raises(NotImplementedError, match="check_forward_ad=True"):
        minitorch.autograd.gradcheck(lambda a: a * 2, (x,), check_forward_ad=True)
    with pytest.raises(NotImplementedError, match="check_batched_grad=True"):
        minitorch.autograd.gradgradcheck(lambda a: a**3, (x,), check_batched_grad=True)


# -------------------------------------------------------------------------------------------------
# torch.autograd.functional
# -------------------------------------------------------------------------------------------------
def _f_scalar(lib):
    return lambda x: (x**3).sum() + (x[0] * x[1]).exp()


def _f_two_in_two_out(lib):
    return lambda x, y: (x.sin() * y, (x * y).sum())


def _f_two_in_scalar(lib):
    return lambda x, y: (x * y * x).sum() + y.exp().sum()


def _f_unused_input(lib):
    return lambda x, y: (x * x).sum()


def _points(lib, n):
    values = [[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]]
    return tuple(_tensor(lib, v) for v in values[:n])


def _functional_calls(lib):
    """(name, thunk) for every call compared with torch."""
    F = lib.autograd.functional
    x, y = _points(lib, 2)
    two = (x, y)
    scalar, pair = _f_scalar(lib), _f_two_in_two_out(lib)
    two_scalar, unused = _f_two_in_scalar(lib), _f_unused_input(lib)
    return [
        ("jacobian tensor->scalar", lambda: F.jacobian(scalar, x)),
        ("jacobian tensor->tensor", lambda: F.jacobian(lambda a: a.exp() * 2, x)),
        ("jacobian tuple->tuple", lambda: F.jacobian(pair, two)),
        ("jacobian tuple of one", lambda: F.jacobian(lambda a: a * a, (x,))),
        ("jacobian unused input", lambda: F.jacobian(unused, two)),
        ("jacobian create_graph", lambda: F.jacobian(pair, two, create_graph=True)),
        ("hessian tensor", lambda: F.hessian(scalar, x)),
        ("hessian tuple", lambda: F.hessian(two_scalar, two)),
        ("hessian create_graph", lambda: F.hessian(scalar, x, create_graph=True)),
        ("vjp", lambda: F.vjp(pair, two, (y, _tensor(lib, 2.0)))),
        ("vjp default v", lambda: F.vjp(lambda a: a.sum() * 2, x)),
        ("vjp unused input", lambda: F.vjp(unused, two, _tensor(lib, 1.0))),
        ("jvp tuple", lambda: F.jvp(pair, two, (y, x))),
        ("jvp tensor", lambda: F.jvp(lambda a: a.exp(), x, y)),
        ("jvp create_graph", lambda: F.jvp(lambda a: a.exp(), x, y, create_graph=True)),
        ("hvp tensor", lambda: F.hvp(scalar, x, y)),
        ("hvp tuple", lambda: F.hvp(two_scalar, two, (y, x))),
        ("vhp tensor", lambda: F.vhp(scalar, x, y)),
        ("vhp tuple", lambda: F.vhp(two_scalar, two, (y, x))),
        ("vhp create_graph", lambda: F.vhp(scalar, x, y, create_graph=True)),
    ]


@pytest.mark.parametrize("index", range(len(_functional_calls(torch))))
def test_functional_values_and_structure_match_torch(index):
    name, m_call = _functional_calls(minitorch)[index]
    _, t_call = _functional_calls(torch)[index]
    _compare(m_call(), t_call(), name)


def _hessian_of_hessian(lib):
    x = _tensor(lib, [0.3, -0.7], requires_grad=True)
    h = lib.autograd.functional.hessian(lambda a: (a**4).sum() * a[0], x, create_graph=True)
    h.sum().backward()
    return h, x.grad


def test_create_graph_results_can_be_differentiated_again():
    m_h, m_grad = _hessian_of_hessian(minitorch)
    t_h, t_grad = _hessian_of_hessian(torch)
    _compare(m_h, t_h, "hessian")
    assert_close(m_grad, t_grad, "gradient of the hessian's sum")


def _functional_errors(lib):
    F = lib.autograd.functional
    x, y = _points(lib, 2)
    return [
        lambda: F.jacobian(lambda a, b: a * 2, (x, y), strict=True),
        lambda: F.jacobian(lambda a: a.detach(), x, strict=True),
        lambda: F.hessian(lambda a: (a * 2).sum(), x, strict=True),
        lambda: F.hessian(lambda a: a * 2, x),
        lambda: F.hessian(lambda a: (a, a), x),
        lambda: F.vjp(_f_scalar(lib), x, y),
        lambda: F.vjp(lambda a: a * 2, x),
        lambda: F.vjp(lambda a, b: a * 2, (x, y), x, strict=True),
        lambda: F.jvp(lambda a: a * 2, x, (x, x)),
        lambda: F.jvp(lambda a: a * 2, (x, y), (x,)),
        lambda: F.jvp(lambda a: a * 2, x),
        lambda: F.jvp(lambda a: a.detach(), x, x, strict=True),
        lambda: F.hvp(lambda a: a * 2, x, x),
        lambda: F.vhp(lambda a: (a * 2).sum(), x, x, strict=True),
        lambda: F.jacobian(_f_scalar(lib), [x]),
        lambda: F.jacobian(_f_scalar(lib), (x, 3)),
        lambda: F.jacobian(_f_scalar(lib), x, strategy="sideways"),
    ]


@pytest.mark.parametrize("index", range(len(_functional_errors(torch))))
def test_functional_errors_match_torch(index):
    with pytest.raises(Exception) as t_info:
        _functional_errors(torch)[index]()
    with pytest.raises(type(t_info.value)) as m_info:
        _functional_errors(minitorch)[index]()
    assert str(m_info.value) == str(t_info.value)


def test_functional_refuses_vectorize_and_forward_mode_clearly():
    F = minitorch.autograd.functional
    x = _points(minitorch, 1)[0]
    with pytest.raises(NotImplementedError, match="vectorize=True is not supported"):
        F.jacobian(lambda a: a * 2, x, vectorize=True)
    with pytest.raises(NotImplementedError, match="vectorize=True is not supported"):
        F.hessian(lambda a: a.sum(), x, vectorize=True)
    with pytest.raises(NotImplementedError, match="forward-mode"):
        F.jacobian(lambda a: a * 2, x, strategy="forward-mode")


# -------------------------------------------------------------------------------------------------
# The profiler
# -------------------------------------------------------------------------------------------------
def _profiled(lib, profiler_module):
    x = lib.randn(4, 4, requires_grad=True)
    with profiler_module.profile() as prof:
        for _ in range(3):
            with profiler_module.record_function("step"):
                with profiler_module.record_function("inner"):
                    y = (x * 2).sin().sum()
                y.backward()
    y = (x * 2).sum()  # after the block: not recorded
    return prof


@pytest.mark.parametrize("where", ["autograd.profiler", "profiler"])
def test_profiler_records_op_names_counts_and_nesting(where):
    profiler_module = {"autograd.profiler": minitorch.autograd.profiler}.get(
        where, minitorch.profiler
    )
    prof = _profiled(minitorch, profiler_module)
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["step"] == counts["inner"] == 3
    assert counts["Sin"] == 3 and counts["Cos"] == 3  # Cos in the backward of Sin
    assert counts["Mul"] == 9  # x * 2 forward, then two products per backward
    events = {e.key: e for e in prof.key_averages()}
    step, inner = events["step"], events["inner"]
    assert inner.cpu_time_total <= step.cpu_time_total - step.self_cpu_time_total + 1e-6
    assert 0 <= step.self_cpu_time_total <= step.cpu_time_total
    assert step.cpu_time == pytest.approx(step.cpu_time_total / 3)
    total = sum(e.self_cpu_time_total for e in prof.key_averages())
    assert total == pytest.approx(prof.self_cpu_time_total)
    assert minitorch.autograd.function._profiler is None  # the hook point is off again


def _table_lines(prof, **kwargs):
    return prof.key_averages().table(**kwargs).splitlines()


def test_profiler_table_has_torchs_layout():
    m_lines = _table_lines(_profiled(minitorch, minitorch.profiler), sort_by="count", row_limit=4)
    t_lines = _table_lines(_profiled(torch, torch.profiler), sort_by="count", row_limit=4)
    assert len(m_lines) == len(t_lines) == 3 + 4 + 2
    # Six columns of width 12 after the name column (whose width fits the longest name).
    assert m_lines[1][-6 * 14 :] == t_lines[1][-6 * 14 :]
    assert m_lines[1].split() == t_lines[1].split()
    assert m_lines[0][-6 * 14 :] == t_lines[0][-6 * 14 :]
    assert m_lines[-1].startswith("Self CPU time total: ")
    assert set(m_lines[0]) == {"-", " "}
    # sorted by count: the first row is called most often
    assert int(m_lines[3].split()[-1]) == max(int(line.split()[-1]) for line in m_lines[3:7])


@LIBS
def test_profiler_table_edge_cases(lib):
    profiler_module = lib.autograd.profiler
    x = lib.ones(3)
    with profiler_module.profile() as prof:
        x * 2
    assert len(_table_lines(prof, row_limit=0)) == 5
    assert len(_table_lines(prof, row_limit=-1)) == 5 + len(prof.key_averages())
    with pytest.raises(AttributeError):
        prof.key_averages().table(sort_by="no_such_column")
    with profiler_module.profile(enabled=False) as off:
        x * 2
    assert off is None


def test_record_function_outside_a_profiler_does_nothing_and_decorates():
    @minitorch.profiler.record_function("decorated")
    def f(t):
        return t + 1

    assert f(minitorch.ones(1)).item() == 2.0
    with minitorch.profiler.profile() as prof:
        f(minitorch.ones(1))
    assert [e.key for e in prof.key_averages()] == ["decorated", "Add"]


# -------------------------------------------------------------------------------------------------
# LBFGS
# -------------------------------------------------------------------------------------------------
def _lbfgs_fit(lib, line_search_fn, steps=3, **options):
    lib.manual_seed(0)
    x = lib.randn(20, 3, dtype=DOUBLE)
    y = x @ _tensor(lib, [[1.5], [-2.0], [0.5]]) + 0.05 * lib.randn(20, 1, dtype=DOUBLE)
    lib.manual_seed(1)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1)).double()
    optimizer = lib.optim.LBFGS(model.parameters(), line_search_fn=line_search_fn, **options)
    evaluations = []

    def closure():
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        evaluations.append(loss.item())
        return loss

    returned = [optimizer.step(closure).item() for _ in range(steps)]
    state = optimizer.state[model[0].weight]
    summary = {k: v for k, v in state.items() if k in ("func_evals", "n_iter")}
    return returned, evaluations, [p.detach() for p in model.parameters()], state, summary


@pytest.mark.parametrize(
    "line_search_fn, options",
    [
        (None, {}),
        ("strong_wolfe", {}),
        (None, {"history_size": 3, "max_iter": 7, "lr": 0.5}),
        ("strong_wolfe", {"history_size": 2, "max_eval": 9, "tolerance_change": 1e-5}),
    ],
)
def test_lbfgs_follows_torchs_path(line_search_fn, options):
    m_returned, m_evals, m_params, m_state, m_summary = _lbfgs_fit(
        minitorch, line_search_fn, **options
    )
    t_returned, t_evals, t_params, t_state, t_summary = _lbfgs_fit(torch, line_search_fn, **options)
    assert m_summary == t_summary
    assert sorted(m_state) == sorted(t_state)
    assert m_returned == pytest.approx(t_returned, rel=1e-12, abs=1e-14)
    assert m_evals == pytest.approx(t_evals, rel=1e-10, abs=1e-12)
    for m, t in zip(m_params, t_params):
        assert_close(m, t, "parameter after LBFGS")


@LIBS
def test_lbfgs_errors_and_early_exit(lib):
    w = lib.zeros(2, dtype=DOUBLE, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        lib.optim.LBFGS([w], lr=-1)
    v = lib.zeros(1, dtype=DOUBLE, requires_grad=True)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        lib.optim.LBFGS([{"params": [w]}, {"params": [v]}])
    optimizer = lib.optim.LBFGS([w], line_search_fn="backtracking")

    def closure():
        optimizer.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optimizer.step(closure)
    at_optimum = lib.optim.LBFGS([v])
    calls = []

    def flat():
        at_optimum.zero_grad()
        loss = (v * 0).sum()
        loss.backward()
        calls.append(1)
        return loss

    at_optimum.step(flat)
    assert len(calls) == 1 and at_optimum.state[v] == {"func_evals": 1, "n_iter": 0}


def test_lbfgs_state_dict_round_trip():
    *_, m_state, _ = _lbfgs_fit(minitorch, None, steps=1)
    w = minitorch.zeros(3, dtype=DOUBLE, requires_grad=True)
    optimizer = minitorch.optim.LBFGS([w])
    optimizer.zero_grad()
    ((w - 2) ** 2).sum().backward()
    optimizer.step(lambda: ((w - 2) ** 2).sum())
    saved = optimizer.state_dict()
    fresh = minitorch.optim.LBFGS([minitorch.zeros(3, dtype=DOUBLE, requires_grad=True)])
    fresh.load_state_dict(saved)
    assert sorted(fresh.state_dict()["state"][0]) == sorted(saved["state"][0])
    assert isinstance(m_state["d"], Tensor)


# -------------------------------------------------------------------------------------------------
# Dropout1d and Dropout2d
# -------------------------------------------------------------------------------------------------
def _functional_dropout(lib, name):
    return getattr(lib.nn.functional, name) if lib is torch else getattr(m_dropout, name)


def _dropped(lib, layer_name, shape, p, seed, **kwargs):
    lib.manual_seed(seed)
    x = lib.randn(*shape, dtype=DOUBLE, requires_grad=True)
    layer = getattr(lib.nn, layer_name)(p, **kwargs)
    y = layer(x)
    y.backward(lib.ones_like(y))
    return y, x.grad, y.grad_fn.name(), lib.randn(2)  # the generator advanced the same way


@pytest.mark.parametrize(
    "layer_name, shape",
    [
        ("Dropout1d", (4, 6, 5)),
        ("Dropout1d", (6, 5)),  # unbatched
        ("Dropout2d", (3, 4, 2, 5)),
    ],
)
@pytest.mark.parametrize("p, seed", [(0.5, 0), (0.2, 1), (0.9, 2), (1.0, 3)])
def test_channel_dropout_draws_torchs_masks(layer_name, shape, p, seed):
    m_y, m_grad, m_name, m_next = _dropped(minitorch, layer_name, shape, p, seed)
    t_y, t_grad, t_name, t_next = _dropped(torch, layer_name, shape, p, seed)
    assert_close(m_y, t_y, "output")
    assert_close(m_grad, t_grad, "input gradient")
    assert m_name == t_name
    assert_close(m_next, t_next, "next random numbers")


@LIBS
def test_channel_dropout_zeroes_whole_channels_and_is_identity_in_eval(lib):
    lib.manual_seed(0)
    x = lib.ones(8, 16, 3, 3)
    layer = lib.nn.Dropout2d(0.5)
    y = layer(x)
    per_channel = y.sum(dim=(2, 3)).reshape(-1).tolist()
    assert set(per_channel) == {0.0, 18.0}
    layer.eval()
    assert layer(x) is x
    assert lib.equal(lib.nn.Dropout1d(0.0)(x[0]), x[0])


def _channel_dropout_messages(lib):
    dropout1d = _functional_dropout(lib, "dropout1d")
    dropout2d = _functional_dropout(lib, "dropout2d")
    outcomes = []
    for call in [
        lambda: dropout2d(lib.ones(2, 3, 4), 0.5),
        lambda: dropout2d(lib.ones(3, 4), 0.5),
        lambda: dropout2d(lib.ones(4), 0.5),
        lambda: dropout1d(lib.ones(4), 0.5),
        lambda: dropout1d(lib.ones(2, 3, 4, 5), 0.5),
        lambda: dropout1d(lib.ones(2, 3, 4), 1.5),
        lambda: lib.nn.Dropout2d(-0.1),
        lambda: repr(lib.nn.Dropout1d(0.3)) + repr(lib.nn.Dropout2d(0.2, inplace=True)),
    ]:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            try:
                result = call()
                outcome = result if isinstance(result, str) else tuple(result.shape)
            except (RuntimeError, ValueError) as error:
                outcome = (type(error).__name__, str(error))
        outcomes.append((outcome, _messages(record)))
    return outcomes


def test_channel_dropout_warnings_and_errors_match_torch():
    assert _channel_dropout_messages(minitorch) == _channel_dropout_messages(torch)


def _inplace(lib, shape):
    lib.manual_seed(4)
    x = lib.randn(*shape, dtype=DOUBLE)
    h = x.clone()
    out = _functional_dropout(lib, "dropout1d")(h, 0.5, inplace=True)
    return out is h, h


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 4)])
def test_dropout1d_in_place(shape):
    m_same, m_h = _inplace(minitorch, shape)
    t_same, t_h = _inplace(torch, shape)
    assert m_same == t_same
    assert_close(m_h, t_h, "dropped in place")
