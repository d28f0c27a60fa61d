"""The Tensor API against PyTorch: creation functions and dtypes, conversions, attributes, repr,
Python protocols, `.data` versus `detach()`, and the version counter.

Most tests build the same tensor with `torch` and with `minitorch` and compare.
"""

import numpy as np
import pytest
import torch

import minitorch

LIBS = pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "bool"]


def _version(t):
    """The version counter's value (`t._version` is an int in PyTorch)."""
    return t._version


def _same(ours, theirs, what=""):
    """Same type of object, dtype, shape and values."""
    assert isinstance(ours, minitorch.Tensor), f"{what}: got {type(ours).__name__}"
    assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype}, PyTorch {theirs.dtype}"
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch {theirs.shape}"
    assert ours.device == theirs.device, f"{what}: device {ours.device}, PyTorch {theirs.device}"
    assert ours.requires_grad == theirs.requires_grad, f"{what}: requires_grad differs"
    assert torch.equal(ours._data, theirs.detach()), f"{what}: {ours} != {theirs}"


# ----------------------------------------------------------------------------------------------
# Creation
# ----------------------------------------------------------------------------------------------
CREATIONS = {
    "tensor_float": lambda L: L.tensor([[1.0, 2.5], [3.0, -4.0]]),
    "tensor_int": lambda L: L.tensor([1, 2, 3]),
    "tensor_bool": lambda L: L.tensor([True, False]),
    "tensor_scalar": lambda L: L.tensor(3.5),
    "tensor_nested_tensors": lambda L: L.tensor([L.tensor(1.0), L.tensor(2.0)]),
    "tensor_requires_grad": lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    "zeros": lambda L: L.zeros(2, 3),
    "zeros_tuple": lambda L: L.zeros((2, 3), dtype=L.float64),
    "ones_list": lambda L: L.ones([4], dtype=L.long),
    "ones_requires_grad": lambda L: L.ones(2, 2, requires_grad=True),
    "full_int": lambda L: L.full((2,), 7),
    "full_float": lambda L: L.full((2, 1), 7.0),
    "full_bool": lambda L: L.full((3,), True),
    "empty_shape": lambda L: L.empty(2, 3).zero_(),
    "arange_int": lambda L: L.arange(5),
    "arange_float": lambda L: L.arange(0, 1, 0.25),
    "arange_step": lambda L: L.arange(1, 10, 3, dtype=L.float64),
    "linspace": lambda L: L.linspace(0, 1, 5),
    "eye": lambda L: L.eye(3),
    "eye_rect": lambda L: L.eye(2, 3, dtype=L.int64),
    "rand": lambda L: (L.manual_seed(0), L.rand(2, 3))[1],
    "randn": lambda L: (L.manual_seed(1), L.randn(4, dtype=L.float64))[1],
    "randint_high": lambda L: (L.manual_seed(2), L.randint(10, (3,)))[1],
    "randint_low_high": lambda L: (L.manual_seed(3), L.randint(5, 10, (2, 2)))[1],
    "zeros_like": lambda L: L.zeros_like(L.ones(2, 3)),
    "ones_like_dtype": lambda L: L.ones_like(L.ones(2), dtype=L.int64),
    "full_like": lambda L: L.full_like(L.ones(2), 3),
    "rand_like": lambda L: (L.manual_seed(4), L.rand_like(L.ones(3)))[1],
    "randn_like": lambda L: (L.manual_seed(5), L.randn_like(L.ones(3, dtype=L.float64)))[1],
    "empty_like": lambda L: L.empty_like(L.ones(2, 2)).fill_(1),
    "from_numpy_float": lambda L: L.from_numpy(np.arange(3.0)),
    "from_numpy_int": lambda L: L.from_numpy(np.arange(3)),
    "tensor_from_numpy": lambda L: L.tensor(np.arange(4.0, dtype=np.float32).reshape(2, 2)),
}


@pytest.mark.parametrize("case", sorted(CREATIONS))
def test_creation_matches_torch(case):
    _same(CREATIONS[case](minitorch), CREATIONS[case](torch), case)


@pytest.mark.parametrize(
    "args", [([1, 2],), ([[1.5, 2]],), (2, 3), ((2, 3),), (torch.Size([2, 1]),), ()], ids=repr
)
def test_tensor_class_constructor_matches_torch(args):
    """`torch.Tensor(data)` gives the default float dtype; `torch.Tensor(2, 3)` is a size."""
    ours, theirs = minitorch.Tensor(*args), torch.Tensor(*args)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    if all(isinstance(a, list) for a in args) and args:
        assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("name", DTYPES)
