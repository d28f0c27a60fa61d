"""PyTorch fidelity, tensor APIs (issue 15, part A), each against real PyTorch in float64:

- `torch.autograd.Variable`, the legacy wrapper;
- the legacy typed constructors (`FloatTensor`, `LongTensor`, ...) and `Tensor.type`;
- `sort` (values, indices, gradient), `multinomial` and `normal` (same numbers for the same seed);
- `set_default_dtype` / `set_default_device` (and that every test here restores them);
- the `out=` keyword;
- PyTorch's parameter names for every public function (and Tensor method) that torch also has.

Most tests run one function `fn(lib)` on both libraries and compare what comes out: values,
dtypes, gradients, node names, and the words of the errors.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import (
    assert_close,
    broadcast_shapes,
    check_gradcheck,
    check_op,
    check_second_order,
    distinct,
    make_values,
    positive,
    seeds,
    shape_and_dim,
    shapes,
    uniform,
)

import minitorch
from minitorch import Tensor
from minitorch.autograd import Variable as MiniVariable

F64 = torch.float64
LIBS = (torch, minitorch)


def variable(lib):
    return torch.autograd.Variable if lib is torch else MiniVariable


def mini(value: torch.Tensor, requires_grad: bool = False) -> Tensor:
    """A minitorch tensor holding a copy of a torch tensor."""
    return Tensor(value.clone(), requires_grad=requires_grad)


def first_line(error: BaseException) -> str:
    """The first line of an error's message, without torch's "(Triggered internally ...)"."""
    return str(error).split("\n")[0].split(" (Triggered internally")[0]


def check_same_error(fn) -> BaseException:
    """`fn(torch)` and `fn(minitorch)` raise the same type of error, and minitorch's message
    contains torch's (minitorch may add the op and the shapes after it)."""
    with pytest.raises(Exception) as expected:
        fn(torch)
    with pytest.raises(type(expected.value)) as actual:
        fn(minitorch)
    assert first_line(expected.value) in str(actual.value), (
        f"minitorch says {actual.value!r}, torch says {expected.value!r}"
    )
    return actual.value


@pytest.fixture(autouse=True)
def defaults_are_restored():
    """Every test here starts and ends with PyTorch's defaults (float32, CPU): a test that
    changes them must restore them, or it fails here, before it can affect other tests."""
    assert torch.get_default_dtype() == torch.float32
    assert torch.get_default_device() == torch.device("cpu")
    yield
    assert minitorch.get_default_dtype() == torch.get_default_dtype() == torch.float32, (
        "the test left the default dtype changed"
    )
    assert minitorch.get_default_device() == torch.device("cpu"), (
        "the test left the default device changed"
    )


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype):
    previous = minitorch.get_default_dtype()
    minitorch.set_default_dtype(dtype)
    try:
        yield
    finally:
        minitorch.set_default_dtype(previous)


@contextlib.contextmanager
def default_device(device: str):
    previous = minitorch.get_default_device()
    minitorch.set_default_device(device)
    try:
        yield
    finally:
        minitorch.set_default_device(previous)


# -------------------------------------------------------------------------------------------------
# Variable
# -------------------------------------------------------------------------------------------------
def test_variable_with_requires_grad_is_a_new_leaf_and_leaves_its_input_alone():
    def run(lib):
        t = lib.tensor([1.0, -2.0, 3.0], dtype=F64)
        v = variable(lib)(t, requires_grad=True)
        facts = [v is t, t.requires_grad, v.requires_grad, v.is_leaf, v.grad_fn is None]
        (v * v).sum().backward()
        facts += [t.grad is None, v.grad.tolist()]
        t.add_(1.0)  # the same storage and version counter
        facts += [v.tolist(), v._version == t._version]
        return facts

    assert run(minitorch) == run(torch)
    assert run(torch) == [False, False, True, True, True, True, [2.0, -4.0, 6.0],
                          [2.0, -1.0, 4.0], True]  # fmt: skip


def test_variable_of_a_graph_tensor_is_cut_from_the_graph():
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
        y = x * 3
        plain = variable(lib)(y)
        leaf = variable(lib)(y, requires_grad=True)
        (leaf * 2).sum().backward()
        return [plain.requires_grad, plain.grad_fn is None, leaf.is_leaf, leaf.requires_grad,
                y.requires_grad, x.grad is None, leaf.grad.tolist()]  # fmt: skip

    assert run(minitorch) == run(torch) == [False, True, True, True, True, True, [2.0, 2.0]]


def test_variable_data_and_grad():
    def run(lib):
        v = variable(lib)(lib.tensor([0.5, 1.5], dtype=F64), requires_grad=True)
        before = [v.grad is None, v.data.requires_grad, v.data.tolist()]
        (v**2).sum().backward()
        return before + [v.grad.tolist(), v.data.is_leaf]

    assert run(minitorch) == run(torch)


def test_every_tensor_is_a_variable_and_variable_returns_tensors():
    for lib in LIBS:
        Var = variable(lib)
        assert isinstance(lib.ones(2), Var) and not isinstance(2.0, Var)
        assert type(Var(lib.ones(2))) is (torch.Tensor if lib is torch else Tensor)
    assert minitorch.autograd.Variable is MiniVariable


def test_variable_errors_and_legacy_arguments():
    check_same_error(lambda lib: variable(lib)([1.0, 2.0]))
    check_same_error(lambda lib: variable(lib)(lib.arange(3), requires_grad=True))
    for lib in LIBS:
        empty = variable(lib)()
        assert empty.shape == (0,) and empty.dtype == torch.float32
    messages = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            variable(lib)(lib.ones(2), volatile=True)
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and messages[1]


