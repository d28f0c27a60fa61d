"""Shape ops, indexing and setitem against PyTorch.

Shape ops move elements without changing them, so their gradient moves back the same way; the
tests check values and gradients for hypothesis-made shapes and dims. Indexing is tested on a
fixed (2, 3, 4) input with one case per kind of index (ints, slices, None, Ellipsis, lists,
ranges, bool masks, integer tensors, mixtures), and with random integer tensors that repeat
indices (the gradient must add up, not overwrite).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import (
    check_gradcheck,
    check_op,
    constant,
    make_values,
    seeds,
    shape_and_dim,
    shapes,
    uniform,
)


def _values(shape_list, seed):
    return make_values([uniform()] * len(shape_list), shape_list, seed)


def _index(lib, data, dtype=torch.int64):
    """An index tensor of `lib` (torch or minitorch) holding `data`."""
    return constant(lib, torch.tensor(data, dtype=dtype))


# Views and reshapes -----------------------------------------------------------------------------
@st.composite
def shape_and_new_shape(draw):
    """A shape and another with the same number of elements, sometimes with a -1."""
    shape = draw(shapes())
    n = math.prod(shape)
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    first = draw(st.sampled_from(divisors))
    candidates = [(n,), (-1,), (first, n // first), (first, -1), (1, n, 1), (-1, first, 1), ()]
    new_shape = draw(st.sampled_from([c for c in candidates if c != () or n == 1]))
    return shape, new_shape


@pytest.mark.parametrize("method", ["reshape", "view"])
@given(shapes_=shape_and_new_shape(), seed=seeds)
def test_reshape_and_view(method, shapes_, seed):
    shape, new_shape = shapes_
    check_op(lambda lib, x: getattr(x, method)(new_shape), _values([shape], seed), seed)
    if new_shape:  # x.view() with no sizes at all is an error in torch
        check_op(lambda lib, x: getattr(x, method)(*new_shape), _values([shape], seed), seed)


def test_reshape_of_a_non_contiguous_tensor_copies():
    # torch records UnsafeViewBackward0 when reshape has to copy; minitorch records the same
    # ViewBackward0 node either way (a deliberate simplification: the gradient is the same).
    values = _values([(2, 3)], seed=1)
    check_op(lambda lib, x: x.t().reshape(6) * 1, values)
    check_op(lambda lib, x: x.t().reshape(6), values, node_name="ViewBackward0")


@given(shape=shapes(), data=st.data(), seed=seeds)
def test_flatten(shape, data, seed):
    rank = max(len(shape), 1)
    start = data.draw(st.integers(-rank, rank - 1))
    end = data.draw(st.integers(start % rank, rank - 1))
    check_op(lambda lib, x: x.flatten(start, end), _values([shape], seed), seed)
    check_op(lambda lib, x: lib.flatten(x), _values([shape], seed), seed)


@given(shape=shapes(max_side=2), data=st.data(), seed=seeds)
def test_squeeze(shape, data, seed):
    values = _values([shape], seed)
    check_op(lambda lib, x: x.squeeze(), values, seed)
    rank = max(len(shape), 1)
    dim = data.draw(st.integers(-rank, rank - 1))
    check_op(lambda lib, x: x.squeeze(dim), values, seed)
    check_op(lambda lib, x: lib.squeeze(x, dim), values, seed)
    if shape:
        dims = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
        check_op(lambda lib, x: x.squeeze(dims), values, seed)


@given(shape=shapes(), data=st.data(), seed=seeds)
def test_unsqueeze(shape, data, seed):
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_op(lambda lib, x: x.unsqueeze(dim), _values([shape], seed), seed)
    check_op(lambda lib, x: lib.unsqueeze(x, dim), _values([shape], seed), seed)


@given(shape=shapes(), data=st.data(), seed=seeds)
def test_permute(shape, data, seed):
    order = data.draw(st.permutations(range(len(shape))))
    negative = [d - len(shape) for d in order]
    if order:  # x.permute() with no dims at all is an error in torch
        check_op(lambda lib, x: x.permute(*order), _values([shape], seed), seed)
    check_op(lambda lib, x: x.permute(negative), _values([shape], seed), seed)
    check_op(lambda lib, x: lib.permute(x, order), _values([shape], seed), seed)


@given(shape=shapes(), data=st.data(), seed=seeds)
def test_transpose(shape, data, seed):
    rank = max(len(shape), 1)
    dim0, dim1 = data.draw(st.integers(-rank, rank - 1)), data.draw(st.integers(-rank, rank - 1))
    check_op(lambda lib, x: x.transpose(dim0, dim1), _values([shape], seed), seed)
    check_op(lambda lib, x: lib.transpose(x, dim0, dim1), _values([shape], seed), seed)


@given(shape=shapes(0, 2), seed=seeds)
def test_t_and_T(shape, seed):
    check_op(lambda lib, x: x.t(), _values([shape], seed), seed)
    check_op(lambda lib, x: lib.t(x), _values([shape], seed), seed)
    if len(shape) == 2:  # torch deprecates .T on other ranks
        check_op(lambda lib, x: x.T * 1, _values([shape], seed), seed)


@st.composite
def shape_and_expanded(draw):
    """A shape and sizes it expands to: new leading dims, size-1 dims stretched, and -1."""
    shape = draw(shapes(max_side=2))
    lead = draw(st.lists(st.integers(1, 3), max_size=2))
    # A size-1 dim may stretch to 3; any dim may keep its size, or say so with -1.
    sizes = [draw(st.sampled_from([1, 3, -1] if s == 1 else [s, -1])) for s in shape]
    return shape, tuple(lead) + tuple(sizes)


@given(shapes_=shape_and_expanded(), seed=seeds)
def test_expand(shapes_, seed):
    shape, sizes = shapes_
    if sizes:
        check_op(lambda lib, x: x.expand(*sizes), _values([shape], seed), seed)
    check_op(lambda lib, x: x.expand(sizes) * 1, _values([shape], seed), seed)


@given(shapes2=st.tuples(shapes(), shapes(0, 2)), seed=seeds)
def test_expand_as(shapes2, seed):
    shape, extra = shapes2
    target = torch.empty(extra + shape)
    check_op(lambda lib, x: x.expand_as(constant(lib, target)), _values([shape], seed), seed)


@given(shape=shapes(), data=st.data(), seed=seeds)
def test_repeat(shape, data, seed):
    extra = data.draw(st.integers(0, 2))
    count = len(shape) + extra  # repeat may add leading dims
    repeats = tuple(data.draw(st.lists(st.integers(1, 3), min_size=count, max_size=count)))
    if repeats:
        check_op(lambda lib, x: x.repeat(*repeats), _values([shape], seed), seed)
    check_op(lambda lib, x: x.repeat(repeats), _values([shape], seed), seed)


# Joining and splitting -------------------------------------------------------------------------
@given(
    shape_dim=shape_and_dim(), sizes=st.lists(st.integers(1, 3), min_size=1, max_size=3), seed=seeds
)
def test_cat(shape_dim, sizes, seed):
    shape, dim = shape_dim
    shape_list = []
    for size in sizes:
        piece = list(shape)
        piece[dim] = size
        shape_list.append(tuple(piece))
    check_op(lambda lib, *xs: lib.cat(xs, dim), _values(shape_list, seed), seed)
    check_op(lambda lib, *xs: lib.cat(list(xs), dim=dim), _values(shape_list, seed), seed)


@given(shape=shapes(), count=st.integers(1, 3), data=st.data(), seed=seeds)
def test_stack(shape, count, data, seed):
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_op(lambda lib, *xs: lib.stack(xs, dim), _values([shape] * count, seed), seed)


@given(shape_dim=shape_and_dim(), data=st.data(), seed=seeds)
def test_split_and_chunk(shape_dim, data, seed):
    shape, dim = shape_dim
    size = shape[dim]
    split_size = data.draw(st.integers(1, size + 1))
    values = _values([shape], seed)
    check_op(lambda lib, x: x.split(split_size, dim), values, seed)
    check_op(lambda lib, x: lib.split(x, split_size, dim=dim), values, seed)
    check_op(lambda lib, x: x.chunk(split_size, dim), values, seed)
    check_op(lambda lib, x: lib.chunk(x, split_size, dim), values, seed)
    cuts = data.draw(st.lists(st.integers(0, size), max_size=2).map(sorted))
    sections = [b - a for a, b in zip([0, *cuts], [*cuts, size])]
    check_op(lambda lib, x: x.split(sections, dim), values, seed)


def test_only_some_split_pieces_used():
    """Pieces that get no gradient count as zeros in split's backward."""
    values = _values([(5, 2)], seed=3)
    check_op(lambda lib, x: x.split(2)[1] * 3, values)
    check_op(lambda lib, x: x.chunk(3, 0)[2].exp(), values)


