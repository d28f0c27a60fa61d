"""The backward engine: accumulation, retain_graph, autograd.grad, backward(inputs=...),
higher-order gradients, hooks and their order, deep graphs, random graphs against PyTorch,
grad modes, inference mode, anomaly detection and gradcheck.

Tests parametrized by `lib` run the same code on `torch` and on `minitorch`.
"""

import re
import sys
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch

LIBS = pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
FREED = "backward through the graph a second time"


def _leaf(lib, values=(1.0, 2.0, 3.0), **kw):
    return lib.tensor(list(values), requires_grad=True, **kw)


def _values(t):
    return None if t is None else t.detach().tolist()


# ----------------------------------------------------------------------------------------------
# Accumulation and freeing
# ----------------------------------------------------------------------------------------------
@LIBS
def test_grad_accumulates_across_backward_calls(lib):
    x = _leaf(lib, (1.0, 2.0))
    unused = _leaf(lib, (5.0,))
    seen = []
    for _ in range(3):
        (x * 2).sum().backward()
        seen.append(x.grad.tolist())
    assert seen == [[2.0, 2.0], [4.0, 4.0], [6.0, 6.0]], f"2x/4x/6x expected, got {seen}"
    assert unused.grad is None, "a parameter that took no part keeps .grad None"
    x.grad.zero_()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


@LIBS
def test_first_grad_is_a_copy_of_the_incoming_gradient(lib):
    x = _leaf(lib, (1.0, 2.0))
    g = lib.ones(2)
    (x * 1).backward(g)
    assert x.grad is not g
    x.grad.add_(1)
    assert g.tolist() == [1.0, 1.0], "changing .grad must not change the gradient passed in"


@LIBS
def test_fan_out_gradients_are_summed(lib):
    x = _leaf(lib, (2.0,))
    y = x * x + x.exp() * x + 3 * x
    y.sum().backward()
    expected = 2 * 2.0 + (2.0 + 1) * torch.tensor(2.0).exp().item() + 3
    assert x.grad.item() == pytest.approx(expected)


@LIBS
def test_second_backward_without_retain_graph_fails(lib):
    x = _leaf(lib)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=FREED) as info:
        y.backward()
    assert "retain_graph=True" in str(info.value)


@LIBS
def test_retain_graph_allows_a_second_backward(lib):
    x = _leaf(lib, (1.0, 2.0))
    y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    expected = (2 * torch.tensor([1.0, 2.0]).exp()).tolist()
    assert x.grad.tolist() == pytest.approx(expected)


@LIBS
def test_second_backward_works_when_nothing_was_saved(lib):
    x = _leaf(lib, (1.0, 2.0))
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


@LIBS
def test_backward_with_explicit_gradient(lib):
    x = _leaf(lib, (1.0, 2.0))
    (x * x).backward(lib.tensor([1.0, 0.5]))
    assert x.grad.tolist() == [2.0, 2.0]
    lib.autograd.backward([(x * 3).sum(), (x * 4).sum()])
    assert x.grad.tolist() == [9.0, 9.0]


# ----------------------------------------------------------------------------------------------
# autograd.grad and backward(inputs=...)
# ----------------------------------------------------------------------------------------------
@LIBS
def test_autograd_grad_returns_a_tuple_and_leaves_grad_alone(lib):
    x = _leaf(lib, (1.0, 2.0))
    result = lib.autograd.grad((x * x).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1
    assert result[0].tolist() == [2.0, 4.0]
    assert x.grad is None


@LIBS
def test_autograd_grad_allow_unused_and_materialize(lib):
    x = _leaf(lib, (1.0, 2.0))
    unused = _leaf(lib, (7.0,))
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="index 1 appears to not have been used"):
        lib.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = lib.autograd.grad(y, [x, unused], retain_graph=True, allow_unused=True)
    assert (gx.tolist(), gu) == ([2.0, 2.0], None)
    gx, gu = lib.autograd.grad(y, [x, unused], materialize_grads=True)
    assert gu.tolist() == [0.0], "materialize_grads gives zeros for unused inputs"
    with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
        lib.autograd.grad((x * 2).sum(), [x, unused], allow_unused=False, materialize_grads=True)


