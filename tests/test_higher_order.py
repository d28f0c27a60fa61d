"""Second derivatives of every differentiable op, against PyTorch.

minitorch writes every backward formula with minitorch ops, so with `create_graph=True` the
gradient has a graph of its own and can be differentiated again. For each op below,
`check_second_order` (see oracle.py) computes in both libraries

    g = grad(f(x), x, grad_outputs=v, create_graph=True)
    grad(sum(w * g), [x, v])

and compares g and both second derivatives: with respect to the inputs (the Hessian-vector
product) and with respect to the upstream gradient v (which proves backward is written with
differentiable ops all the way, even for ops whose second derivative is zero).

A few cases also run minitorch's gradcheck on the gradient function itself (finite differences
of the first derivative), which checks second derivatives without trusting torch.
"""

from __future__ import annotations

import math

import pytest
import torch
from oracle import (
    Case,
    away_from,
    away_from_zero,
    check_second_order,
    constant,
    distinct,
    distinct_magnitudes,
    leaves,
    make_values,
    on_grid,
    positive,
    uniform,
)

import minitorch

U, P, NZ = uniform(), positive(), away_from_zero()
M, V, S = (2, 3), (3,), ()  # a matrix, a vector that broadcasts against it, a 0-d tensor


def _index(lib, data, dtype=torch.int64):
    return constant(lib, torch.tensor(data, dtype=dtype))


def _inplace(method, *args):
    def fn(lib, x, *others):
        y = x * 1
        getattr(y, method)(*others, *args)
        return y

    return fn


def _setitem(lib, x, value):
    y = x * 1
    y[0] = value
    y[:, 1] = value[1] * value[1]
    return y


def _augmented_div(lib, x, other):
    y = x * x
    y /= other
    y *= other.exp()
    y += other
    y -= x
    return y


