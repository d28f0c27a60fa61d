"""The recorded graph, inspected the way students inspect PyTorch's: node names, next_functions,
AccumulateGrad, saved values, callable nodes and custom Functions.

Most tests run the same code on `torch` and on `minitorch` (parametrized by `lib`), so every
expectation written here is checked against PyTorch itself.
"""

import gc
import weakref

import pytest
import torch

import minitorch

LIBS = pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])


def _leaf(lib, values=(1.0, 2.0, 3.0), **kw):
    return lib.tensor(list(values), requires_grad=True, **kw)


# ----------------------------------------------------------------------------------------------
# Node names and next_functions
# ----------------------------------------------------------------------------------------------
NAMED_OPS = {
    "mul": lambda L, x, y, m: x * y,
    "add": lambda L, x, y, m: x + y,
    "sub": lambda L, x, y, m: x - y,
    "div": lambda L, x, y, m: x / y,
    "neg": lambda L, x, y, m: -x,
    "exp": lambda L, x, y, m: x.exp(),
    "log": lambda L, x, y, m: x.log(),
    "sqrt": lambda L, x, y, m: x.sqrt(),
    "tanh": lambda L, x, y, m: x.tanh(),
    "sigmoid": lambda L, x, y, m: x.sigmoid(),
    "relu": lambda L, x, y, m: x.relu(),
    "pow_scalar": lambda L, x, y, m: x**2,
    "pow_tensor": lambda L, x, y, m: x**y,
    "sum": lambda L, x, y, m: x.sum(),
    "sum_dim": lambda L, x, y, m: m.sum(0),
    "mean": lambda L, x, y, m: x.mean(),
    "mm": lambda L, x, y, m: m @ m,
    "mv": lambda L, x, y, m: m @ x,
    "dot": lambda L, x, y, m: x @ y,
    "view": lambda L, x, y, m: m.view(9),
    "t": lambda L, x, y, m: m.t(),
    "unsqueeze": lambda L, x, y, m: x.unsqueeze(0),
    "expand": lambda L, x, y, m: x.expand(2, 3),
    "cat": lambda L, x, y, m: L.cat([x, y]),
    "select": lambda L, x, y, m: x[0],
    "slice": lambda L, x, y, m: x[1:],
    "softmax": lambda L, x, y, m: x.softmax(0),
    "clone": lambda L, x, y, m: x.clone(),
    "to_double": lambda L, x, y, m: x.double(),
    "max": lambda L, x, y, m: x.max(),
    "add_inplace": lambda L, x, y, m: (x * 1).add_(y),
}


def _named_op_node(lib, build):
    x = _leaf(lib)
    y = _leaf(lib, (0.5, 1.5, 2.5))
    m = lib.tensor([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]], requires_grad=True)
    return build(lib, x, y, m).grad_fn


@pytest.mark.parametrize("op", sorted(NAMED_OPS))
def test_node_name_and_arity_match_torch(op):
    ours = _named_op_node(minitorch, NAMED_OPS[op])
    theirs = _named_op_node(torch, NAMED_OPS[op])
    assert ours.name() == theirs.name(), f"{op}: node {ours.name()}, PyTorch {theirs.name()}"
    assert len(ours.next_functions) == len(theirs.next_functions), (
        f"{op}: {len(ours.next_functions)} next_functions, PyTorch has {len(theirs.next_functions)}"
    )
    assert repr(ours).startswith(f"<{theirs.name()} object at 0x"), repr(ours)


# Built-in ops whose integer/bool arguments (condition, mask, index) are not differentiable
# inputs in PyTorch, so they get no entry in next_functions.
@pytest.mark.parametrize(
    "build",
    [
        lambda L, x: L.where(x > 1, x, x * 2),
        lambda L, x: x.masked_fill(x > 1, 0.0),
        lambda L, x: x.index_select(0, L.tensor([0])),
        lambda L, x: x.gather(0, L.tensor([0, 1])),
    ],
    ids=["where", "masked_fill", "index_select", "gather"],
)
def test_non_differentiable_arguments_have_no_edge(build):
    ours = build(minitorch, _leaf(minitorch)).grad_fn.next_functions
    theirs = build(torch, _leaf(torch)).grad_fn.next_functions
    assert len(ours) == len(theirs), f"{len(ours)} next_functions, PyTorch has {len(theirs)}"