# -------------------------------------------------------------------------------------------------
# Legacy typed constructors and Tensor.type
# -------------------------------------------------------------------------------------------------
LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "BoolTensor",
          "ByteTensor", "CharTensor", "ShortTensor", "BFloat16Tensor"]  # fmt: skip


def describe(t) -> tuple:
    """What identifies a result (its values may be uninitialized memory): type name, shape,
    dtype and device."""
    return (t.type(), tuple(t.shape), t.dtype, t.device.type)


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_constructor_from_data_sizes_and_nothing(name):
    for make in (
        lambda lib: getattr(lib, name)([1, 0, 3]),
        lambda lib: getattr(lib, name)([[1.5, 2.0], [0.0, 3.0]]),
        lambda lib: getattr(lib, name)(2, 3),
        lambda lib: getattr(lib, name)(torch.Size([4])),
        lambda lib: getattr(lib, name)(),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 2.0]).numpy()),
    ):
        expected, actual = make(torch), make(minitorch)
        assert isinstance(actual, Tensor)
        assert describe(actual) == describe(expected)
    data = [[1, 0], [2, 5]]
    assert_close(getattr(minitorch, name)(data), getattr(torch, name)(data), name)


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor"])
def test_legacy_constructor_from_a_tensor(name):
    dtype = getattr(torch, name).dtype
    for lib in LIBS:
        source = lib.ones(3, dtype=dtype)
        view = getattr(lib, name)(source)
        assert view is not source and view.dtype == dtype
        source[0] = 0  # the result shares the source's storage
        assert view.tolist() == source.tolist()
    other = torch.float32 if dtype != torch.float32 else torch.float64
    check_same_error(lambda lib: getattr(lib, name)(lib.ones(2, dtype=other)))


def test_legacy_constructor_of_a_tensor_that_requires_grad_is_an_alias_in_the_graph():
    def fn(lib, x):
        return lib.DoubleTensor(x) * 2

    check_op(fn, [torch.tensor([1.0, 2.0], dtype=F64)])


def test_legacy_constructor_errors():
    check_same_error(lambda lib: lib.FloatTensor([1.0], requires_grad=True))
    check_same_error(lambda lib: lib.FloatTensor(2, 3, dtype=torch.float64))
    check_same_error(lambda lib: lib.FloatTensor(2.5))
    check_same_error(lambda lib: lib.LongTensor("a"))


def test_legacy_constructors_ignore_the_default_dtype_and_device():
    with default_dtype(torch.float64):
        for lib in LIBS:
            assert lib.FloatTensor([1.0]).dtype == torch.float32
            assert lib.Tensor([1.0]).dtype == torch.float64  # Tensor follows the default
    with default_device("meta"):
        for lib in LIBS:
            assert lib.FloatTensor([1.0]).device.type == "cpu"
            assert lib.LongTensor(2).device.type == "cpu"
            assert lib.Tensor(2, 3).device.type == "cpu"
            assert lib.Tensor([1.0]).device.type == "cpu"


@pytest.mark.parametrize("name", LEGACY)
def test_isinstance_with_legacy_types(name):
    dtypes = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.uint8]
    for dtype in dtypes:
        expected = isinstance(torch.zeros(2, dtype=dtype), getattr(torch, name))
        actual = isinstance(minitorch.zeros(2, dtype=dtype), getattr(minitorch, name))
        assert actual == expected, (name, dtype)
    assert not isinstance(torch.zeros(2), getattr(minitorch, name))  # not a minitorch tensor


TYPE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.bool,
               torch.uint8, torch.bfloat16]  # fmt: skip


@pytest.mark.parametrize("dtype", TYPE_DTYPES)
def test_type_without_arguments_is_the_legacy_name(dtype):
    assert minitorch.zeros(2, dtype=dtype).type() == torch.zeros(2, dtype=dtype).type()


@pytest.mark.parametrize(
    "target",
    ["LongTensor", "torch.LongTensor", "DoubleTensor", "torch.DoubleTensor", "FloatTensor",
     "torch.FloatTensor", "BoolTensor", "torch.IntTensor", torch.float64, torch.int32,
     torch.float32],
)  # fmt: skip
def test_type_casts_to_a_legacy_type_its_name_or_a_dtype(target):
    def run(lib):
        x = lib.tensor([1.5, -2.0, 0.0])
        how = getattr(lib, target) if target in LEGACY else target
        y = x.type(how)
        return y, y is x

    (expected, expected_same), (actual, actual_same) = run(torch), run(minitorch)
    assert actual_same == expected_same  # the tensor itself when it has that type already
    assert_close(actual, expected, f"type({target})")


def test_type_with_torch_legacy_types_and_the_gradient_through_type():
    assert minitorch.ones(2).type(torch.DoubleTensor).dtype == torch.float64
    check_op(lambda lib, x: x.type(lib.FloatTensor) * 2, [torch.tensor([1.0, 3.0], dtype=F64)])
    check_op(lambda lib, x: x.type("torch.FloatTensor"), [torch.tensor([1.0], dtype=F64)])


def test_type_errors():
    check_same_error(lambda lib: lib.ones(2).type("torch.Foo"))
    check_same_error(lambda lib: lib.ones(2).type("float"))


# -------------------------------------------------------------------------------------------------
# sort
# -------------------------------------------------------------------------------------------------
@given(shape_and_dim(min_rank=0), st.booleans(), st.sampled_from([None, True, False]), seeds)
def test_sort_values_indices_and_gradient(shape_dim, descending, stable, seed):
    shape, dim = shape_dim

    def fn(lib, x):
        if stable is None:
            return lib.sort(x, dim=dim, descending=descending)
        return lib.sort(x, dim=dim, descending=descending, stable=stable)

    check_op(fn, make_values((distinct(),), [shape], seed), seed)


