"""minitorch.viz.flow: the gradient-flow and order pictures, on PyTorch and minitorch graphs.

PyTorch is the oracle: the gradients in the picture are PyTorch's, and the same program recorded
by either library gives the same DOT source.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch

import minitorch
from minitorch import viz
from minitorch.viz.flow import format_value

LIBRARIES = [torch, minitorch]
IDS = ["torch", "minitorch"]


def scalar_graph(lib: Any) -> tuple[Any, dict[str, Any]]:
    """out = (x * w + sin(x)).sum() on scalars: x reaches its node along two paths."""
    x = lib.tensor(0.5, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
    xw = x * w
    s = x.sin()
    h = xw + s
    return h.sum(), {"x": x, "w": w, "x * w": xw, "sin(x)": s, "h": h}


def broadcast_graph(lib: Any) -> tuple[Any, dict[str, Any]]:
    """A (2, 3) input times a (3,) weight, a constant input without grad, a non-scalar out."""
    gen = torch.Generator().manual_seed(0)
    x = lib.tensor(torch.randn(2, 3, generator=gen, dtype=torch.float64).tolist())
    w = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    b = lib.tensor(0.25, dtype=lib.float64, requires_grad=True)
    return (x * w).tanh().sum(dim=1) * b, {"w": w, "b": b}


def diamond(lib: Any) -> tuple[Any, Any]:
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    a = x * 2
    return (a * a + a.exp().sin()).sum(), x


def breadth_first(out: Any) -> list:
    order, seen = [out.grad_fn], {out.grad_fn}
    for node in order:
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                order.append(child)
    return order


def engine_order(out: Any) -> list:
    """The order the library's engine runs the nodes in (a topological order)."""
    order = [out.grad_fn]
    handles = [
        node.register_prehook(lambda grads, node=node: order.append(node))
        for node in breadth_first(out)
    ]
    out.backward(retain_graph=True)
    for handle in handles:
        handle.remove()
    return order[1:]


def labels(source: str) -> dict[str, str]:
    """Node key -> label in a DOT source."""
    return dict(re.findall(r'^\t(n\d+) \[label="([^"]*)"', source, flags=re.MULTILINE))


def edges(source: str) -> list[tuple[str, str, str]]:
    """(tail, head, attributes) for every edge of a DOT source."""
    return re.findall(r"^\t(n\d+) -> (n\d+)(.*)$", source, flags=re.MULTILINE)


@pytest.mark.parametrize("lib", LIBRARIES, ids=IDS)
def test_gradient_flow_shows_values_and_the_gradients_of_pytorchs_backward(lib: Any) -> None:
    out, names = scalar_graph(lib)
    source = viz.gradient_flow(out, names).source
    tout, tnames = scalar_graph(torch)
    tx, tw = tnames["x"], tnames["w"]
    tout.backward()
    through_mul, through_sin = tw.item(), torch.cos(tx).item()
    found = labels(source)
    assert found["n0"] == f"SumBackward0\nout = {format_value(tout)}\ngrad: 1"
    assert "AddBackward0\nh = " in found["n1"]
    leaf_x = next(label for label in found.values() if label.startswith("x = 0.5"))
    assert leaf_x == (
        f"x = 0.5\ngrad: {through_mul:.3g} + {through_sin:.3g} = {tx.grad.item():.3g}"
    )
    assert f"w = 2\ngrad: {tw.grad.item():.3g}" in found.values()
    edge_labels = sorted(re.search(r'label=" ([^"]*)"', a).group(1) for _, _, a in edges(source))
    assert edge_labels == sorted(
        ["1", "1", "1", f"{through_mul:.3g}", f"{tx.item():.3g}", f"{through_sin:.3g}"]
    )


@pytest.mark.parametrize("build", [scalar_graph, broadcast_graph])
def test_both_libraries_give_the_same_picture(build: Any) -> None:
    sources = []
    for lib in LIBRARIES:
        out, names = build(lib)
        grad = None if out.dim() == 0 else lib.tensor([1.0, -1.0], dtype=lib.float64)
        sources.append(viz.gradient_flow(out, names, grad=grad, title="flow").source)
    assert sources[0] == sources[1]
    assert not re.search(r"\d{8,}|0x[0-9a-f]+", sources[0]), "no addresses in the source"