@LIBS
def test_autograd_grad_with_grad_outputs_and_several_outputs(lib):
    a = _leaf(lib, (1.0, 2.0))
    b = lib.tensor([3.0, 4.0])
    (g,) = lib.autograd.grad(a * b, a, grad_outputs=lib.tensor([1.0, 10.0]))
    assert g.tolist() == [3.0, 40.0]
    (g,) = lib.autograd.grad([(a * a).sum(), (a * 3).sum()], a)
    assert g.tolist() == [5.0, 7.0]
    (g,) = lib.autograd.grad([a * a, a * 3], a, grad_outputs=[lib.ones(2), lib.ones(2)])
    assert g.tolist() == [5.0, 7.0]


@LIBS
def test_autograd_grad_with_respect_to_non_leaves(lib):
    a = _leaf(lib, (1.0, 2.0))
    b = _leaf(lib, (3.0, 4.0))
    m = a * 2
    out = (m * b).sum()
    gm, ga = lib.autograd.grad(out, [m, a], retain_graph=True)
    assert (gm.tolist(), ga.tolist()) == ([3.0, 4.0], [6.0, 8.0])
    (gb,) = lib.autograd.grad(out, b)
    assert gb.tolist() == [2.0, 4.0]
    assert (a.grad, b.grad) == (None, None)


@LIBS
def test_autograd_grad_twice_needs_retain_graph(lib):
    x = _leaf(lib, (1.0, 2.0))
    y = (x * x).sum()
    lib.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match=FREED):
        lib.autograd.grad(y, x)


@LIBS
def test_the_same_input_listed_twice(lib):
    a = _leaf(lib, (1.0, 2.0))
    ga, ga_again = lib.autograd.grad((a * 2).sum(), [a, a])
    assert (_values(ga), _values(ga_again)) == ([2.0, 2.0], [2.0, 2.0])
    (a * 2).sum().backward(inputs=[a, a])
    assert a.grad.tolist() == [2.0, 2.0], "accumulated once"


@LIBS
def test_backward_inputs_fills_only_those(lib):
    a = _leaf(lib, (1.0, 2.0))
    b = _leaf(lib, (3.0, 4.0))
    (a * b).sum().backward(inputs=[b])
    assert (a.grad, b.grad.tolist()) == (None, [1.0, 2.0])
    (a * b).sum().backward(inputs=b)
    assert b.grad.tolist() == [2.0, 4.0]


@LIBS
@pytest.mark.parametrize("retain", [False, True])
def test_backward_inputs_on_a_non_leaf(lib, retain):
    a = _leaf(lib, (1.0, 2.0))
    m = a * 2
    if retain:
        m.retain_grad()
    (m * 3).sum().backward(inputs=[m])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert m.grad.tolist() == [3.0, 3.0], "the non-leaf input gets its gradient once"
    assert a.grad is None


# ----------------------------------------------------------------------------------------------
# Higher-order gradients
# ----------------------------------------------------------------------------------------------
@LIBS
def test_create_graph_gives_second_derivative(lib):
    x = lib.tensor(2.0, requires_grad=True)
    (g,) = lib.autograd.grad(x**3, x, create_graph=True)
    assert g.item() == 12.0 and g.requires_grad and g.grad_fn is not None
    (gg,) = lib.autograd.grad(g, x)
    assert gg.item() == 12.0


@LIBS
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_through_backward_and_third_derivative(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    (x.sin() * x).sum().backward(create_graph=True)
    first = x.grad
    assert first.requires_grad
    (second,) = lib.autograd.grad(first.sum(), x, create_graph=True)
    (third,) = lib.autograd.grad(second.sum(), x)
    xs = torch.tensor([1.0, 2.0], dtype=torch.float64)
    # d/dx (x sin x) = sin + x cos; then 2 cos - x sin; then -3 sin - x cos
    expected = (-3 * xs.sin() - xs * xs.cos()).tolist()
    assert third.tolist() == pytest.approx(expected)


def _gradient_of_gradient_norm(lib):
    w = lib.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=lib.float64, requires_grad=True)
    v = lib.tensor([1.0, 3.0], dtype=lib.float64)
    loss = ((w @ v).tanh() ** 2).sum()
    (g,) = lib.autograd.grad(loss, w, create_graph=True)
    penalty = (g * g).sum()
    penalty.backward()
    assert w.grad.shape == (2, 2)
    return w.grad.tolist()