@given(shape_and_dim(min_rank=1), st.booleans(), seeds)
def test_stable_sort_with_ties_matches_pytorch(shape_dim, descending, seed):
    """Ties keep their order with stable=True: the indices (and so the gradient) are torch's."""
    shape, dim = shape_dim
    values = torch.randint(0, 3, shape, generator=torch.Generator().manual_seed(seed)).to(F64)

    def fn(lib, x):
        return x.sort(dim=dim, descending=descending, stable=True)

    check_op(fn, [values], seed)


def test_sort_result_is_a_named_tuple_and_the_method_agrees():
    x = torch.tensor([[3.0, 1.0, 2.0], [0.5, 2.5, -1.0]], dtype=F64)
    expected = torch.sort(x, dim=0, descending=True)
    result = minitorch.sort(mini(x), dim=0, descending=True)
    values, indices = result
    assert type(result).__name__ == type(expected).__name__ == "sort"
    assert result.values is values and result.indices is indices
    assert_close(values, expected.values, "values")
    assert_close(indices, expected.indices, "indices")
    assert_close(mini(x).sort(1).indices, x.sort(1).indices, "method")
    assert_close(mini(x).argsort(dim=1, descending=True), x.argsort(dim=1, descending=True),
                 "argsort")  # fmt: skip
    assert_close(minitorch.argsort(mini(x)), torch.argsort(x), "torch.argsort")


def test_sort_node_names_and_saved_indices():
    x = torch.tensor([2.0, 0.0, 1.0], dtype=F64)
    check_op(lambda lib, x: lib.sort(x).values * 1, [x])
    check_op(lambda lib, x: x.sort(stable=False)[0], [x])  # stable given: SortBackward1
    node = minitorch.sort(mini(x, requires_grad=True)).values.grad_fn
    assert_close(node._saved_indices, torch.sort(x.requires_grad_()).values.grad_fn._saved_indices,
                 "saved indices")  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float32])
def test_sort_other_dtypes(dtype):
    data = torch.tensor([[3, 0, 2], [1, 1, 0]]).to(dtype)
    for descending in (False, True):
        expected = torch.sort(data, descending=descending, stable=True)
        actual = minitorch.sort(mini(data), descending=descending, stable=True)
        assert_close(actual.values, expected.values, "values")
        assert_close(actual.indices, expected.indices, "indices")


def test_sort_gradcheck_and_second_order():
    values = make_values((distinct(),), [(2, 3)], seed=4)
    check_gradcheck(lambda lib, x: lib.sort(x, dim=1).values * lib.sort(x, dim=0).values, values)
    check_second_order(lambda lib, x: lib.sort(x * x, dim=1, descending=True).values, values)


def test_sort_errors_and_out():
    check_same_error(lambda lib: lib.sort(lib.ones(2, 3), dim=2))
    check_same_error(lambda lib: lib.ones(2).sort(dim=-2))

    def run(lib):
        values, indices = lib.empty(0, dtype=F64), lib.empty(0, dtype=torch.int64)
        result = lib.sort(lib.tensor([2.0, 0.5, 1.0], dtype=F64), out=(values, indices))
        return result.values is values, result.indices is indices, values.tolist(), indices.tolist()

    assert run(minitorch) == run(torch)


# -------------------------------------------------------------------------------------------------
# multinomial
# -------------------------------------------------------------------------------------------------
@given(shapes(min_rank=1, max_rank=2, min_side=1, max_side=5), st.booleans(), seeds,
       st.integers(1, 6))  # fmt: skip
def test_multinomial_draws_pytorchs_numbers_for_the_same_seed(shape, replacement, seed, samples):
    weights = make_values((positive(0.1, 3.0),), [shape], seed)[0]
    if not replacement:
        samples = min(samples, shape[-1])

    def draw(lib):
        lib.manual_seed(seed)
        first = lib.multinomial(lib.tensor(weights.tolist(), dtype=F64), samples, replacement)
        second = lib.tensor(weights.tolist()).multinomial(samples, replacement=replacement)
        return first, second

    for actual, expected in zip(draw(minitorch), draw(torch)):
        assert_close(actual, expected, "samples")


def test_multinomial_with_a_generator_keywords_and_a_grad_input():
    def draw(lib):
        generator = torch.Generator().manual_seed(5)
        probs = lib.tensor([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], dtype=F64, requires_grad=True)
        result = lib.multinomial(input=probs, num_samples=4, replacement=True, generator=generator)
        return result, result.requires_grad, result.dtype

    (expected, *facts_t), (actual, *facts_m) = draw(torch), draw(minitorch)
    assert_close(actual, expected, "samples")
    assert facts_m == facts_t == [False, torch.int64]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.multinomial(lib.tensor([0.1, 0.2, 0.7]), 4),
        lambda lib: lib.multinomial(lib.tensor([0.1, 0.2, 0.7]), 0),
        lambda lib: lib.multinomial(lib.tensor([-0.1, 0.2, 0.7]), 1),
        lambda lib: lib.multinomial(lib.zeros(3), 1),
        lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1),
        lambda lib: lib.multinomial(lib.tensor([1, 2]), 1),
        lambda lib: lib.multinomial(lib.tensor([float("nan"), 1.0]), 1),
    ],
)
def test_multinomial_errors(make):
    check_same_error(make)