@given(shape_dim=shape_and_dim(), seed=seeds)
def test_unbind(shape_dim, seed):
    shape, dim = shape_dim
    check_op(lambda lib, x: x.unbind(dim), _values([shape], seed), seed)


# index_select and gather -----------------------------------------------------------------------
@given(shape_dim=shape_and_dim(), data=st.data(), seed=seeds)
def test_index_select_with_repeated_indices(shape_dim, data, seed):
    shape, dim = shape_dim
    index = data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=1, max_size=5))

    def fn(lib, x):
        return x.index_select(dim, _index(lib, index))

    check_op(fn, _values([shape], seed), seed)
    check_op(lambda lib, x: lib.index_select(x, dim, _index(lib, index)), _values([shape], seed))


@given(shape_dim=shape_and_dim(), data=st.data(), seed=seeds)
def test_gather_with_repeated_indices(shape_dim, data, seed):
    shape, dim = shape_dim
    # index may be smaller than the input in every dim, and longer along `dim`.
    index_shape = [data.draw(st.integers(1, s)) for s in shape]
    index_shape[dim] = data.draw(st.integers(1, 4))
    generator = torch.Generator().manual_seed(seed)
    index = torch.randint(0, shape[dim], index_shape, generator=generator)

    def fn(lib, x):
        return x.gather(dim, constant(lib, index))

    check_op(fn, _values([shape], seed), seed)
    check_op(lambda lib, x: lib.gather(x, dim, constant(lib, index)), _values([shape], seed))