@LIBS
def test_next_functions_accumulate_grad_and_none(lib):
    x = _leaf(lib)
    node = (x * 2).grad_fn
    assert node.name() == "MulBackward0"
    (first, nr0), (second, nr1) = node.next_functions
    assert type(first).__name__ == "AccumulateGrad", type(first).__name__
    assert first.variable is x, "AccumulateGrad.variable must be the leaf tensor itself"
    assert (second, nr0, nr1) == (None, 0, 0), f"constant input edge: {(second, nr1)}"
    assert first.name() == "torch::autograd::AccumulateGrad", first.name()
    assert repr(first).startswith("<AccumulateGrad object at 0x"), repr(first)


@LIBS
def test_accumulate_grad_node_is_shared_between_uses(lib):
    x = _leaf(lib)
    a, b = x * 2, x.exp()
    node_a = a.grad_fn.next_functions[0][0]
    node_b = b.grad_fn.next_functions[0][0]
    assert node_a is node_b, "both uses of x must lead to the same AccumulateGrad node"
    z = x * x
    assert z.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[1][0]


@LIBS
def test_next_functions_follow_argument_order_and_output_nr(lib):
    x = _leaf(lib)
    y = _leaf(lib)
    a = x.exp()
    b = y.sin()
    node = (b - a).grad_fn
    assert [n.name() for n, _ in node.next_functions] == ["SinBackward0", "ExpBackward0"]
    parts = lib.split(x * 1, 1)
    node = (parts[2] + parts[0]).grad_fn
    assert [nr for _, nr in node.next_functions] == [2, 0], "output_nr of the split outputs"


