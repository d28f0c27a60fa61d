"""Reductions and the softmax family against PyTorch.

Hypothesis picks the shape, the dims (None, one int, negative ints, a tuple) and keepdim. Values
for max/min/argmax/norm(inf) are distinct by construction; ties are tested separately, because
PyTorch's rule there is part of the behaviour (max() and amax share the gradient evenly, max(dim)
gives it to the index it returns).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from oracle import (
    Case,
    away_from_zero,
    check_gradcheck,
    check_op,
    distinct,
    distinct_magnitudes,
    make_values,
    seeds,
    shape_and_dim,
    shape_and_dims,
    uniform,
)

keepdims = st.booleans()


def _check(fn, maker, shape, seed, node_name=None):
    check_op(fn, make_values((maker,), [shape], seed), seed, node_name)


# Reductions over dims: None, an int, or a tuple ---------------------------------------------------
def _reduce_all_or_dims(method: str):
    """x.<method>() when dim is None, else x.<method>(dim, keepdim=keepdim)."""

    def build(dim, keepdim):
        if dim is None:
            return lambda lib, x: getattr(x, method)()
        return lambda lib, x: getattr(x, method)(dim, keepdim=keepdim)

    return build


def _logsumexp(dim, keepdim):
    """logsumexp has no "all dims" default: dim None becomes every dim."""

    def fn(lib, x):
        return x.logsumexp(tuple(range(x.dim())) if dim is None else dim, keepdim=keepdim)

    return fn


MULTI_DIM = {
    "sum": (_reduce_all_or_dims("sum"), uniform()),
    "mean": (_reduce_all_or_dims("mean"), uniform()),
    "amax": (_reduce_all_or_dims("amax"), distinct()),
    "amin": (_reduce_all_or_dims("amin"), distinct()),
    "logsumexp": (_logsumexp, uniform()),
}


@pytest.mark.parametrize("name", MULTI_DIM)
@given(shape_dims=shape_and_dims(), keepdim=keepdims, seed=seeds)
def test_reduction_over_dims_matches_torch(name, shape_dims, keepdim, seed):
    build, maker = MULTI_DIM[name]
    shape, dims = shape_dims
    _check(build(dims, keepdim), maker, shape, seed)


@pytest.mark.parametrize("function", ["sum", "mean"])
@given(shape_dims=shape_and_dims(), keepdim=keepdims, seed=seeds)
def test_sum_and_mean_as_functions(function, shape_dims, keepdim, seed):
    shape, dims = shape_dims

    def fn(lib, x):
        if dims is None:
            return getattr(lib, function)(x)
        return getattr(lib, function)(x, dim=dims, keepdim=keepdim)

    _check(fn, uniform(), shape, seed)


@pytest.mark.parametrize("p", [1, 2, 3, math.inf, "fro"])
@given(shape_dims=shape_and_dims(), keepdim=keepdims, seed=seeds)
def test_norm_matches_torch(p, shape_dims, keepdim, seed):
    shape, dims = shape_dims
    # torch: 'fro' takes at most 2 dims
    assume(not (p == "fro" and isinstance(dims, tuple) and len(dims) > 2))

    def fn(lib, x):
        return x.norm(p, dim=dims, keepdim=keepdim)

    maker = distinct_magnitudes() if p == math.inf else away_from_zero()
    _check(fn, maker, shape, seed)


@pytest.mark.parametrize("method", ["var", "std"])
@given(
    shape_dims=shape_and_dims(),
    keepdim=keepdims,
    correction=st.sampled_from([None, 0, 1, 2]),
    unbiased=st.booleans(),
    seed=seeds,
)
def test_var_and_std_match_torch(method, shape_dims, keepdim, correction, unbiased, seed):
    shape, dims = shape_dims
    dim_list = [dims] if isinstance(dims, int) else dims
    reduced = shape if dims is None else [shape[d] for d in dim_list]
    # Fewer elements than the correction: the result is nan or inf, tested separately below.
    assume(math.prod(reduced) > (1 if correction is None else correction))

    def fn(lib, x):
        if correction is not None:
            return getattr(x, method)(dims, keepdim=keepdim, correction=correction)
        if dims is None:
            return getattr(x, method)(unbiased=unbiased)
        return getattr(x, method)(dims, unbiased, keepdim)

    _check(fn, uniform(), shape, seed)


@pytest.mark.parametrize("function", ["var", "std"])
def test_var_and_std_as_functions(function):
    fn = lambda lib, x: getattr(lib, function)(x, dim=1, keepdim=True)
    _check(fn, uniform(), (3, 4), seed=1)


# Ops along a single dim --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["max", "min"])
@given(shape_dim=shape_and_dim(), keepdim=keepdims, seed=seeds)
def test_max_min_along_a_dim_return_values_and_indices(method, shape_dim, keepdim, seed):
    shape, dim = shape_dim
    _check(lambda lib, x: getattr(x, method)(dim, keepdim=keepdim), distinct(), shape, seed)
    _check(lambda lib, x: getattr(lib, method)(x, dim=dim).values, distinct(), shape, seed)


@pytest.mark.parametrize("method", ["max", "min"])
@given(shape=st.lists(st.integers(1, 3), max_size=3).map(tuple), seed=seeds)
def test_max_min_of_everything(method, shape, seed):
    _check(lambda lib, x: getattr(x, method)(), distinct(), shape, seed)


def test_max_along_a_dim_is_a_named_tuple():
    x = torch.tensor([[1.0, 5.0], [7.0, 2.0]], dtype=torch.float64)

    def fn(lib, t):
        result = t.max(dim=1)
        return result.values * 2, result.indices

    check_op(fn, [x])


@pytest.mark.parametrize("method", ["argmax", "argmin"])
@given(shape_dim=shape_and_dim(min_rank=0), keepdim=keepdims, seed=seeds)
def test_argmax_argmin_match_torch(method, shape_dim, keepdim, seed):
    shape, dim = shape_dim
    if not shape:
        dim = None
    _check(lambda lib, x: getattr(x, method)(dim, keepdim=keepdim), distinct(), shape, seed)
    _check(lambda lib, x: getattr(lib, method)(x), distinct(), shape, seed)


SOFTMAX_FAMILY = {
    "softmax": lambda dim: lambda lib, x: x.softmax(dim),
    "softmax_function": lambda dim: lambda lib, x: lib.softmax(x, dim=dim),
    "log_softmax": lambda dim: lambda lib, x: x.log_softmax(dim),
    "log_softmax_function": lambda dim: lambda lib, x: lib.log_softmax(x, dim),
    "logsumexp_one_dim": lambda dim: lambda lib, x: lib.logsumexp(x, dim),
}


@pytest.mark.parametrize("name", SOFTMAX_FAMILY)
@given(shape_dim=shape_and_dim(), seed=seeds)
def test_softmax_family_matches_torch(name, shape_dim, seed):
    shape, dim = shape_dim
    _check(SOFTMAX_FAMILY[name](dim), uniform(-5, 5), shape, seed)


def test_softmax_family_is_stable_for_large_inputs():
    x = torch.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -999.0]], dtype=torch.float64)
    check_op(lambda lib, t: t.softmax(1), [x])
    check_op(lambda lib, t: t.log_softmax(1), [x])
    check_op(lambda lib, t: t.logsumexp(1), [x])


# 0-d tensors accept dim 0 and -1 --------------------------------------------------------------
ZERO_D = {
    "sum": lambda lib, x: x.sum(0),
    "mean": lambda lib, x: x.mean(-1, keepdim=True),
    "amax": lambda lib, x: x.amax(0),
    "max_dim": lambda lib, x: x.max(0),
    "logsumexp": lambda lib, x: x.logsumexp(0),
    "softmax": lambda lib, x: x.softmax(0),
    "log_softmax": lambda lib, x: x.log_softmax(-1),
    "norm": lambda lib, x: x.norm(dim=0),
    "argmax": lambda lib, x: x.argmax(0),
}


@pytest.mark.parametrize("name", ZERO_D)
def test_zero_dim_tensor_reductions(name):
    _check(ZERO_D[name], away_from_zero(), (), seed=2)


# gradcheck on tiny inputs --------------------------------------------------------------------
GRADCHECK = {
    "sum_dim": Case(lambda lib, x: x.sum(1), (uniform(),)),
    "sum_tuple_keepdim": Case(lambda lib, x: x.sum((0, 1), keepdim=True), (uniform(),)),
    "mean": Case(lambda lib, x: x.mean(0), (uniform(),)),
    "max_all": Case(lambda lib, x: x.max(), (distinct(),)),
    "max_dim": Case(lambda lib, x: x.max(1), (distinct(),)),
    "min_dim": Case(lambda lib, x: x.min(0, keepdim=True), (distinct(),)),
    "amax": Case(lambda lib, x: x.amax(-1), (distinct(),)),
    "norm_1": Case(lambda lib, x: x.norm(1, dim=1), (away_from_zero(),)),
    "norm_2": Case(lambda lib, x: x.norm(), (away_from_zero(),)),
    "norm_3": Case(lambda lib, x: x.norm(3, dim=0), (away_from_zero(),)),
    "norm_inf": Case(lambda lib, x: x.norm(math.inf, dim=1), (distinct_magnitudes(),)),
    "var": Case(lambda lib, x: x.var(1), (uniform(),)),
    "std": Case(lambda lib, x: x.std(), (uniform(),)),
    "softmax": Case(lambda lib, x: x.softmax(1), (uniform(),)),
    "log_softmax": Case(lambda lib, x: x.log_softmax(0), (uniform(),)),
    "logsumexp": Case(lambda lib, x: x.logsumexp(1), (uniform(),)),
}


@pytest.mark.parametrize("name", GRADCHECK)
def test_reduction_gradcheck(name):
    case = GRADCHECK[name]
    check_gradcheck(case.fn, make_values(case.makers, [(2, 3)], seed=7))


# Ties and degenerate sizes: PyTorch's exact rule, element by element ------------------------------
TIED = torch.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]], dtype=torch.float64)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("max_all", lambda lib, x: x.max()),
        ("min_all", lambda lib, x: x.min()),
        ("max_dim", lambda lib, x: x.max(1)),
        ("min_dim", lambda lib, x: x.min(1, keepdim=True)),
        ("amax", lambda lib, x: x.amax(1)),
        ("amin_all", lambda lib, x: x.amin((0, 1))),
        ("argmax", lambda lib, x: x.argmax(1)),
        ("argmax_flat", lambda lib, x: x.argmax()),
        ("norm_inf", lambda lib, x: x.norm(math.inf, dim=1)),
        ("norm_inf_signs", lambda lib, x: (x * lib.tensor([1.0, -1.0, 1.0])).norm(math.inf)),
    ],
)
def test_ties_follow_torch(name, fn):
    check_op(fn, [TIED])


def test_norm_of_zeros_has_zero_gradient():
    zeros = torch.zeros(2, 3, dtype=torch.float64)
    check_op(lambda lib, x: x.norm(2, dim=1), [zeros])
    check_op(lambda lib, x: x.norm(3, dim=1), [zeros])


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("method", ["var", "std"])
def test_var_and_std_of_one_element_are_nan_like_torch(method):
    x = torch.tensor([[1.5], [2.5]], dtype=torch.float64)
    check_op(lambda lib, t: getattr(t, method)(1), [x])


@pytest.mark.cuda
@pytest.mark.parametrize("name", GRADCHECK)
def test_reductions_on_cuda(name):
    case = GRADCHECK[name]
    check_op(case.fn, make_values(case.makers, [(3, 4)], seed=0), device="cuda")