# -------------------------------------------------------------------------------------------------
# normal
# -------------------------------------------------------------------------------------------------
def _seeded(seed, fn):
    """fn(lib, *inputs) run right after `lib.manual_seed(seed)`: the same draws in both."""

    def run(lib, *inputs):
        lib.manual_seed(seed)
        return fn(lib, *inputs)

    return run


@given(broadcast_shapes(), seeds)
def test_normal_tensor_mean_and_std(shapes_pair, seed):
    values = make_values((uniform(), positive()), shapes_pair, seed)
    check_op(_seeded(seed, lambda lib, mean, std: lib.normal(mean, std)), values, seed)


@given(shapes(), seeds)
def test_normal_one_tensor_and_one_number(shape, seed):
    mean = make_values((uniform(),), [shape], seed)
    std = make_values((positive(),), [shape], seed)
    check_op(_seeded(seed, lambda lib, m: lib.normal(m, 2.5)), mean, seed)
    check_op(_seeded(seed, lambda lib, m: lib.normal(m)), mean, seed)
    check_op(_seeded(seed, lambda lib, s: lib.normal(-1.0, s)), std, seed)
    check_op(_seeded(seed, lambda lib, s: lib.normal(mean=0.5, std=s)), std, seed)


@given(shapes(), seeds, st.sampled_from([None, torch.float64, torch.float32]))
def test_normal_of_a_size(shape, seed, dtype):
    def run(lib):
        lib.manual_seed(seed)
        first = lib.normal(2.0, 3.0, shape, dtype=dtype)
        generator = torch.Generator().manual_seed(seed + 1)
        second = lib.normal(0, 1, size=shape, generator=generator, requires_grad=True)
        return first, second

    for actual, expected in zip(run(minitorch), run(torch)):
        assert_close(actual, expected, "samples", rtol=0, atol=0)
        assert actual.requires_grad == expected.requires_grad


def test_normal_with_a_generator_matches_pytorch():
    values = [torch.zeros(3, 2, dtype=F64), torch.ones(2, dtype=F64)]

    def fn(lib, mean, std):
        return lib.normal(mean, std, generator=torch.Generator().manual_seed(9))

    check_op(fn, values)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.normal(0.0, 1.0),
        lambda lib: lib.normal(lib.zeros(2), -1.0),
        lambda lib: lib.normal(0.0, -lib.ones(2)),
        lambda lib: lib.normal(lib.zeros(2), lib.ones(3)),
        lambda lib: lib.normal(lib.zeros(2, dtype=torch.int64), 1.0),
        lambda lib: lib.normal(lib.zeros(2), 1.0, (2,)),
    ],
)
def test_normal_errors(make):
    check_same_error(make)


# -------------------------------------------------------------------------------------------------
# Default dtype and device
# -------------------------------------------------------------------------------------------------
FACTORIES = {
    "tensor": lambda lib: lib.tensor([1.5, 2.0]),
    "tensor_of_ints": lambda lib: lib.tensor([1, 2]),
    "zeros": lambda lib: lib.zeros(2, 3),
    "ones": lambda lib: lib.ones(2),
    "empty": lambda lib: lib.empty(2),
    "rand": lambda lib: lib.rand(2),
    "randn": lambda lib: lib.randn(2),
    "full": lambda lib: lib.full((2,), 1.5),
    "full_int": lambda lib: lib.full((2,), 7),
    "arange_float": lambda lib: lib.arange(0.0, 1.0, 0.25),
    "arange_int": lambda lib: lib.arange(4),
    "linspace": lambda lib: lib.linspace(0, 1, 5),
    "eye": lambda lib: lib.eye(2),
    "randint": lambda lib: lib.randint(3, (2,)),
    "randperm": lambda lib: lib.randperm(3),
    "normal_of_size": lambda lib: lib.normal(0.0, 1.0, (2,)),
    "Tensor": lambda lib: lib.Tensor([1, 2]),
    "Tensor_of_size": lambda lib: lib.Tensor(2, 3),
    "as_tensor": lambda lib: lib.as_tensor([1.0, 2.0]),
    "zeros_like": lambda lib: lib.zeros_like(lib.ones(2, dtype=torch.float16)),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.float32])
def test_factories_honour_the_default_dtype(dtype):
    with default_dtype(dtype):
        assert minitorch.get_default_dtype() == torch.get_default_dtype() == dtype
        for name, make in FACTORIES.items():
            assert make(minitorch).dtype == make(torch).dtype, name
        x = minitorch.tensor([1.0, 2.0]) * 2.5  # ops keep it
        assert x.dtype == dtype


def test_set_default_dtype_rejects_integer_dtypes_and_can_be_restored():
    check_same_error(lambda lib: lib.set_default_dtype(torch.int64))
    previous = minitorch.get_default_dtype()
    minitorch.set_default_dtype(torch.float64)
    assert torch.get_default_dtype() == torch.float64  # one setting, shared with torch
    minitorch.set_default_dtype(previous)
    assert minitorch.tensor([0.5]).dtype == torch.float32


def test_factories_honour_the_default_device():
    # No GPU here: the "meta" device (shapes without data) shows where each factory puts its
    # tensor, exactly as "cuda" would.
    with default_device("meta"):
        assert minitorch.get_default_device() == torch.get_default_device() == torch.device("meta")
        for name, make in FACTORIES.items():
            expected = make(torch)
            actual = make(minitorch)
            assert (actual.device, actual.dtype, actual.shape) == (
                expected.device, expected.dtype, expected.shape
            ), name  # fmt: skip
        y = minitorch.zeros(2, requires_grad=True) * 3  # ops run where their inputs are
        assert y.device.type == "meta" and y.grad_fn.name() == "MulBackward0"
        assert minitorch.zeros(2, device="cpu").device.type == "cpu"  # an explicit device wins
    assert minitorch.zeros(2).device.type == "cpu"