# getitem ----------------------------------------------------------------------------------------
# Each case: x[index] for x of shape (2, 3, 4), and minitorch's node name where it differs from
# torch's (None: the same). Both name basic indexing after the last view applied (Select, Slice,
# Unsqueeze; Alias when nothing changes), and advanced indexing IndexBackward0.
MASK_2D = [[True, False, True], [False, False, True]]  # for the first two dims of (2, 3, 4)

GETITEM = {
    "int": (lambda lib: 1, None),
    "negative_int": (lambda lib: -1, None),
    "two_ints": (lambda lib: (1, 2), None),
    "int_int_int": (lambda lib: (0, -1, 3), None),
    "slice": (lambda lib: slice(1, None), None),
    "full_slice": (lambda lib: slice(None), None),
    "step_slice": (lambda lib: (slice(None), slice(None, None, 2)), None),
    "slice_past_the_end": (lambda lib: (slice(None), slice(1, 10)), None),
    "slices": (lambda lib: (slice(0, 1), slice(1, 3), slice(2, 4)), None),
    "int_then_slice": (lambda lib: (0, slice(1, 3)), None),
    "slice_then_int": (lambda lib: (slice(None), 1), None),
    "whole_slices": (lambda lib: (slice(None), slice(0, 3), slice(None, None, 1)), None),
    "none": (lambda lib: None, None),
    "none_middle": (lambda lib: (slice(None), None, 1), None),
    "ellipsis": (lambda lib: Ellipsis, None),
    "ellipsis_int": (lambda lib: (Ellipsis, 1), None),
    "int_ellipsis": (lambda lib: (1, Ellipsis), None),
    "ellipsis_none": (lambda lib: (Ellipsis, None), None),
    "slice_ellipsis_slice": (lambda lib: (slice(1, 2), Ellipsis, slice(0, 4)), None),
    "list": (lambda lib: [0, 1, 0], None),
    "list_in_dim_1": (lambda lib: (slice(None), [2, 0, 2]), None),
    "two_lists": (lambda lib: ([0, 1, 1], [1, 2, 1]), None),
    "range": (lambda lib: range(2), None),
    "range_with_step": (lambda lib: (slice(None), range(0, 3, 2)), None),
    "int_tensor_repeated": (lambda lib: _index(lib, [1, 1, 0, 1]), None),
    "int_tensor_2d": (lambda lib: _index(lib, [[0, 1], [1, 1]]), None),
    "negative_int_tensor": (lambda lib: _index(lib, [-1, -2, -1]), None),
    "zero_d_int_tensor": (lambda lib: _index(lib, 1), None),
    "int_tensors_apart": (lambda lib: (_index(lib, [0, 1]), ..., _index(lib, [3, 3])), None),
    "slice_and_int_tensor": (lambda lib: (slice(1, None), _index(lib, [0, 0])), None),
    "ellipsis_and_list": (lambda lib: (Ellipsis, [1, 1]), None),
    "none_and_tensor": (lambda lib: (None, _index(lib, [1, 0])), None),
    "bool_mask_first_dim": (lambda lib: _index(lib, [True, False], torch.bool), None),
    "bool_mask_2d": (lambda lib: _index(lib, MASK_2D, torch.bool), None),
    "bool_list": (lambda lib: (slice(None), [True, False, True]), None),
}