def test_gradient_of_gradient_norm_matches_torch():
    ours = _gradient_of_gradient_norm(minitorch)
    theirs = _gradient_of_gradient_norm(torch)
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs), rtol=1e-12, atol=0)


# ----------------------------------------------------------------------------------------------
# Hooks
# ----------------------------------------------------------------------------------------------
def _hook_log(lib):
    """Run a small graph with every kind of hook; return what each hook saw, in order."""
    log = []

    def values(grads):
        return [None if g is None else [round(v, 4) for v in g.tolist()] for g in grads]

    x = _leaf(lib, (1.0, 2.0))
    a = x * 3
    y = a.exp()
    a.register_hook(lambda g: log.append(("tensor hook", values([g]))))
    a.grad_fn.register_prehook(lambda go: log.append(("node prehook", values(go))))
    a.grad_fn.register_hook(lambda gi, go: log.append(("node hook", values(gi), values(go))))
    x.register_hook(lambda g: log.append(("leaf tensor hook", values([g]))))
    acc = a.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("AccumulateGrad prehook", values(go))))
    acc.register_hook(lambda gi, go: log.append(("AccumulateGrad hook", gi, values(go))))
    a.retain_grad()
    y.sum().backward()
    log.append(("a.grad", values([a.grad])))
    log.append(("x.grad", values([x.grad])))
    return log


def test_hook_order_matches_torch():
    ours, theirs = _hook_log(minitorch), _hook_log(torch)
    assert [entry[0] for entry in ours] == [entry[0] for entry in theirs], (
        f"hook order differs:\nminitorch {[e[0] for e in ours]}\ntorch     {[e[0] for e in theirs]}"
    )
    assert ours == theirs


@LIBS
def test_tensor_hook_return_value_replaces_gradient(lib):
    x = _leaf(lib, (1.0, 2.0))
    a = x * 3
    a.register_hook(lambda g: g * 10)
    a.sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]
    x.grad = None
    x.register_hook(lambda g: g + 1)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0], "a leaf's hook runs before accumulation"


@LIBS
def test_retain_grad_sees_hooked_gradient(lib):
    x = _leaf(lib, (1.0, 2.0))
    a = x * 3
    a.retain_grad()
    a.register_hook(lambda g: g * 0)
    a.sum().backward()
    assert (a.grad.tolist(), x.grad.tolist()) == ([0.0, 0.0], [0.0, 0.0])
    assert a.retains_grad and not x.retains_grad


@LIBS
def test_node_prehook_and_hook_return_values_replace_gradients(lib):
    x = _leaf(lib, (1.0, 2.0))
    a = x * 3
    handle = a.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 10,))
    a.sum().backward()
    assert x.grad.tolist() == [30.0, 30.0]
    handle.remove()
    x.grad = None
    a = x * 3
    a.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] + 1, None))
    a.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


@LIBS
def test_removed_hooks_do_not_run(lib):
    calls = []
    x = _leaf(lib, (1.0, 2.0))
    a = x * 3
    handles = [
        a.register_hook(lambda g: calls.append("tensor")),
        a.grad_fn.register_prehook(lambda go: calls.append("prehook")),
        a.grad_fn.register_hook(lambda gi, go: calls.append("hook")),
        x.register_hook(lambda g: calls.append("leaf")),
    ]
    for handle in handles:
        handle.remove()
    handles[0].remove()  # removing twice is harmless
    a.sum().backward()
    assert calls == [] and x.grad.tolist() == [3.0, 3.0]


@LIBS
def test_hooks_run_in_autograd_grad_too(lib):
    calls = []
    a = _leaf(lib, (1.0, 2.0))
    m = a * 2
    m.register_hook(lambda g: calls.append("m"))
    a.register_hook(lambda g: calls.append("a"))
    lib.autograd.grad((m * 3).sum(), a)
    assert calls == ["m", "a"]


