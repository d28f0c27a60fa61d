"""In-place ops on views: the base's graph is rewritten too (PyTorch's CopySlices).

Each program runs on torch and on minitorch in float64; every leaf gradient must agree.
"""

import pytest
import torch

import minitorch


def _leaves(lib):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64, generator=gen)
    w = torch.randn(3, dtype=torch.float64, generator=gen)
    return (
        lib.tensor(x.tolist(), dtype=lib.float64, requires_grad=True),
        lib.tensor(w.tolist(), dtype=lib.float64, requires_grad=True),
    )


def augmented_assignment_on_an_index(lib, x, w):
    y = x * 2
    y[0] += w
    y[1, 1:] *= w[:2]
    return y


def method_on_a_slice(lib, x, w):
    y = x.sin()
    y[:, 0].mul_(w[0]).add_(1.0)
    return y.exp()


def view_of_a_view(lib, x, w):
    y = x * 1.0
    v = y.view(2, 6)[1]
    v[2:5] = w
    return y * y


def transposed_view_then_relu(lib, x, w):
    y = x - 0.5
    t = y.t()
    t[1].relu_()
    return y.sum(0) * w


def setitem_with_a_value_that_requires_grad(lib, x, w):
    buffer = lib.zeros(4, 3, dtype=lib.float64)
    buffer[1] = w * 2
    buffer[2:] = x[:2]
    return buffer.tanh()


PROGRAMS = [
    augmented_assignment_on_an_index,
    method_on_a_slice,
    view_of_a_view,
    transposed_view_then_relu,
    setitem_with_a_value_that_requires_grad,
]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_gradients_match_pytorch(program):
    results = {}
    for lib in (torch, minitorch):
        x, w = _leaves(lib)
        out = program(lib, x, w)
        out.sum().backward()
        results[lib.__name__] = (out, x.grad, w.grad)
    (t_out, t_gx, t_gw), (m_out, m_gx, m_gw) = results["torch"], results["minitorch"]
    assert torch.allclose(m_out._data, t_out.detach()), "forward values differ from PyTorch"
    for name, ours, theirs in (("x", m_gx, t_gx), ("w", m_gw, t_gw)):
        assert (ours is None) == (theirs is None), f"{name}.grad: None-ness differs from PyTorch"
        if theirs is not None:
            assert torch.allclose(ours._data, theirs), (
                f"{name}.grad differs from PyTorch:\n{ours._data}\nvs\n{theirs}"
            )


def test_the_base_records_copy_slices():
    x, w = _leaves(minitorch)
    y = x * 2
    y[0] += w
    assert y.grad_fn.name() == "torch::autograd::CopySlices", (
        "the base's new grad_fn is the slice copy"
    )
    assert y[0].grad_fn.name() == "SelectBackward0"


def test_a_view_of_a_leaf_cannot_be_changed_in_place():
    for lib in (torch, minitorch):
        x, _ = _leaves(lib)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            x[0] += 1.0


def test_a_view_of_a_leaf_can_be_changed_under_no_grad():
    x, _ = _leaves(minitorch)
    with minitorch.no_grad():
        x[0] += 1.0
        x[1].mul_(0.0)
    assert x.grad_fn is None and x.requires_grad
    assert float(x[1].abs().sum()) == 0.0


def test_changing_a_view_bumps_the_shared_version_and_is_caught():
    for lib in (torch, minitorch):
        x, _ = _leaves(lib)
        y = x.exp()  # ExpBackward0 saves its result
        z = y * 1.0
        y[0].mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (z + y).sum().backward()


def test_views_from_split_cannot_be_changed_in_place():
    for lib in (torch, minitorch):
        x, w = _leaves(lib)
        first, second = (x * 3.0).split(2)
        with pytest.raises(RuntimeError, match="Output 1 of Split is a view"):
            second.mul_(w)