def test_dtypes_are_torch_dtypes(name):
    assert getattr(minitorch, name) is getattr(torch, name)
    theirs = torch.tensor([1, 0, 2], dtype=getattr(torch, name))
    _same(minitorch.tensor([1, 0, 2], dtype=getattr(minitorch, name)), theirs, name)
    _same(minitorch.zeros(2, dtype=getattr(minitorch, name)), torch.zeros(2, dtype=theirs.dtype))


def test_dtype_aliases_and_default():
    assert (minitorch.float, minitorch.double, minitorch.long) == (
        torch.float32,
        torch.float64,
        torch.int64,
    )
    assert (minitorch.half, minitorch.int) == (torch.float16, torch.int32)
    assert minitorch.tensor([1.0]).dtype == torch.float32, "float32 is the default"
    assert minitorch.get_default_dtype() == torch.float32


@LIBS
def test_from_numpy_shares_memory(lib):
    array = np.arange(3.0)
    t = lib.from_numpy(array)
    array[0] = 10.0
    assert t.tolist() == [10.0, 1.0, 2.0]
    copy = lib.tensor(array)
    array[1] = 20.0
    assert copy.tolist() == [10.0, 1.0, 2.0], "tensor() copies"


@LIBS
def test_manual_seed_reproduces(lib):
    lib.manual_seed(7)
    a = lib.randn(5)
    lib.manual_seed(7)
    b = lib.randn(5)
    assert a.tolist() == b.tolist()


def test_manual_seed_shares_torch_generator():
    minitorch.manual_seed(11)
    ours = minitorch.rand(4)
    torch.manual_seed(11)
    assert ours.tolist() == torch.rand(4).tolist()


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float64"])
def test_low_and_high_precision_tensors_compute_and_differentiate(name):
    dtype = getattr(torch, name)
    values = [0.5, 1.5, -2.0]
    ours = minitorch.tensor(values, dtype=dtype, requires_grad=True)
    theirs = torch.tensor(values, dtype=dtype, requires_grad=True)
    (ours * ours + 1).sum().backward()
    (theirs * theirs + 1).sum().backward()
    _same(ours.grad, theirs.grad, f"{name} gradient")


# ----------------------------------------------------------------------------------------------
# Conversions
# ----------------------------------------------------------------------------------------------
CONVERSIONS = {
    "to_dtype": lambda t, L: t.to(L.float64),
    "to_kw": lambda t, L: t.to(dtype=L.long),
    "to_device_dtype": lambda t, L: t.to("cpu", L.float16),
    "to_tensor": lambda t, L: t.to(L.ones(1, dtype=L.float64)),
    "double": lambda t, L: t.double(),
    "float": lambda t, L: t.double().float(),
    "half": lambda t, L: t.half(),
    "long": lambda t, L: t.long(),
    "bool": lambda t, L: t.bool(),
    "cpu": lambda t, L: t.cpu(),
    "clone": lambda t, L: t.clone(),
    "detach": lambda t, L: t.detach(),
}


@pytest.mark.parametrize("case", sorted(CONVERSIONS))
def test_conversions_match_torch(case):
    def build(L):
        return CONVERSIONS[case](L.tensor([[1.5, -2.0], [0.0, 3.25]]), L)

    _same(build(minitorch), build(torch), case)