def test_set_default_device_none_means_cpu():
    minitorch.set_default_device("meta")
    try:
        assert minitorch.ones(1).device.type == "meta"
    finally:
        minitorch.set_default_device(None)
    assert minitorch.get_default_device() == torch.device("cpu")
    assert minitorch.ones(1).device.type == "cpu"


# -------------------------------------------------------------------------------------------------
# out=
# -------------------------------------------------------------------------------------------------
A = torch.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=F64)
B = torch.tensor([[2.0, 1.0, -0.5], [3.0, -2.0, 0.25]], dtype=F64)
C = torch.tensor([[1.0, 0.0], [2.0, -1.0], [0.5, 3.0]], dtype=F64)


def inputs(lib, *values, requires_grad=False):
    return [
        v.clone().requires_grad_(requires_grad) if lib is torch else mini(v, requires_grad)
        for v in values
    ]


# name -> (fn(lib, out, inputs...), input values, the op's name in errors)
OUT_CASES = {
    "matmul": (lambda lib, out, a, c: lib.matmul(a, c, out=out), (A, C)),
    "mm": (lambda lib, out, a, c: lib.mm(a, c, out=out), (A, C)),
    "mul": (lambda lib, out, a, b: lib.mul(a, b, out=out), (A, B)),
    "mul_number": (lambda lib, out, a: lib.mul(a, 2.5, out=out), (A,)),
    "add": (lambda lib, out, a, b: lib.add(a, b, out=out), (A, B)),
    "add_alpha": (lambda lib, out, a, b: lib.add(a, b, alpha=-2, out=out), (A, B)),
    "sub": (lambda lib, out, a, b: lib.sub(a, b, alpha=0.5, out=out), (A, B)),
    "div": (lambda lib, out, a, b: lib.div(a, b, out=out), (A, B)),
    "div_floor": (lambda lib, out, a, b: lib.div(a, b, rounding_mode="floor", out=out), (A, B)),
    "cat": (lambda lib, out, a, b: lib.cat([a, b], dim=1, out=out), (A, B)),
    "stack": (lambda lib, out, a, b: lib.stack((a, b), out=out), (A, B)),
    "zeros": (lambda lib, out: lib.zeros(2, 3, out=out), ()),
    "ones": (lambda lib, out: lib.ones((4,), out=out), ()),
    "arange": (lambda lib, out: lib.arange(1, 4, 0.5, out=out), ()),
    "full": (lambda lib, out: lib.full((2, 2), 1.5, out=out), ()),
    "linspace": (lambda lib, out: lib.linspace(0, 1, 5, out=out), ()),
    "eye": (lambda lib, out: lib.eye(3, out=out), ()),
    "normal": (lambda lib, out, a, b: lib.normal(a, b.abs(), generator=_gen(), out=out), (A, B)),
    "randn": (lambda lib, out: lib.randn(3, generator=_gen(), out=out), ()),
    "multinomial": (
        lambda lib, out, b: lib.multinomial(b.abs(), 2, generator=_gen(), out=out),
        (B,),
    ),
}


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(11)


@pytest.mark.parametrize("name", list(OUT_CASES))
@pytest.mark.parametrize("start", ["same_shape", "empty"])
def test_out_writes_into_out_and_returns_it(name, start):
    fn, values = OUT_CASES[name]

    def run(lib):
        reference = fn(lib, None, *inputs(lib, *values))  # out=None: the ordinary result
        if start == "same_shape":
            out = lib.zeros(reference.shape, dtype=reference.dtype)
        else:
            out = lib.empty(0, dtype=reference.dtype)
        version = out._version
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # resizing these is silent
            result = fn(lib, out, *inputs(lib, *values))
        return result is out, out._version - version, out, reference

    same_t, bumps_t, out_t, ref_t = run(torch)
    same_m, bumps_m, out_m, ref_m = run(minitorch)
    assert same_m and same_t
    assert bumps_m == bumps_t >= 1  # torch.randn bumps twice when it resizes
    assert_close(out_m, out_t, f"{name}: out")
    assert_close(out_m, ref_m, f"{name}: out against the result without out=")


@given(broadcast_shapes(), seeds, st.sampled_from(["add", "sub", "mul", "div"]))
def test_out_of_broadcasting_ops(shapes_pair, seed, op):
    values = make_values((uniform(), positive()), shapes_pair, seed)

    def run(lib):
        out = lib.empty(0, dtype=F64)
        getattr(lib, op)(*inputs(lib, *values), out=out)
        return out

    assert_close(run(minitorch), run(torch), op)


def test_out_of_the_wrong_shape_is_resized_with_pytorchs_warning():
    def run(lib):
        out = lib.zeros(5, dtype=F64)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.add(*inputs(lib, A, B), out=out)
        return out, [first_line(w.message) for w in caught]

    (out_t, said_t), (out_m, said_m) = run(torch), run(minitorch)
    assert said_m == said_t and "was resized" in said_t[0]
    assert_close(out_m, out_t, "resized out")


def test_out_keeps_its_dtype_and_casts_like_pytorch():
    def run(lib):
        out = lib.empty(0, dtype=torch.float32)
        lib.add(*inputs(lib, A, B), out=out)
        return out

    assert_close(run(minitorch), run(torch), "float64 into float32")
    check_same_error(lambda lib: lib.add(*inputs(lib, A, B), out=lib.empty(0, dtype=torch.int64)))
    check_same_error(lambda lib: lib.mm(*inputs(lib, A, C), out=lib.empty(0)))
    check_same_error(lambda lib: lib.cat(inputs(lib, A, B), out=lib.empty(0, dtype=torch.int64)))
    check_same_error(lambda lib: lib.zeros(2, dtype=torch.float32, out=lib.empty(0, dtype=F64)))