# name: (case, shapes of the inputs)
OPS = {
    # elementwise, broadcasting
    "add": (Case(lambda lib, a, b: a + b, (U, U)), [M, V]),
    "sub": (Case(lambda lib, a, b: a - b, (U, U)), [M, V]),
    "mul": (Case(lambda lib, a, b: a * b, (U, U)), [M, V]),
    "div": (Case(lambda lib, a, b: a / b, (U, NZ)), [M, V]),
    "pow": (Case(lambda lib, a, b: a**b, (P, U)), [M, V]),
    "maximum": (Case(lambda lib, a, b: lib.maximum(a, b) ** 2, (on_grid(0), on_grid(0.5))), [M, V]),
    "minimum": (Case(lambda lib, a, b: lib.minimum(a, b) ** 2, (on_grid(0), on_grid(0.5))), [M, V]),
    "where": (Case(lambda lib, a, b: lib.where(a > 0, a * a, b * a), (NZ, U)), [M, V]),
    "masked_fill": (Case(lambda lib, x: (x * x).masked_fill(x > 0, 0.5), (NZ,)), [M]),
    "masked_fill_tensor": (Case(lambda lib, x, v: x.masked_fill(x > 0, v * v), (NZ, U)), [M, S]),
    # elementwise with numbers
    "neg": (Case(lambda lib, x: -(x * x), (U,)), [M]),
    "square": (Case(lambda lib, x: x**2, (U,)), [M]),
    "cube": (Case(lambda lib, x: x**3, (U,)), [M]),
    "reciprocal": (Case(lambda lib, x: x**-1, (NZ,)), [M]),
    "fractional_power": (Case(lambda lib, x: x**2.5, (P,)), [M]),
    "number_base": (Case(lambda lib, x: 2**x, (U,)), [M]),
    "number_sub": (Case(lambda lib, x: 2 - x * x, (U,)), [M]),
    "number_div": (Case(lambda lib, x: 2 / x, (NZ,)), [M]),
    "number_add_mul": (Case(lambda lib, x: 3 * (1.5 + x) * x, (U,)), [M]),
    # unary
    "exp": (Case(lambda lib, x: x.exp(), (U,)), [M]),
    "log": (Case(lambda lib, x: x.log(), (P,)), [M]),
    "sqrt": (Case(lambda lib, x: x.sqrt(), (P,)), [M]),
    "sin": (Case(lambda lib, x: x.sin(), (U,)), [M]),
    "cos": (Case(lambda lib, x: x.cos(), (U,)), [M]),
    "tanh": (Case(lambda lib, x: x.tanh(), (U,)), [M]),
    "sigmoid": (Case(lambda lib, x: x.sigmoid(), (U,)), [M]),
    "relu": (Case(lambda lib, x: x.relu() * x, (NZ,)), [M]),
    "abs": (Case(lambda lib, x: x.abs() * x, (NZ,)), [M]),
    "clamp": (Case(lambda lib, x: x.clamp(-0.5, 0.5) * x, (away_from([-0.5, 0.5]),)), [M]),
    "clamp_min": (Case(lambda lib, x: x.clamp(min=0.2) ** 2, (away_from([0.2]),)), [M]),
    "clone": (Case(lambda lib, x: x.clone() * x, (U,)), [M]),
    # reductions
    "sum": (Case(lambda lib, x: x.sum() * x, (U,)), [M]),
    "sum_dim": (Case(lambda lib, x: x.sum(1, keepdim=True) * x, (U,)), [M]),
    "mean": (Case(lambda lib, x: x.mean(0) ** 2, (U,)), [M]),
    "max": (Case(lambda lib, x: x.max() * x, (distinct(),)), [M]),
    "max_dim": (Case(lambda lib, x: x.max(1).values ** 2, (distinct(),)), [M]),
    "min_dim": (Case(lambda lib, x: x.min(0, keepdim=True).values ** 2, (distinct(),)), [M]),
    "amax": (Case(lambda lib, x: x.amax(1) ** 2, (distinct(),)), [M]),
    "amin": (Case(lambda lib, x: x.amin(0) ** 2, (distinct(),)), [M]),
    "norm_1": (Case(lambda lib, x: x.norm(1, dim=1), (NZ,)), [M]),
    "norm_2": (Case(lambda lib, x: x.norm(), (NZ,)), [M]),
    "norm_2_dim": (Case(lambda lib, x: x.norm(dim=0, keepdim=True), (NZ,)), [M]),
    "norm_3": (Case(lambda lib, x: x.norm(3, dim=1), (NZ,)), [M]),
    "norm_inf": (Case(lambda lib, x: x.norm(math.inf) * x, (distinct_magnitudes(),)), [M]),
    "var": (Case(lambda lib, x: x.var(1), (U,)), [M]),
    "var_all": (Case(lambda lib, x: x.var(correction=0), (U,)), [M]),
    "std": (Case(lambda lib, x: x.std(0), (U,)), [M]),
    "std_all": (Case(lambda lib, x: x.std(), (U,)), [M]),
    "softmax": (Case(lambda lib, x: x.softmax(1), (U,)), [M]),
    "log_softmax": (Case(lambda lib, x: x.log_softmax(0), (U,)), [M]),
    "logsumexp": (Case(lambda lib, x: x.logsumexp(1), (U,)), [M]),
    # matmul
    "dot": (Case(lambda lib, a, b: a @ b, (U, U)), [V, V]),
    "mm": (Case(lambda lib, a, b: a @ b, (U, U)), [M, (3, 2)]),
    "mv": (Case(lambda lib, a, b: a @ b, (U, U)), [M, V]),
    "vm": (Case(lambda lib, a, b: a @ b, (U, U)), [(2,), M]),
    "batched_broadcast": (Case(lambda lib, a, b: a @ b, (U, U)), [(2, 1, 2, 3), (3, 3, 2)]),
    "matmul_tanh": (Case(lambda lib, a, b: (a @ b).tanh(), (U, U)), [(2, 2, 3), (3, 2)]),
    # shape ops (composed with a square so that the second derivative is not zero)
    "reshape": (Case(lambda lib, x: x.reshape(3, 2) ** 2, (U,)), [M]),
    "view": (Case(lambda lib, x: x.view(-1) ** 2, (U,)), [M]),
    "flatten": (Case(lambda lib, x: x.flatten() ** 2, (U,)), [(2, 1, 3)]),
    "squeeze": (Case(lambda lib, x: x.squeeze(1) ** 2, (U,)), [(2, 1, 3)]),
    "unsqueeze": (Case(lambda lib, x: x.unsqueeze(1) ** 2, (U,)), [M]),
    "permute": (Case(lambda lib, x: x.permute(2, 0, 1) ** 2, (U,)), [(2, 1, 3)]),
    "transpose": (Case(lambda lib, x: x.transpose(0, 1) ** 2, (U,)), [M]),
    "t": (Case(lambda lib, x: x.t() @ x, (U,)), [M]),
    "expand": (Case(lambda lib, x: x.expand(2, 3) ** 2, (U,)), [V]),
    "repeat": (Case(lambda lib, x: x.repeat(2, 2) ** 2, (U,)), [V]),
    "cat": (Case(lambda lib, a, b: lib.cat([a, b * a, a], 1) ** 2, (U, U)), [M, M]),
    "stack": (Case(lambda lib, a, b: lib.stack([a, b], 0) ** 2, (U, U)), [V, V]),
    "split": (Case(lambda lib, x: [p**2 for p in x.split([1, 2], 1)], (U,)), [M]),
    "chunk": (Case(lambda lib, x: x.chunk(2, 1)[0] ** 2, (U,)), [M]),
    "unbind": (Case(lambda lib, x: [p**2 for p in x.unbind(1)], (U,)), [M]),
    "index_select": (
        Case(lambda lib, x: x.index_select(1, _index(lib, [2, 0, 2])) ** 2, (U,)),
        [M],
    ),
    "gather": (
        Case(lambda lib, x: x.gather(1, _index(lib, [[0, 0], [2, 1]])) ** 2, (U,)),
        [M],
    ),
    # indexing
    "getitem_int": (Case(lambda lib, x: x[1] ** 2, (U,)), [M]),
    "getitem_slice_none_ellipsis": (Case(lambda lib, x: x[None, ..., 1:] ** 2, (U,)), [M]),
    "getitem_list": (Case(lambda lib, x: x[:, [0, 2, 0]] ** 2, (U,)), [M]),
    "getitem_range": (Case(lambda lib, x: x[range(1, 2)] ** 2, (U,)), [M]),
    "getitem_mask": (Case(lambda lib, x: x[x > 0] ** 2, (NZ,)), [M]),
    "getitem_int_tensor": (Case(lambda lib, x: x[_index(lib, [1, 1, 0])] ** 2, (U,)), [M]),
    "setitem": (Case(_setitem, (U, U)), [M, V]),
    # in-place ops on non-leaf tensors
    "add_": (Case(_inplace("add_"), (U, U)), [M, V]),
    "sub_": (Case(_inplace("sub_", 2), (U,)), [M]),
    "mul_": (Case(_inplace("mul_"), (U, U)), [M, V]),
    "div_": (Case(_inplace("div_"), (U, NZ)), [M, V]),
    "augmented_assignments": (Case(_augmented_div, (U, NZ)), [M, V]),
    "copy_": (Case(lambda lib, x, s: _inplace("copy_")(lib, x, s * s), (U, U)), [M, V]),
    "clamp_": (
        Case(lambda lib, x: _inplace("clamp_", -0.5, 0.5)(lib, x) * x, (away_from([-0.5, 0.5]),)),
        [M],
    ),
    "relu_": (Case(lambda lib, x: _inplace("relu_")(lib, x) * x, (NZ,)), [M]),
    "zero_": (Case(lambda lib, x: _inplace("zero_")(lib, x) + x * x, (U,)), [M]),
    "fill_": (Case(lambda lib, x: _inplace("fill_", 2.0)(lib, x) * x, (U,)), [M]),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", OPS)
def test_second_derivative_matches_torch(name, seed):
    case, shapes = OPS[name]
    check_second_order(case.fn, make_values(case.makers, shapes, seed), seed)


def test_third_derivative_of_a_power():
    """grad of grad of grad: d3/dx3 x**4 = 24 x, through three create_graph calls."""
    (x,) = leaves(minitorch, [torch.tensor([0.5, -1.5], dtype=torch.float64)])
    (first,) = minitorch.autograd.grad((x**4).sum(), x, create_graph=True)
    (second,) = minitorch.autograd.grad(first.sum(), x, create_graph=True)
    (third,) = minitorch.autograd.grad(second.sum(), x)
    expected = 24 * x._data
    assert torch.allclose(third._data, expected), f"third derivative {third} != {expected}"


GRAD_GRADCHECK = {
    "tanh": (lambda lib, x: x.tanh(), U, M),
    "div_by_self_squared": (lambda lib, x: x / (x * x + 1), U, M),
    "softmax": (lambda lib, x: x.softmax(1), U, M),
    "norm": (lambda lib, x: x.norm(dim=1), NZ, M),
    "std": (lambda lib, x: x.std(0), U, M),
    "matmul": (lambda lib, x: x @ x.t(), U, M),
    "logsumexp": (lambda lib, x: x.logsumexp(0), U, M),
}


@pytest.mark.parametrize("name", GRAD_GRADCHECK)
def test_gradient_function_passes_gradcheck(name):
    """Finite differences of the first derivative agree with its backward (gradgradcheck)."""
    fn, maker, shape = GRAD_GRADCHECK[name]
    (x_values,) = make_values((maker,), [shape], seed=5)
    out_shape = fn(torch, x_values).shape
    (v_values,) = make_values((U,), [out_shape], seed=6)
    x, v = leaves(minitorch, [x_values, v_values])

    def first_derivative(x, v):
        # gradcheck evaluates the function under no_grad for its finite differences; the
        # gradient inside needs a graph, so switch recording back on here.
        with minitorch.enable_grad():
            (g,) = minitorch.autograd.grad(fn(minitorch, x), x, v, create_graph=True)
        return g

    assert minitorch.autograd.gradcheck(first_derivative, [x, v])