@LIBS
def test_walking_the_graph_collects_every_node(lib):
    x = _leaf(lib)
    w = _leaf(lib, (0.1, 0.2, 0.3))
    loss = ((x * w).tanh() + w.exp()).sum()
    names, stack, seen = [], [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    names = sorted(n.rsplit("::", 1)[-1] for n in names)
    assert names == sorted(
        ["SumBackward0", "AddBackward0", "TanhBackward0", "MulBackward0", "ExpBackward0"]
        + ["AccumulateGrad"] * 2
    ), names


# ----------------------------------------------------------------------------------------------
# is_leaf and requires_grad propagation
# ----------------------------------------------------------------------------------------------
@LIBS
def test_is_leaf_and_requires_grad_propagation(lib):
    x = _leaf(lib)
    c = lib.ones(3)
    y = x * c
    k = c * 2
    cases = {
        "x": (x.is_leaf, x.requires_grad, x.grad_fn is None),
        "c": (c.is_leaf, c.requires_grad, c.grad_fn is None),
        "x*c": (y.is_leaf, y.requires_grad, y.grad_fn is None),
        "c*2": (k.is_leaf, k.requires_grad, k.grad_fn is None),
        "detach": (y.detach().is_leaf, y.detach().requires_grad, y.detach().grad_fn is None),
    }
    expected = {
        "x": (True, True, True),
        "c": (True, False, True),
        "x*c": (False, True, False),
        "c*2": (True, False, True),
        "detach": (True, False, True),
    }
    assert cases == expected


@LIBS
def test_no_grad_results_are_leaves_without_graph(lib):
    x = _leaf(lib)
    with lib.no_grad():
        y = x * 2
    assert (y.requires_grad, y.is_leaf, y.grad_fn) == (False, True, None)


@LIBS
def test_requires_grad_flag_on_a_leaf_can_be_switched(lib):
    x = lib.ones(2)
    assert x.requires_grad_() is x
    assert x.requires_grad
    x.requires_grad = False
    assert not (x * 2).requires_grad
    y = _leaf(lib) * 2
    assert y.requires_grad_(True) is y, "requires_grad_(True) on a non-leaf is a no-op"


@LIBS
def test_integer_results_do_not_require_grad(lib):
    x = _leaf(lib)
    assert not (x > 1).requires_grad
    assert not x.argmax().requires_grad
    assert (x > 1).grad_fn is None


# ----------------------------------------------------------------------------------------------
# Saved values
# ----------------------------------------------------------------------------------------------
@LIBS
def test_saved_values_are_visible(lib):
    x = _leaf(lib)
    y = _leaf(lib, (4.0, 5.0, 6.0))
    node = (x * y).grad_fn
    assert node._saved_self is x and node._saved_other is y
    e = x.exp()
    saved = e.grad_fn._saved_result
    assert saved is not e, "the saved result is a new tensor object, as in PyTorch"
    assert saved.tolist() == e.tolist()
    assert saved.grad_fn is e.grad_fn, "the saved result keeps its place in the graph"
    assert "_saved_result" in dir(e.grad_fn)
    assert {"_saved_self", "_saved_other"} <= set(dir(node))


@LIBS
def test_saved_attributes_listed_by_dir_are_all_readable(lib):
    """torchviz-style code reads every `_saved_*` name that dir() lists."""
    x = _leaf(lib)
    for node in ((x * x).grad_fn, x.exp().grad_fn, (x + 1).grad_fn):
        for attr in dir(node):
            if attr.startswith("_saved_"):
                value = getattr(node, attr)
                assert value is None or hasattr(value, "shape") or isinstance(value, int), (
                    f"{node.name()}.{attr} is {value!r}, not a saved value"
                )


@LIBS
def test_mul_by_constant_saves_only_what_the_gradient_needs(lib):
    x = _leaf(lib)
    node = (x * 2).grad_fn
    assert node._saved_self is None, "x * 2 does not need x for its gradient"
    y = (x * 2).sum()
    y.backward()
    # PyTorch 2.13 keeps the wrapped number 2 as `_saved_other`, so this graph is freed too.
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


@LIBS
@pytest.mark.parametrize("build", ["mul", "exp"])
def test_reading_saved_values_after_backward_raises(lib, build):
    x = _leaf(lib)
    y = x * x if build == "mul" else x.exp()
    attr = "_saved_self" if build == "mul" else "_saved_result"
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        getattr(y.grad_fn, attr)


@LIBS
def test_saved_values_survive_retain_graph(lib):
    x = _leaf(lib)
    y = x.exp()
    y.sum().backward(retain_graph=True)
    assert y.grad_fn._saved_result.tolist() == y.tolist()


def test_graph_is_freed_when_output_is_dropped():
    """(PyTorch's nodes cannot be weakly referenced, so this runs on minitorch only.)"""
    x = _leaf(minitorch)
    y = (x * 2).exp()
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None, "nodes must not keep themselves alive (reference cycle)"


# ----------------------------------------------------------------------------------------------
# Calling nodes
# ----------------------------------------------------------------------------------------------
@LIBS
def test_single_input_node_returns_a_tensor(lib):
    x = _leaf(lib)
    grad = x.sum().grad_fn(lib.tensor(2.0))
    assert not isinstance(grad, tuple)
    assert grad.tolist() == [2.0, 2.0, 2.0]
    grad = x.exp().grad_fn(lib.ones(3))
    assert grad.detach().tolist() == x.exp().detach().tolist()


@LIBS
def test_multi_input_node_returns_a_tuple(lib):
    x = _leaf(lib)
    y = _leaf(lib, (4.0, 5.0, 6.0))
    grads = (x * y).grad_fn(lib.ones(3))
    assert isinstance(grads, tuple) and len(grads) == 2
    assert [g.tolist() for g in grads] == [[4.0, 5.0, 6.0], [1.0, 2.0, 3.0]]
    grads = (x * 2).grad_fn(lib.ones(3))
    assert isinstance(grads, tuple) and grads[1] is None
    assert grads[0].tolist() == [2.0, 2.0, 2.0]


@LIBS
def test_calling_a_node_does_not_touch_grad(lib):
    x = _leaf(lib)
    (x * 3).grad_fn(lib.ones(3))
    assert x.grad is None


# ----------------------------------------------------------------------------------------------
# Custom Functions
# ----------------------------------------------------------------------------------------------
def _scale_function(lib, seen):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor, y):
            seen["forward_needs"] = tuple(ctx.needs_input_grad)
            seen["grad_enabled_in_forward"] = lib.is_grad_enabled()
            ctx.factor = factor
            ctx.save_for_backward(x, y)
            return x * factor + y

        @staticmethod
        def backward(ctx, grad):
            seen["backward_needs"] = tuple(ctx.needs_input_grad)
            x, y = ctx.saved_tensors
            seen["saved"] = (x.tolist(), y.tolist())
            return (
                grad * ctx.factor if ctx.needs_input_grad[0] else None,
                None,
                grad if ctx.needs_input_grad[2] else None,
            )

    return Scale