def _hooks_with_targets(lib):
    """Which hooks run in grad() and in backward(inputs=...), on a leaf and a non-leaf target."""
    log = []
    x = _leaf(lib, (1.0, 2.0))
    a = x.exp()
    b = a * 2
    accumulate = a.grad_fn.next_functions[0][0]
    x.register_hook(lambda g: log.append("x tensor hook"))
    accumulate.register_prehook(lambda go: log.append("AccumulateGrad prehook"))
    accumulate.register_hook(lambda gi, go: log.append("AccumulateGrad hook"))
    a.register_hook(lambda g: log.append("a tensor hook"))
    a.grad_fn.register_prehook(lambda go: log.append("Exp prehook"))
    a.grad_fn.register_hook(lambda gi, go: log.append("Exp hook"))
    for step, run in {
        "grad(x)": lambda: lib.autograd.grad(b.sum(), x, retain_graph=True),
        "grad(a)": lambda: lib.autograd.grad(b.sum(), a, retain_graph=True),
        "backward(inputs=[x])": lambda: b.sum().backward(inputs=[x], retain_graph=True),
        "backward(inputs=[a])": lambda: b.sum().backward(inputs=[a], retain_graph=True),
        "backward()": lambda: b.sum().backward(),
    }.items():
        log.append(f"-- {step}")
        run()
    log.append(f"x.grad {_values(x.grad)}")
    return log


def test_hooks_with_targets_match_torch():
    ours, theirs = _hooks_with_targets(minitorch), _hooks_with_targets(torch)
    assert ours == theirs, "\n".join(f"{o:30} {t}" for o, t in zip(ours, theirs))


# ----------------------------------------------------------------------------------------------
# Deep graphs
# ----------------------------------------------------------------------------------------------
CHAIN = 100_000


def test_long_chain_backward_has_no_recursion_limit():
    x = minitorch.tensor(1.0, dtype=minitorch.float64, requires_grad=True)
    h = x
    for _ in range(CHAIN):
        h = h * 1.00001
    h.backward()
    assert x.grad.item() == pytest.approx(1.00001**CHAIN, rel=1e-9)
    h = x
    for _ in range(CHAIN):
        h = h + 1.0
    (g,) = minitorch.autograd.grad(h, x)
    assert g.item() == 1.0
    del h  # dropping a deep graph must not overflow the C stack either


# ----------------------------------------------------------------------------------------------
# Random expression graphs against PyTorch
# ----------------------------------------------------------------------------------------------
SHAPES = [(3,), (2, 3), (1, 3), (2, 1), ()]
UNARY = {
    "sin": lambda t: t.sin(),
    "tanh": lambda t: t.tanh(),
    "sigmoid": lambda t: t.sigmoid(),
    "neg": lambda t: -t,
    "scale": lambda t: t * 1.7,
    "rsub": lambda t: 2.0 - t,
    "cube": lambda t: t**3,
    "log1p_sq": lambda t: (1 + t * t).log(),
    "sum_last": lambda t: t.sum(-1, keepdim=True) if t.dim() else t,
    "mean_first": lambda t: t.mean(0, keepdim=True) if t.dim() else t,
}
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (1 + b * b),
    "max": lambda a, b: (a + b * 0.5).maximum(b),
}


@st.composite
def programs(draw):
    n_leaves = draw(st.integers(1, 4))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(n_leaves)]
    n_values = n_leaves
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(sorted(UNARY)))
            steps.append((op, draw(st.integers(0, n_values - 1))))
        else:
            op = draw(st.sampled_from(sorted(BINARY)))
            # the same index twice is allowed: reused inputs (x * x)
            steps.append(
                (op, draw(st.integers(0, n_values - 1)), draw(st.integers(0, n_values - 1)))
            )
        n_values += 1
    outputs = draw(st.lists(st.integers(0, n_values - 1), min_size=1, max_size=3, unique=True))
    seed = draw(st.integers(0, 2**16))
    return shapes, steps, outputs, seed


def _run_program(lib, program):
    shapes, steps, outputs, seed = program
    generator = torch.Generator().manual_seed(seed)
    leaves = [
        lib.tensor(
            torch.rand(shape, generator=generator, dtype=torch.float64).mul(2).sub(1).tolist(),
            dtype=lib.float64,
            requires_grad=True,
        )
        for shape in shapes
    ]
    values = list(leaves)
    for op, *args in steps:
        fn = UNARY.get(op) or BINARY[op]
        values.append(fn(*(values[i] for i in args)))
    loss = sum((values[i] * (k + 1)).sum() for k, i in enumerate(outputs))
    loss.backward()
    return loss.item(), [_values(leaf.grad) for leaf in leaves]