def test_out_into_a_view_writes_into_its_base():
    def run(lib):
        base = lib.zeros(3, 3, dtype=F64)
        lib.mul(*inputs(lib, A[0], B[0]), out=base[1])
        return base, base._version

    (base_t, version_t), (base_m, version_m) = run(torch), run(minitorch)
    assert_close(base_m, base_t, "base")
    assert version_m == version_t


@pytest.mark.parametrize("name", list(OUT_CASES))
@pytest.mark.parametrize("start", ["same_shape", "empty"])
def test_out_with_grad_mode_on_is_pytorchs_error(name, start):
    fn, values = OUT_CASES[name]
    reference = fn(torch, None, *inputs(torch, *values))
    shape = reference.shape if start == "same_shape" else (0,)

    def out_requires_grad(lib):
        fn(lib, lib.zeros(shape, requires_grad=True), *inputs(lib, *values))

    def input_requires_grad(lib):
        out = lib.zeros(shape, dtype=reference.dtype)
        return fn(lib, out, *inputs(lib, *values, requires_grad=True))

    if reference.dtype.is_floating_point:
        error = check_same_error(out_requires_grad)
        if name not in ("randn", "empty"):  # these two resize `out` first: torch's own error
            assert "arguments don't support automatic differentiation" in str(error)
    if name == "multinomial":  # never differentiable: torch writes into `out` all the same
        assert_close(input_requires_grad(minitorch), input_requires_grad(torch), name)
    elif values:
        check_same_error(input_requires_grad)


def test_out_under_no_grad_writes_into_a_leaf_that_requires_grad():
    def run(lib):
        w = lib.zeros(2, 3, dtype=F64, requires_grad=True)
        a, b = inputs(lib, A, B, requires_grad=True)
        with lib.no_grad():
            result = lib.add(a, b, out=w)
        return result is w, w.requires_grad, w.is_leaf, w.grad_fn is None, w.detach().tolist()

    assert run(minitorch) == run(torch)


# -------------------------------------------------------------------------------------------------
# PyTorch's parameter names
# -------------------------------------------------------------------------------------------------
# A parameter is (name, kind); kind is "positional" (positional or keyword), "keyword" (keyword
# only) or "varargs" (`*size`; its name cannot be passed as a keyword, so it is not compared).
def _kind(parameter: inspect.Parameter) -> str:
    return {"VAR_POSITIONAL": "varargs", "KEYWORD_ONLY": "keyword"}.get(
        parameter.kind.name, "positional"
    )


def _from_signature(fn, drop_first: bool = False) -> list:
    parameters = list(inspect.signature(fn).parameters.values())[1 if drop_first else 0 :]
    return [(p.name, _kind(p)) for p in parameters if p.kind.name != "VAR_KEYWORD"]


def _takes_any_keyword(fn) -> bool:
    return any(p.kind.name == "VAR_KEYWORD" for p in inspect.signature(fn).parameters.values())


def _from_text(text: str) -> list:
    """The parameters of a docstring signature such as `add(input, other, *, alpha=1)`. The text
    need not be valid Python (`arange(start=0, end, step=1)`), so it is split by hand."""
    parameters, kind = [], "positional"
    for part in _split_top_level(text.replace("\\*", "*")):
        if part == "*":
            kind = "keyword"
        elif part.startswith("**"):
            continue
        elif part.startswith("*"):
            parameters.append((re.split(r"[:=]", part[1:])[0].strip(), "varargs"))
            kind = "keyword"
        elif part:
            parameters.append((re.split(r"[:=]", part)[0].strip(), kind))
    return parameters


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return parts + [current.strip()]


def _from_schemas(name: str, method: bool) -> list[list]:
    """The overloads of `aten::<name>` (what torch's argument parser accepts; `self` is called
    `input` in functions), leaving out the `out` variants."""
    overloads = []
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{name}"):
        arguments = list(schema.arguments)
        if schema.overload_name.endswith("out") or not arguments or arguments[0].name != "self":
            continue
        if method:
            arguments = arguments[1:]
        overloads.append([
            ("input" if a.name == "self" else a.name, "keyword" if a.kwarg_only else "positional")
            for a in arguments
        ])  # fmt: skip
    return overloads


def torch_overloads(name: str, fn, method: bool = False) -> tuple[list[list], list[list]]:
    """(documented, accepted): the parameter lists torch documents for `fn` (its signature
    where Python has one, else the first line of its docstring and its `.. function::` lines,
    else its aten schemas), and the ones torch also accepts (the documented ones and the aten
    schemas, which are what torch's argument parser reads)."""
    try:
        documented = [_from_signature(fn, drop_first=method)]
    except (ValueError, TypeError):
        doc = (fn.__doc__ or "").strip()
        candidates = doc.splitlines()[:1] + re.findall(r"^\.\. function:: (.*)$", doc, re.M)
        pattern = rf"\s*{name}\((.*?)\)\s*(?:->.*)?$"
        documented = [_from_text(m.group(1)) for c in candidates if (m := re.match(pattern, c))]
        documented = documented or _from_schemas(name, method)
    return documented, documented + _from_schemas(name, method)