GETITEM_SHAPE = (2, 3, 4)


@pytest.mark.parametrize("name", GETITEM)
def test_getitem(name):
    make_index, node_name = GETITEM[name]
    values = _values([GETITEM_SHAPE], seed=8)
    check_op(lambda lib, x: x[make_index(lib)], values, node_name=node_name)


def test_getitem_with_a_mask_computed_from_the_input():
    values = _values([GETITEM_SHAPE], seed=9)
    check_op(lambda lib, x: x[x > 0], values)
    check_op(lambda lib, x: x[x[:, :, 0] > 0], values)


@given(shape=shapes(1, 3), data=st.data(), seed=seeds)
def test_getitem_with_random_integer_tensors(shape, data, seed):
    """Random (often repeated, sometimes negative) integer indices for the first dim."""
    index_shape = data.draw(shapes(0, 2))
    generator = torch.Generator().manual_seed(seed)
    index = torch.randint(-shape[0], shape[0], index_shape, generator=generator)
    check_op(lambda lib, x: x[constant(lib, index)], _values([shape], seed), seed)


@pytest.mark.parametrize("name", ["int_then_slice", "list", "int_tensor_repeated", "bool_list"])
def test_getitem_gradcheck(name):
    make_index, _ = GETITEM[name]
    check_gradcheck(lambda lib, x: x[make_index(lib)], _values([(2, 3, 2)], seed=10))


# setitem ----------------------------------------------------------------------------------------
# x[index] = value on a non-leaf copy of x; gradients flow to x (except where overwritten) and to
# the assigned value. For basic indices both record `torch::autograd::CopySlices` (the node that
# rewrites the graph of a view's base); advanced indices record IndexPutBackward0.
SETITEM = {
    "int": (lambda lib: 1, None),
    "slice": (lambda lib: (slice(None), slice(1, 3)), None),
    "ints": (lambda lib: (0, 2), None),
    "ellipsis": (lambda lib: (Ellipsis, 0), None),
    "none": (lambda lib: (None, 1), None),
    "list": (lambda lib: [1, 0], None),
    "int_tensor": (lambda lib: (slice(None), _index(lib, [2, 0])), None),
    "bool_mask": (lambda lib: _index(lib, MASK_2D, torch.bool), None),
}
SETITEM_SHAPE = (2, 3, 4)


def _assigned_shape(make_index):
    return tuple(torch.empty(SETITEM_SHAPE)[make_index(torch)].shape)


def _setitem(make_index):
    def fn(lib, x, value):
        y = x * 1
        y[make_index(lib)] = value
        return y

    return fn