@LIBS
def test_to_same_dtype_returns_self_and_differentiates(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    assert x.to(lib.float32) is x and x.to("cpu") is x and x.float() is x
    y = x.double()
    assert y.dtype == lib.float64 and y.grad_fn.name() == "ToCopyBackward0"
    (y * 2).sum().backward()
    assert x.grad.dtype == lib.float32 and x.grad.tolist() == [2.0, 2.0]


@LIBS
def test_clone_and_detach(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0" and c.data_ptr() != x.data_ptr()
    d = x.detach()
    assert (d.requires_grad, d.is_leaf, d.grad_fn) == (False, True, None)
    assert d.data_ptr() == x.data_ptr(), "detach() shares storage"


# ----------------------------------------------------------------------------------------------
# Attributes
# ----------------------------------------------------------------------------------------------
@LIBS
def test_shape_attributes(lib):
    t = lib.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, torch.Size)
    assert t.size() == t.shape and t.size(1) == 3 and t.size(-1) == 4
    assert (t.dim(), t.ndim, t.numel(), len(t)) == (3, 3, 24, 2)
    assert t.dtype == torch.float32 and t.device == torch.device("cpu")
    assert str(t.device) == "cpu" and not t.is_cuda
    assert lib.tensor(5.0).shape == () and lib.tensor(5.0).dim() == 0


@LIBS
def test_item_tolist_numpy(lib):
    assert lib.tensor(2.5).item() == 2.5 and isinstance(lib.tensor(2.5).item(), float)
    assert lib.tensor([3]).item() == 3 and isinstance(lib.tensor([3]).item(), int)
    assert lib.tensor(True).item() is True
    assert lib.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert lib.tensor(1.5).tolist() == 1.5
    array = lib.tensor([[1, 2]]).numpy()
    assert isinstance(array, np.ndarray) and array.dtype == np.int64 and array.shape == (1, 2)
    x = lib.tensor([1.0], requires_grad=True)
    assert x.detach().numpy().tolist() == [1.0]
    assert np.asarray(lib.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]


# ----------------------------------------------------------------------------------------------
# repr
# ----------------------------------------------------------------------------------------------
REPRS = {
    "float": lambda L: L.tensor([1.0, 2.5, -3.0]),
    "scalar": lambda L: L.tensor(3.0),
    "int": lambda L: L.tensor([[1, 2], [3, 4]]),
    "int32": lambda L: L.tensor([1, 2], dtype=L.int32),
    "bool": lambda L: L.tensor([True, False]),
    "float64": lambda L: L.tensor([1.0, 2.0], dtype=L.float64),
    "float16": lambda L: L.tensor([1.0, 2.0], dtype=L.float16),
    "bfloat16": lambda L: L.tensor([1.0, 2.0], dtype=L.bfloat16),
    "scientific": lambda L: L.tensor([1e-8, 1e8]),
    "large": lambda L: L.arange(2000).float(),
    "empty": lambda L: L.zeros(0, 3),
    "requires_grad": lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    "requires_grad_float64": lambda L: L.tensor([1.0], dtype=L.float64, requires_grad=True),
    "requires_grad_float16": lambda L: L.tensor([1.0], dtype=L.float16, requires_grad=True),
    "grad_fn_mul": lambda L: L.tensor([1.0, 2.0], requires_grad=True) * 2,
    "grad_fn_scalar": lambda L: L.tensor(3.0, requires_grad=True) * 2,
    "grad_fn_float64": lambda L: L.tensor([[1.0, 2.5]], dtype=L.float64, requires_grad=True) * 2,
    "grad_fn_sum": lambda L: L.tensor([1.0, 2.0], requires_grad=True).sum(),
    "grad_fn_exp": lambda L: L.tensor([1.0, 2.0], requires_grad=True).exp(),
    "detached": lambda L: (L.tensor([1.0], requires_grad=True) * 2).detach(),
    "no_grad_result": lambda L: _no_grad_result(L),
}


def _no_grad_result(L):
    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        return x * 2


@pytest.mark.parametrize("case", sorted(REPRS))
def test_repr_matches_torch(case):
    ours, theirs = repr(REPRS[case](minitorch)), repr(REPRS[case](torch))
    assert ours == theirs, f"\nminitorch: {ours}\ntorch:     {theirs}"
    assert str(REPRS[case](minitorch)) == str(REPRS[case](torch))


def test_format_of_a_scalar_tensor():
    assert f"{minitorch.tensor(2.5):.2f}" == f"{torch.tensor(2.5):.2f}" == "2.50"


# ----------------------------------------------------------------------------------------------
# Python protocols
# ----------------------------------------------------------------------------------------------
ARITHMETIC = {
    "add": lambda x: (x + 2, 2 + x, x + 1.5, x + x),
    "sub": lambda x: (x - 2, 2 - x, x - x),
    "mul": lambda x: (x * 2, 2 * x, x * 0.5, x * x),
    "div": lambda x: (x / 2, 2 / x, x / x),
    "pow": lambda x: (x**2, 2**x, x**0.5, x**x),
    "neg_pos_abs": lambda x: (-x, +x, abs(x)),
    "matmul": lambda x: (x @ x,),
}


@pytest.mark.parametrize("case", sorted(ARITHMETIC))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arithmetic_with_scalars_on_both_sides(case, dtype):
    values = [1.0, 2.0, 4.0]
    ours = ARITHMETIC[case](minitorch.tensor(values, dtype=getattr(minitorch, dtype)))
    theirs = ARITHMETIC[case](torch.tensor(values, dtype=getattr(torch, dtype)))
    for i, (o, t) in enumerate(zip(ours, theirs)):
        _same(o, t, f"{case} expression {i}")


PROMOTIONS = {
    "int_div_int": lambda L: L.tensor([1, 2]) / 2,
    "int_times_float": lambda L: L.tensor([1, 2]) * 2.5,
    "int_plus_float_tensor": lambda L: L.tensor([1, 2]) + L.tensor([0.5, 1.0]),
    "float32_plus_float64": lambda L: L.tensor([1.0]) + L.tensor([1.0], dtype=L.float64),
    "float16_plus_number": lambda L: L.tensor([1.0], dtype=L.float16) + 1.5,
    "bool_plus_int": lambda L: L.tensor([True]) + 1,
    "int_pow": lambda L: L.tensor([3]) ** 2,
    "int_pow_float": lambda L: L.tensor([4]) ** 0.5,
}


@pytest.mark.parametrize("case", sorted(PROMOTIONS))
def test_type_promotion_matches_torch(case):
    _same(PROMOTIONS[case](minitorch), PROMOTIONS[case](torch), case)


COMPARISONS = {
    "gt": lambda x: (x > 2, 2 < x),
    "eq": lambda x: (x == 2, x != 2, x == x),
    "le_ge": lambda x: (x <= 2.5, x >= x),
    "methods": lambda x: (x.gt(1), x.lt(3), x.eq(2), x.ne(2), x.le(1), x.ge(4)),
    "logical": lambda x: ((x > 1) & (x < 4), (x > 1) | (x < 0), ~(x > 1)),
}


@pytest.mark.parametrize("case", sorted(COMPARISONS))
def test_comparisons_give_bool_tensors(case):
    values = [1.0, 2.0, 4.0]
    ours = COMPARISONS[case](minitorch.tensor(values, requires_grad=True))
    theirs = COMPARISONS[case](torch.tensor(values, requires_grad=True))
    for i, (o, t) in enumerate(zip(ours, theirs)):
        _same(o, t, f"{case} {i}")
        assert o.dtype == torch.bool and o.grad_fn is None


@LIBS
def test_scalar_conversions(lib):
    assert bool(lib.tensor([1.0])) is True and bool(lib.tensor(0.0)) is False
    assert float(lib.tensor([2.5])) == 2.5 and int(lib.tensor(3.7)) == 3
    assert [1, 2, 3][lib.tensor(1)] == 2, "__index__ on integer tensors"
    if lib.tensor(2.0) > 1:
        pass
    else:
        pytest.fail("a one-element comparison must work in an if")


@LIBS
def test_len_iter_and_builtin_sum(lib):
    t = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert len(t) == 2
    rows = list(t)
    assert len(rows) == 2 and rows[1].tolist() == [3.0, 4.0]
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    total = sum(x)
    assert total.item() == 6.0 and total.requires_grad
    total.backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    assert sum(lib.tensor([1, 2, 3])).item() == 6


# ----------------------------------------------------------------------------------------------
# .data, detach() and the version counter
# ----------------------------------------------------------------------------------------------
@LIBS
def test_data_shares_storage_with_a_new_version_counter(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.data
    assert (d.requires_grad, d.is_leaf) == (False, True)
    assert d.data_ptr() == x.data_ptr()
    d.mul_(2)
    assert x.tolist() == [2.0, 4.0, 6.0], "changes through .data show in the tensor"
    assert _version(x) == 0 and _version(d) == 1, "but .data has its own version counter"


@LIBS
def test_modifying_data_silently_changes_gradients(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    y = a * a
    a.data.mul_(2)  # invisible to autograd
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0, 12.0], "the gradient used the modified values"


@LIBS
def test_modifying_a_detached_alias_is_caught(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    y = a * a
    alias = a.detach()
    alias.mul_(2)
    assert _version(a) == 1, "detach() shares the version counter"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@LIBS
def test_in_place_ops_bump_the_version(lib):
    t = lib.ones(3)
    seen = [_version(t)]
    for op in (
        lambda: t.add_(1),
        lambda: t.mul_(2),
        lambda: t.sub_(1),
        lambda: t.div_(2),
        lambda: t.zero_(),
        lambda: t.fill_(3),
        lambda: t.clamp_(0, 1),
        lambda: t.copy_(lib.ones(3)),
        lambda: t.__setitem__(0, 5.0),
    ):
        op()
        seen.append(_version(t))
    assert seen == list(range(10)), f"versions after each in-place op: {seen}"
    t += 1
    assert _version(t) == 10
    view = t[1:]
    view.add_(1)
    assert _version(t) == 11, "a view shares the version counter"
    assert t.tolist() == [6.0, 3.0, 3.0]


@LIBS
def test_in_place_ops_return_self_and_keep_recording(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a.mul_(3)
    assert b is a and a.grad_fn.name() == "MulBackward0"
    a.add_(1).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


@LIBS
def test_grad_assignment(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.grad = lib.tensor([5.0, 5.0])
    (x * 2).sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match="assign a gradient of size '\\[3\\]' to a tensor"):
        x.grad = lib.ones(3)