@settings(max_examples=200, deadline=None)
@given(programs())
def test_random_graphs_match_torch(program):
    ours_loss, ours = _run_program(minitorch, program)
    theirs_loss, theirs = _run_program(torch, program)
    assert ours_loss == pytest.approx(theirs_loss, rel=1e-12), "forward values differ"
    for index, (g_ours, g_theirs) in enumerate(zip(ours, theirs)):
        if g_theirs is None:
            assert g_ours is None, f"leaf {index}: torch leaves .grad None, minitorch {g_ours}"
            continue
        assert g_ours is not None, f"leaf {index}: minitorch .grad is None, torch {g_theirs}"
        expected = torch.tensor(g_theirs, dtype=torch.float64)
        got = torch.tensor(g_ours, dtype=torch.float64)
        torch.testing.assert_close(
            got, expected, rtol=1e-10, atol=1e-12, msg=lambda m, i=index: f"leaf {i} gradient: {m}"
        )


# ----------------------------------------------------------------------------------------------
# Grad modes
# ----------------------------------------------------------------------------------------------
@LIBS
def test_grad_mode_context_managers_nest_and_restore(lib):
    x = _leaf(lib)
    assert lib.is_grad_enabled()
    with lib.no_grad():
        assert not lib.is_grad_enabled() and not (x * 2).requires_grad
        with lib.enable_grad():
            assert lib.is_grad_enabled() and (x * 2).requires_grad
        with lib.set_grad_enabled(True):
            assert lib.is_grad_enabled()
        assert not lib.is_grad_enabled()
    with lib.set_grad_enabled(False):
        assert not lib.is_grad_enabled()
    assert lib.is_grad_enabled()
    with pytest.raises(KeyError):
        with lib.no_grad():
            raise KeyError("inside no_grad")
    assert lib.is_grad_enabled(), "an exception inside no_grad must restore grad mode"


@LIBS
def test_set_grad_enabled_as_a_function(lib):
    lib.set_grad_enabled(False)
    try:
        assert not lib.is_grad_enabled()
        assert not (_leaf(lib) * 2).requires_grad
    finally:
        lib.set_grad_enabled(True)
    assert lib.is_grad_enabled()


@LIBS
def test_grad_modes_as_decorators(lib):
    x = _leaf(lib)

    @lib.no_grad()
    def called():
        return (x * 2).requires_grad

    @lib.no_grad
    def bare():
        return (x * 2).requires_grad

    @lib.set_grad_enabled(False)
    def switched():
        return lib.is_grad_enabled()

    assert lib.is_grad_enabled(), "decorating with set_grad_enabled(False) must not switch now"

    @lib.enable_grad()
    def enabled():
        return (x * 2).requires_grad

    @lib.inference_mode()
    def inferred():
        return lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    assert (called(), bare(), switched()) == (False, False, False)
    with lib.no_grad():
        assert enabled()
    assert inferred() == (False, True)
    assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
    assert called.__name__ == "called" and bare.__name__ == "bare"


@LIBS
def test_grad_modes_nested_with_inference_mode(lib):
    x = _leaf(lib)
    with lib.inference_mode():
        with lib.enable_grad():
            y = x * 2
            assert lib.is_grad_enabled() and lib.is_inference_mode_enabled()
            assert not y.requires_grad and y.is_inference(), "inference mode still wins"
        with lib.no_grad():
            assert not lib.is_grad_enabled() and lib.is_inference_mode_enabled()
    with lib.no_grad():
        with lib.inference_mode(False):
            assert lib.is_grad_enabled(), "inference_mode(False) enables grad, as in PyTorch"
            assert (x * 2).requires_grad
        assert not lib.is_grad_enabled()


@LIBS
def test_backward_under_no_grad_still_computes_gradients(lib):
    x = _leaf(lib, (1.0, 2.0))
    y = (x * x).sum()
    with lib.no_grad():
        y.backward()
    assert x.grad.tolist() == [2.0, 4.0]


@LIBS
def test_inference_mode(lib):
    w = _leaf(lib)
    with lib.inference_mode():
        assert not lib.is_grad_enabled() and lib.is_inference_mode_enabled()
        t = w * 2
        assert not t.requires_grad and t.is_inference()
    assert not w.is_inference()
    with lib.inference_mode(False):
        assert lib.is_grad_enabled()
    (w + t).sum().backward()  # adding saves nothing: allowed
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (w * t).sum().backward()
    with pytest.raises(RuntimeError, match="inference tensor outside InferenceMode"):
        t.requires_grad_()
    u = t.clone()
    assert not u.is_inference()
    (w * u).sum().backward()