# torch functions with no signature, no docstring and no aten schema: nothing to compare.
UNDOCUMENTED = {"is_anomaly_enabled"}
# Names torch documents that no minitorch function takes, and why.
NEVER_TAKEN = {
    "layout": "minitorch tensors are always dense and strided",
    "pin_memory": "minitorch does not manage pinned (page-locked) host memory",
    "memory_format": "minitorch does not choose memory layouts (channels_last ...)",
    "sparse_grad": "minitorch has no sparse tensors",
    "out_dtype": "mm(out_dtype=) is for low-precision GPU kernels, not part of the subset",
}
# `out=` is taken by the ops that tutorials use it with, and by the factories.
OUT_FUNCTIONS = {
    "matmul", "mm", "mul", "add", "sub", "div", "cat", "stack", "zeros", "ones", "empty",
    "arange", "full", "linspace", "eye", "rand", "randn", "randint", "randperm", "sort",
    "multinomial", "normal",
}  # fmt: skip
OUT_REASON = "out= is implemented for the ops in OUT_FUNCTIONS only"
# (function, name): why minitorch leaves out a name torch documents.
FUNCTION_OMISSIONS = {
    ("max", "other"): "max(input, other) is taken positionally: a tensor as the second "
    "argument (minitorch's `dim`) means the elementwise maximum",
    ("min", "other"): "as max: min(input, other) is taken positionally",
    ("norm", "dtype"): "norm computes in the input's dtype (cast the input first)",
    ("norm", "out"): OUT_REASON,
    ("pow", "self"): "torch calls a number base `self` in pow(self, exponent); minitorch takes "
    "a number base as `input` (positional calls are the same)",
}
# (function, name): why minitorch takes a name that torch's documented signature lacks.
FUNCTION_EXTRAS = {
    ("std", "unbiased"): "torch.std(x, dim, unbiased, keepdim) is an older overload that torch "
    "still accepts; its docstring only shows `correction`",
    ("var", "unbiased"): "as std: torch.var still accepts the `unbiased` overload",
    ("normal", "dtype"): "torch.normal(mean, std, size, dtype=...) works; the docstring line of "
    "that overload leaves out the factory keywords",
    ("normal", "device"): "as dtype: accepted by torch's normal(mean, std, size) overload",
    ("normal", "requires_grad"): "as dtype: accepted by torch's normal(mean, std, size)",
}
# Tensor methods: (method, name) -> why the difference stays.
METHOD_OMISSIONS = {
    ("all", "dim"): "any()/all() reduce over the whole tensor only",
    ("all", "keepdim"): "any()/all() reduce over the whole tensor only",
    ("any", "dim"): "any()/all() reduce over the whole tensor only",
    ("any", "keepdim"): "any()/all() reduce over the whole tensor only",
    ("norm", "dtype"): "norm computes in the input's dtype",
    ("mul", "value"): "torch's docstring says `value`, but torch takes `other` (x.mul(other=y))",
    ("mul_", "value"): "as mul: torch takes `other`",
    ("div", "value"): "torch's docstring says `value`, but torch takes `other` (x.div(other=y))",
    ("div_", "value"): "as div: torch takes `other`",
    ("matmul", "tensor2"): "torch's docstring says `tensor2`, but torch takes `other`",
    ("where", "y"): "torch's docstring says `y`, but torch takes `other` (x.where(c, other=y))",
}
METHOD_EXTRAS = {
    ("sort", "stable"): "torch's docstring leaves out `stable`, which x.sort(stable=True) takes",
    ("argsort", "stable"): "as sort: x.argsort(stable=True) works in torch",
    ("where", "other"): METHOD_OMISSIONS[("where", "y")],
    ("std", "unbiased"): FUNCTION_EXTRAS[("std", "unbiased")],
    ("var", "unbiased"): FUNCTION_EXTRAS[("var", "unbiased")],
}


def _public_functions() -> list[str]:
    names = []
    for name in sorted(dir(minitorch)):
        ours = getattr(minitorch, name)
        if name.startswith("_") or not hasattr(torch, name) or ours is getattr(torch, name):
            continue  # private, not torch's, or torch's own object (dtypes, Generator ...)
        if inspect.ismodule(ours) or isinstance(ours, type) or not callable(ours):
            continue
        names.append(name)
    return names


def _public_methods() -> list[str]:
    return [
        name
        for name, value in sorted(vars(Tensor).items())
        if not name.startswith("_") and callable(value) and hasattr(torch.Tensor, name)
    ]


def compare_parameters(ours: list, documented: list[list], accepted: list[list],
                       omissions: dict, extras: dict, name: str,
                       takes_any_keyword: bool = False) -> list[str]:  # fmt: skip
    """What differs between minitorch's parameters and torch's, as sentences."""
    problems = []
    ours_named = [(p, k) for p, k in ours if k != "varargs"]
    documented_names = {p for overload in documented for p, k in overload if k != "varargs"}
    accepted_names = {p for overload in accepted for p, k in overload}
    for parameter, _ in ours_named:
        if parameter not in accepted_names and (name, parameter) not in extras:
            problems.append(f"{name}: minitorch's `{parameter}` is not a torch parameter")
    for position, (parameter, kind) in enumerate(ours):
        in_place = any(position < len(o) and o[position][0] == parameter for o in accepted)
        if kind == "positional" and not in_place and (name, parameter) not in extras:
            problems.append(f"{name}: minitorch has `{parameter}` at position {position}")
    ours_names = {p for p, _ in ours}  # `*size` takes torch's positional `size`
    if takes_any_keyword:
        return problems  # `**kwargs`: every documented name is taken
    for parameter in sorted(documented_names - ours_names):
        if parameter in NEVER_TAKEN or (name, parameter) in omissions:
            continue
        if parameter == "out" and name not in OUT_FUNCTIONS:
            continue  # OUT_REASON
        problems.append(f"{name}: minitorch does not take torch's `{parameter}`")
    return problems