def test_broadcast_gradients_are_reduced_to_the_inputs_shape() -> None:
    """PyTorch's nodes return unreduced gradients for broadcast inputs; its engine reduces them
    before the hooks that the picture reads them from, so edges carry the inputs' shapes."""
    out, names = broadcast_graph(torch)
    grad = torch.tensor([1.0, -1.0], dtype=torch.float64)
    found = labels(viz.gradient_flow(out, names, grad=grad).source)
    (w_grad,) = torch.autograd.grad(out, names["w"], grad, retain_graph=True)
    assert f"w = [1, -2, 0.5]\ngrad: {format_value(w_grad)}" in found.values()
    assert any(label.startswith("b = 0.25\ngrad: ") for label in found.values())


@pytest.mark.parametrize("lib", LIBRARIES, ids=IDS)
def test_drawing_leaves_grads_graph_and_hooks_as_they_were(lib: Any) -> None:
    out, names = scalar_graph(lib)
    names["w"].grad = lib.tensor(10.0, dtype=lib.float64)
    first = viz.gradient_flow(out, names).source
    assert names["x"].grad is None and names["w"].grad.item() == 10.0
    assert viz.gradient_flow(out, names).source == first  # no hook left behind
    out.backward()  # the graph was retained
    expected = 2.0 + torch.cos(torch.tensor(0.5, dtype=torch.float64)).item()
    assert names["x"].grad.item() == pytest.approx(expected)
    if lib is minitorch:
        assert all(not node._hooks for node in breadth_first(out))


@pytest.mark.parametrize("lib", LIBRARIES, ids=IDS)
def test_unnamed_tensors_and_larger_values(lib: Any) -> None:
    x = lib.arange(6, dtype=lib.float64).reshape(2, 3).requires_grad_()
    out = (x * x).sum()
    found = labels(viz.gradient_flow(out).source)
    assert found["n1"] == "MulBackward0\ngrad: shape (2, 3)"
    assert found["n2"] == "leaf = shape (2, 3)\ngrad: shape (2, 3) + shape (2, 3) = shape (2, 3)"


@pytest.mark.parametrize("lib", LIBRARIES, ids=IDS)
def test_a_tensor_without_graph_is_refused(lib: Any) -> None:
    with pytest.raises(ValueError, match="no grad_fn"):
        viz.gradient_flow(lib.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="no grad_fn"):
        viz.order_dot(lib.tensor([1.0, 2.0]), {})


def test_non_scalar_output_needs_grad_as_in_backward() -> None:
    out, names = broadcast_graph(minitorch)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        viz.gradient_flow(out, names)


@pytest.mark.parametrize("lib", LIBRARIES, ids=IDS)
def test_order_dot_marks_the_arrows_an_order_runs_the_wrong_way(lib: Any) -> None:
    out, x = diamond(lib)
    orders = {"breadth-first": breadth_first(out), "engine": engine_order(out)}
    source = viz.order_dot(out, orders, {"x": x}).source
    found = labels(source)
    assert found["n0"] == "SumBackward0\nbreadth-first: 1\nengine: 1"
    assert found["n6"] == "AccumulateGrad\nx\nbreadth-first: 7\nengine: 7"
    red = [(tail, head, attrs) for tail, head, attrs in edges(source) if "red" in attrs]
    # Breadth-first discovers x * 2 (n4) through a * a, before its other consumer exp (n5).
    assert [(tail, head) for tail, head, _ in red] == [("n5", "n4")]
    assert 'label=" breadth-first"' in red[0][2]
    bordered = re.findall(r'^\t(n\d+) \[label="[^"]*" [^\]]*color=red', source, flags=re.MULTILINE)
    assert bordered == ["n4"]
    assert found["n4"].startswith("MulBackward0\nbreadth-first: 5\nengine: 6")


def test_order_dot_is_the_same_for_both_libraries_and_shows_missing_nodes() -> None:
    sources = []
    for lib in LIBRARIES:
        out, _ = diamond(lib)
        sources.append(viz.order_dot(out, {"first three": breadth_first(out)[:3]}).source)
    assert sources[0] == sources[1]
    assert "first three: -" in labels(sources[0])["n6"]
    assert "red" not in sources[0]


@pytest.mark.skipif(not viz.has_graphviz(), reason="graphviz's dot program is not installed")
def test_pictures_render() -> None:
    out, names = scalar_graph(minitorch)
    assert viz.gradient_flow(out, names).pipe(format="svg").startswith(b"<?xml")
    out, x = diamond(minitorch)
    svg = viz.order_dot(out, {"breadth-first": breadth_first(out)}, {"x": x}).pipe(format="svg")
    assert b"breadth&#45;first: 1" in svg  # graphviz writes "-" as &#45;