# ----------------------------------------------------------------------------------------------
# Anomaly detection
# ----------------------------------------------------------------------------------------------
@LIBS
def test_nan_gradient_is_silent_without_anomaly_mode(lib):
    assert not lib.is_anomaly_enabled()
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (lib.sqrt(x) * 0).sum().backward()
    assert x.grad.isnan().tolist() == [True, False]


def _anomaly_failure(lib, use_context):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if use_context:
            manager = lib.autograd.detect_anomaly()
        else:
            manager = lib.autograd.set_detect_anomaly(True)
        with manager:
            assert lib.is_anomaly_enabled()
            y = (lib.sqrt(x) * 0).sum()  # the forward line the warning must show
            with pytest.raises(RuntimeError) as info:
                y.backward()
    assert not lib.is_anomaly_enabled(), "anomaly mode must be switched off on exit"
    return str(info.value), [str(w.message) for w in caught]


@LIBS
@pytest.mark.parametrize("use_context", [True, False], ids=["detect_anomaly", "set_detect"])
def test_anomaly_mode_names_the_op_and_the_forward_line(lib, use_context):
    error, messages = _anomaly_failure(lib, use_context)
    assert error == "Function 'SqrtBackward0' returned nan values in its 0th output."
    found = [m for m in messages if "Error detected in SqrtBackward0" in m]
    assert found, f"no anomaly warning among {messages}"
    assert "Traceback of forward call that caused the error:" in found[0]
    assert "y = (lib.sqrt(x) * 0).sum()  # the forward line the warning must show" in found[0]
    assert re.search(r"test_engine\.py\", line \d+, in _anomaly_failure", found[0]), found[0]
    if use_context:
        assert any("Anomaly Detection has been enabled" in m for m in messages)


# ----------------------------------------------------------------------------------------------
# gradcheck
# ----------------------------------------------------------------------------------------------
def _double(lib, values, shape=None):
    t = lib.tensor(values, dtype=lib.float64)
    return (t if shape is None else t.reshape(shape)).requires_grad_()


GRADCHECK_CASES = {
    "mul_div": (lambda a, b: a * b / (1 + b * b), [(0.3, -1.2, 2.0), (1.5, 0.2, -0.7)]),
    "exp_tanh": (lambda a, b: (a.exp() * b).tanh(), [(0.3, -1.2, 2.0), (1.5, 0.2, -0.7)]),
    "broadcast": (lambda a, b: a.reshape(3, 1) + b, [(0.3, -1.2, 2.0), (1.5, 0.2, -0.7)]),
    "matmul": (
        lambda a, b: a.reshape(3, 1) @ b.reshape(1, 3),
        [(0.3, -1.2, 2.0), (1.5, 0.2, -0.7)],
    ),
    "sum_pow": (lambda a, b: (a**2 * b).sum(), [(0.3, -1.2, 2.0), (1.5, 0.2, -0.7)]),
}


@LIBS
@pytest.mark.parametrize("case", sorted(GRADCHECK_CASES))
def test_gradcheck_passes_on_correct_ops(lib, case):
    fn, values = GRADCHECK_CASES[case]
    assert lib.autograd.gradcheck(fn, tuple(_double(lib, list(v)) for v in values))


def _bad_square(lib):
    class BadSquare(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * a  # the factor 2 is missing

    return BadSquare


@LIBS
def test_gradcheck_catches_a_wrong_backward(lib):
    bad = _bad_square(lib)
    x = _double(lib, [1.0, 2.0])
    # `from torch.autograd.gradcheck import GradcheckError` works for both libraries
    error_type = sys.modules[f"{lib.__name__}.autograd.gradcheck"].GradcheckError
    with pytest.raises(error_type) as info:
        lib.autograd.gradcheck(bad.apply, (x,))
    assert "Jacobian mismatch for output 0 with respect to input 0" in str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert lib.autograd.gradcheck(bad.apply, (x,), raise_exception=False) is False


@LIBS
def test_gradcheck_warns_on_float32(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        lib.autograd.gradcheck(lambda a: a * 3, (x,), eps=1e-3, atol=1e-2, rtol=1e-2)