@LIBS
def test_custom_function_with_non_tensor_argument(lib):
    seen = {}
    scale = _scale_function(lib, seen)
    x = _leaf(lib, (1.0, 2.0))
    y = lib.tensor([3.0, 4.0])
    out = scale.apply(x, 3.0, y)
    assert out.tolist() == [6.0, 10.0]
    assert out.grad_fn.name() == "ScaleBackward"
    assert repr(out) == "tensor([ 6., 10.], grad_fn=<ScaleBackward>)"
    assert len(out.grad_fn.next_functions) == 2, "one edge per tensor argument"
    assert out.grad_fn.next_functions[1] == (None, 0)
    assert out.grad_fn.factor == 3.0, "attributes set on ctx are kept on the node"
    out.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    assert seen == {
        "forward_needs": (True, False, False),
        "grad_enabled_in_forward": False,
        "backward_needs": (True, False, False),
        "saved": ([1.0, 2.0], [3.0, 4.0]),
    }


@LIBS
def test_custom_function_needs_input_grad_for_both(lib):
    seen = {}
    scale = _scale_function(lib, seen)
    x = _leaf(lib, (1.0, 2.0))
    y = _leaf(lib, (3.0, 4.0))
    scale.apply(x, 2.0, y).sum().backward()
    assert seen["backward_needs"] == (True, False, True)
    assert (x.grad.tolist(), y.grad.tolist()) == ([2.0, 2.0], [1.0, 1.0])


@LIBS
def test_custom_function_without_grad_inputs_records_nothing(lib):
    seen = {}
    out = _scale_function(lib, seen).apply(lib.ones(2), 2.0, lib.ones(2))
    assert (out.requires_grad, out.grad_fn) == (False, None)
    assert seen["forward_needs"] == (False, False, False)


@LIBS
def test_custom_function_mark_non_differentiable(lib):
    seen = {}

    class SortedWithMask(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            doubled = x * 2
            positive = x > 0
            thrice = x * 3
            ctx.mark_non_differentiable(positive, thrice)
            return doubled, positive, thrice

        @staticmethod
        def backward(ctx, grad, grad_mask, grad_thrice):
            seen["others"] = (grad_mask, grad_thrice.tolist())
            return grad * 2

    x = _leaf(lib, (1.0, -2.0))
    doubled, positive, thrice = SortedWithMask.apply(x)
    assert (doubled.requires_grad, positive.requires_grad, thrice.requires_grad) == (
        True,
        False,
        False,
    )
    assert thrice.is_leaf and thrice.grad_fn is None
    doubled.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert seen["others"][1] == [0.0, 0.0], "unused outputs get zero gradients"


@LIBS
def test_custom_function_two_outputs_share_one_node(lib):
    seen = {}

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            seen["grads"] = (grad_a.tolist(), grad_b.tolist())
            return grad_a * 2 + grad_b * 3

    x = _leaf(lib, (1.0,))
    a, b = Two.apply(x)
    assert a.grad_fn is b.grad_fn
    assert (a.output_nr, b.output_nr) == (0, 1)
    (a * 10).sum().backward()
    assert seen["grads"] == ([10.0], [0.0])
    assert x.grad.tolist() == [20.0]


@LIBS
def test_custom_function_returning_its_input(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 5

    x = _leaf(lib, (1.0,))
    out = Identity.apply(x)
    assert out is not x and x.is_leaf and out.grad_fn.name() == "IdentityBackward"
    out.sum().backward()
    assert x.grad.tolist() == [5.0]


@LIBS
def test_custom_function_saved_tensors_freed_after_backward(lib):
    seen = {}
    scale = _scale_function(lib, seen)
    out = scale.apply(_leaf(lib, (1.0,)), 2.0, lib.ones(1))
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = out.grad_fn.saved_tensors


@LIBS
def test_custom_function_wrong_number_of_gradients(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad

    out = Wrong.apply(_leaf(lib), _leaf(lib))
    with pytest.raises(RuntimeError, match=r"WrongBackward returned an incorrect number of grad"):
        out.sum().backward()


@LIBS
def test_custom_function_gradient_of_wrong_shape(lib):
    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, grad):
            return lib.ones(5)

    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[5\]"):
        Wrong.apply(_leaf(lib)).backward()


def test_builtin_ops_are_functions_too():
    """Built-in ops use the same public mechanism a student uses."""
    x = _leaf(minitorch)
    node = (x * x).grad_fn
    assert isinstance(node, minitorch.autograd.graph.BackwardNode)
    assert issubclass(node._forward_cls, minitorch.autograd.Function)