@pytest.mark.parametrize("name", _public_functions())
def test_function_parameters_are_pytorchs(name):
    documented, accepted = torch_overloads(name, getattr(torch, name))
    if not documented:
        assert name in UNDOCUMENTED, f"no signature, docstring or schema found for torch.{name}"
        return
    function = getattr(minitorch, name)
    ours = _from_signature(function)
    problems = compare_parameters(ours, documented, accepted, FUNCTION_OMISSIONS,
                                  FUNCTION_EXTRAS, name, _takes_any_keyword(function))  # fmt: skip
    assert not problems, "\n".join(problems) + f"\ntorch documents {documented}"


# (ids like "Tensor.cuda": a bare "cuda" id would be read as the `cuda` marker and skipped)
@pytest.mark.parametrize("name", _public_methods(), ids=lambda name: f"Tensor.{name}")
def test_tensor_method_parameters_are_pytorchs(name):
    documented, accepted = torch_overloads(name, getattr(torch.Tensor, name), method=True)
    if not documented:
        pytest.skip(f"torch.Tensor.{name} documents no parameters")  # e.g. `is_inference`
    method = getattr(Tensor, name)
    ours = _from_signature(method, drop_first=True)
    problems = compare_parameters(ours, documented, accepted, METHOD_OMISSIONS, METHOD_EXTRAS,
                                  name, _takes_any_keyword(method))  # fmt: skip
    assert not problems, "\n".join(problems) + f"\ntorch documents {documented}"


def test_listed_differences_are_still_differences():
    """Each entry of the lists above names a parameter that one library has and the other
    lacks; an entry that is no longer true must go."""
    for (name, parameter), reason in {**FUNCTION_OMISSIONS, **FUNCTION_EXTRAS}.items():
        ours = {p for p, _ in _from_signature(getattr(minitorch, name))}
        documented, _ = torch_overloads(name, getattr(torch, name))
        theirs = {p for o in documented for p, _ in o}
        assert (parameter in ours) != (parameter in theirs), (name, parameter, reason)
    for (name, parameter), reason in {**METHOD_OMISSIONS, **METHOD_EXTRAS}.items():
        ours = {p for p, _ in _from_signature(getattr(Tensor, name), drop_first=True)}
        documented, _ = torch_overloads(name, getattr(torch.Tensor, name), method=True)
        theirs = {p for o in documented for p, _ in o}
        assert (parameter in ours) != (parameter in theirs), (name, parameter, reason)
    for name in OUT_FUNCTIONS:
        assert "out" in inspect.signature(getattr(minitorch, name)).parameters, name


def test_the_docstring_parser():
    assert _from_text("add(input, other, *, alpha=1, out=None)".partition("(")[2][:-1]) == [
        ("input", "positional"), ("other", "positional"), ("alpha", "keyword"),
        ("out", "keyword"),
    ]  # fmt: skip
    text = "low=0, high, size, \\*, generator=None, dtype=None"
    assert [k for _, k in _from_text(text)] == ["positional"] * 3 + ["keyword"] * 2
    assert _from_text("*size, *, out=None") == [("size", "varargs"), ("out", "keyword")]
    documented, _ = torch_overloads("max", torch.max)
    assert ["input", "dim", "keepdim", "out"] in [[p for p, _ in o] for o in documented]


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, a, b: lib.matmul(input=a, other=b.t()),
        lambda lib, a, b: lib.mm(input=a, mat2=b.t()),
        lambda lib, a, b: lib.add(input=a, other=b, alpha=2),
        lambda lib, a, b: lib.sub(a, other=b, alpha=0.5),
        lambda lib, a, b: lib.mul(input=a, other=b),
        lambda lib, a, b: lib.div(input=a, other=b),
        lambda lib, a, b: lib.where(condition=a > b, input=a, other=b),
        lambda lib, a, b: lib.maximum(input=a, other=b),
        lambda lib, a, b: lib.clamp(input=a, min=-0.5, max=1.0),
        lambda lib, a, b: lib.sum(input=a * b, dim=1, keepdim=True),
        lambda lib, a, b: lib.mean(input=a, dim=0, dtype=torch.float64),
        lambda lib, a, b: lib.softmax(input=a, dim=1),
        lambda lib, a, b: lib.cat(tensors=[a, b], dim=0),
        lambda lib, a, b: lib.stack(tensors=[a, b], dim=2),
        lambda lib, a, b: lib.split(tensor=a, split_size_or_sections=[1, 2], dim=1),
        lambda lib, a, b: lib.gather(input=a, dim=1, index=lib.tensor([[0, 0], [2, 1]])),
        lambda lib, a, b: lib.transpose(input=a, dim0=0, dim1=1),
        lambda lib, a, b: lib.reshape(input=a, shape=(3, 2)),
        lambda lib, a, b: lib.pow(input=a, exponent=2),
        lambda lib, a, b: lib.exp(input=a),
        lambda lib, a, b: lib.sort(input=a, dim=0, descending=True).values,
        lambda lib, a, b: lib.std(input=a, dim=1, keepdim=True),
        lambda lib, a, b: a.mm(mat2=b.t()),
        lambda lib, a, b: a.div(b, rounding_mode="trunc"),
        lambda lib, a, b: a.float().softmax(dim=0, dtype=torch.float64),
    ],
)
def test_calls_with_pytorchs_keywords_give_pytorchs_results(call):
    values = [A, B + 0.25]
    check_op(call, values)