@pytest.mark.parametrize("name", SETITEM)
def test_setitem_gives_gradient_to_the_value(name):
    make_index, node_name = SETITEM[name]
    values = _values([SETITEM_SHAPE, _assigned_shape(make_index)], seed=11)
    check_op(_setitem(make_index), values, node_name=node_name)


@pytest.mark.parametrize("name", SETITEM)
def test_setitem_broadcasts_the_value(name):
    make_index, node_name = SETITEM[name]
    last = _assigned_shape(make_index)[-1:]
    for value_shape in [(), last]:
        values = _values([SETITEM_SHAPE, value_shape], seed=12)
        check_op(_setitem(make_index), values, node_name=node_name)


@pytest.mark.parametrize("name", ["int", "bool_mask"])
def test_setitem_with_a_number(name):
    make_index, node_name = SETITEM[name]

    def fn(lib, x):
        y = x * 2
        y[make_index(lib)] = 0.5
        return y * x

    check_op(fn, _values([SETITEM_SHAPE], seed=13))


def test_setitem_then_more_ops():
    def fn(lib, x, value):
        y = x * 2
        y[0] = value
        y[:, 1] = value[0] * 3
        return (y * y).sum(0)

    check_op(fn, _values([(2, 3), (3,)], seed=14))


@pytest.mark.parametrize("name", ["slice", "list", "bool_mask"])
def test_setitem_gradcheck(name):
    make_index, _ = SETITEM[name]

    def fn(lib, x, value):
        y = x * 1
        y[make_index(lib)] = value
        return y

    small = torch.empty(2, 3, 2)
    value_shape = tuple(small[make_index(torch)].shape[-1:])
    check_gradcheck(fn, _values([(2, 3, 2), value_shape], seed=15))


# gradcheck for the shape ops ---------------------------------------------------------------------
SHAPE_GRADCHECK = {
    "reshape": (lambda lib, x: x.reshape(3, 2), [(2, 3)]),
    "flatten": (lambda lib, x: x.flatten(), [(2, 3)]),
    "squeeze": (lambda lib, x: x.squeeze(1), [(2, 1, 3)]),
    "unsqueeze": (lambda lib, x: x.unsqueeze(-1), [(2, 3)]),
    "permute": (lambda lib, x: x.permute(2, 0, 1), [(2, 1, 3)]),
    "transpose": (lambda lib, x: x.transpose(0, 1), [(2, 3)]),
    "t": (lambda lib, x: x.t(), [(2, 3)]),
    "expand": (lambda lib, x: x.expand(2, 3, 2), [(3, 1)]),
    "repeat": (lambda lib, x: x.repeat(2, 2), [(3,)]),
    "cat": (lambda lib, x, y: lib.cat([x, y, x], 1), [(2, 1), (2, 2)]),
    "stack": (lambda lib, x, y: lib.stack([x, y], 1), [(3,), (3,)]),
    "split": (lambda lib, x: x.split([1, 2], 1), [(2, 3)]),
    "chunk": (lambda lib, x: x.chunk(2, 0), [(3, 2)]),
    "index_select": (lambda lib, x: x.index_select(1, _index(lib, [2, 0, 2])), [(2, 3)]),
    "gather": (lambda lib, x: x.gather(1, _index(lib, [[0, 0, 2], [1, 2, 2]])), [(2, 3)]),
}


@pytest.mark.parametrize("name", SHAPE_GRADCHECK)
def test_shape_op_gradcheck(name):
    fn, shape_list = SHAPE_GRADCHECK[name]
    check_gradcheck(fn, _values(shape_list, seed=16))


@pytest.mark.cuda
@pytest.mark.parametrize(
    "name", [name for name in GETITEM if "tensor" not in name and "mask" not in name]
)
def test_getitem_on_cuda(name):
    make_index, node_name = GETITEM[name]
    values = _values([GETITEM_SHAPE], seed=8)
    check_op(lambda lib, x: x[make_index(lib)], values, node_name=node_name, device="cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["reshape", "permute", "expand", "repeat", "cat", "split"])
def test_shape_ops_on_cuda(name):
    fn, shape_list = SHAPE_GRADCHECK[name]
    check_op(fn, _values(shape_list, seed=16), device="cuda")
