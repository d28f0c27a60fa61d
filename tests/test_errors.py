"""Every user-facing error: minitorch must raise the same exception type as PyTorch with PyTorch's
key phrase (and advice), and also name the op and/or the shapes involved.

`_both` runs one snippet on torch and on minitorch and returns the two messages, so every key
phrase below is checked against PyTorch itself as well.
"""

import re
import warnings

import pytest
import torch

import minitorch

LIBS = pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time"
)


def _message(lib, snippet, expected=RuntimeError):
    with pytest.raises(expected) as info:
        snippet(lib)
    return str(info.value)


def _both(snippet, expected=RuntimeError):
    """(minitorch's message, PyTorch's message) for the same snippet."""
    return _message(minitorch, snippet, expected), _message(torch, snippet, expected)


def _check(ours, theirs, phrase, *names):
    """PyTorch's message holds the key phrase; minitorch's holds it and names every `names`."""
    assert phrase in theirs, f"PyTorch itself says: {theirs}"
    assert phrase in ours, f"missing PyTorch's key phrase {phrase!r} in: {ours}"
    for name in names:
        assert name in ours, f"the message should name {name!r}: {ours}"


def _leaf(lib, n=3):
    return lib.arange(1.0, n + 1).requires_grad_()


# ----------------------------------------------------------------------------------------------
# backward()
# ----------------------------------------------------------------------------------------------
def test_backward_of_non_scalar_without_gradient():
    ours, theirs = _both(lambda L: (_leaf(L) * 2).backward())
    _check(ours, theirs, "grad can be implicitly created only for scalar outputs", "[3]")


def test_backward_through_freed_graph():
    def snippet(L):
        y = _leaf(L).sin().sum()
        y.backward()
        y.backward()

    ours, theirs = _both(snippet)
    _check(ours, theirs, FREED, "SinBackward0")


def test_autograd_grad_through_freed_graph():
    def snippet(L):
        x = _leaf(L)
        y = (x * x).sum()
        L.autograd.grad(y, x)
        L.autograd.grad(y, x)

    ours, theirs = _both(snippet)
    _check(ours, theirs, FREED, "MulBackward0")


@pytest.mark.parametrize("how", ["constant", "no_grad", "detached", "int"])
def test_backward_of_tensor_without_graph(how):
    def snippet(L):
        x = _leaf(L)
        if how == "constant":
            y = L.ones(3).sum()
        elif how == "no_grad":
            with L.no_grad():
                y = (x * 2).sum()
        elif how == "detached":
            y = (x * 2).sum().detach()
        else:
            y = L.tensor([1, 2]).sum()
        y.backward()

    ours, theirs = _both(snippet)
    _check(ours, theirs, "element 0 of tensors does not require grad and does not have a grad_fn")


def test_autograd_backward_names_the_index():
    ours, theirs = _both(lambda L: L.autograd.backward([(_leaf(L) * 2).sum(), L.ones(1).sum()]))
    _check(ours, theirs, "element 1 of tensors does not require grad")


def test_gradient_of_the_wrong_shape():
    ours, theirs = _both(lambda L: (_leaf(L) * 2).backward(L.ones(2)))
    _check(
        ours,
        theirs,
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([2])",
        "torch.Size([3])",
    )


def test_backward_inputs_empty():
    ours, theirs = _both(lambda L: (_leaf(L) * 2).sum().backward(inputs=[]))
    _check(ours, theirs, "`inputs` argument to `backward()` cannot be empty.")


def test_differentiating_with_respect_to_a_constant():
    ours, theirs = _both(lambda L: L.autograd.grad((_leaf(L) * 2).sum(), L.ones(3)))
    _check(ours, theirs, "One of the differentiated Tensors does not require grad")


def test_autograd_grad_unused_input():
    def snippet(L):
        x, unused = _leaf(L), _leaf(L, 2)
        L.autograd.grad((x * 2).sum(), [x, unused])

    ours, theirs = _both(snippet)
    _check(
        ours,
        theirs,
        "The differentiated Tensor at index 1 appears to not have been used in the graph. "
        "Set allow_unused=True if this is the desired behavior.",
    )


# ----------------------------------------------------------------------------------------------
# In-place operations and the version counter
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["add_", "mul_", "zero_", "setitem", "iadd"])
def test_in_place_on_a_leaf_that_requires_grad(op):
    def snippet(L):
        x = _leaf(L)
        if op == "setitem":
            x[0] = 5.0
        elif op == "iadd":
            x += 1
        elif op == "zero_":
            x.zero_()
        else:
            getattr(x, op)(2.0)

    ours, theirs = _both(snippet)
    _check(
        ours,
        theirs,
        "a leaf Variable that requires grad is being used in an in-place operation.",
        "[3]",
    )


@LIBS
def test_in_place_on_a_leaf_is_fine_under_no_grad(lib):
    x = _leaf(lib)
    with lib.no_grad():
        x.sub_(0.5 * lib.ones(3))
        x[0] = 10.0
    assert x.tolist() == [10.0, 1.5, 2.5] and x.requires_grad and x.is_leaf


VERSION_CASES = {
    # the saved tensor is the result of exp, modified in place after it was saved
    "saved_result": lambda L, x: (lambda e: (e.add_(1), e))(x.exp())[1].sum(),
    # the saved tensor is an input of sin, which was itself produced by exp
    "saved_input": lambda L, x: (lambda e: (e.sin(), e.mul_(2))[0])(x.exp()).sum(),
    # the saved tensor is a leaf modified under no_grad
    "saved_leaf": lambda L, x: (lambda y: (_modify_under_no_grad(L, x), y)[1])(x * x).sum(),
}


def _modify_under_no_grad(L, x):
    with L.no_grad():
        x.mul_(2)


@pytest.mark.parametrize("case", sorted(VERSION_CASES))
def test_saved_tensor_modified_in_place(case):
    def snippet(L):
        VERSION_CASES[case](L, _leaf(L)).backward()

    ours, theirs = _both(snippet)
    key = re.compile(r"\[torch\.FloatTensor \[3\]\].*?expected version \d+ instead\.")
    assert key.search(theirs), theirs
    assert key.search(ours) and key.search(ours).group() == key.search(theirs).group(), (
        f"\nminitorch: {ours}\ntorch:     {theirs}"
    )
    _check(
        ours,
        theirs,
        "one of the variables needed for gradient computation has been modified "
        "by an inplace operation: ",
    )
    saved_by = {"saved_result": "ExpBackward0", "saved_input": "SinBackward0"}
    assert saved_by.get(case, "MulBackward0") in ours, f"the node that saved it: {ours}"


def test_version_message_of_the_reference():
    """The exact example of the reference: exp's result changed in place after being saved."""

    def snippet(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        y.add_(1)
        y.sum().backward()

    ours, theirs = _both(snippet)
    _check(
        ours,
        theirs,
        "[torch.FloatTensor [3]], which is output 0 of Exp, is at version 1; expected version 0 "
        "instead.",
    )


def test_version_message_names_the_dtype():
    def snippet(L):
        x = L.ones(2, 2, dtype=L.float64, requires_grad=True)
        y = x.sigmoid()
        y.mul_(2)
        y.sum().backward()

    ours, theirs = _both(snippet)
    _check(
        ours,
        theirs,
        "[torch.DoubleTensor [2, 2]], which is output 0 of Sigmoid, is at "
        "version 1; expected version 0 instead.",
    )


# ----------------------------------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------------------------------
BROADCAST_OPS = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b,
    "maximum": lambda L, a, b: L.maximum(a, b),
}


@pytest.mark.parametrize("op", sorted(BROADCAST_OPS))
def test_broadcasting_mismatch(op):
    ours, theirs = _both(lambda L: BROADCAST_OPS[op](L, L.ones(2, 3), L.ones(2, 4)))
    _check(
        ours,
        theirs,
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
        op,
        "[2, 3]",
        "[2, 4]",
    )


def test_broadcasting_mismatch_while_recording():
    ours, theirs = _both(lambda L: _leaf(L) * L.ones(4))
    _check(
        ours,
        theirs,
        "The size of tensor a (3) must match the size of tensor b (4)",
        "mul",
        "[3]",
        "[4]",
    )


MATMUL_CASES = {
    "mm": ((2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    "mv": ((2, 3), (4,), "size mismatch, got input (2), mat (2x3), vec (4)"),
    "dot": ((3,), (4,), "inconsistent tensor size"),
    "batched": ((2, 2, 3), (2, 4, 5), "Expected size for first two dimensions of batch2 tensor"),
}


@pytest.mark.parametrize("case", sorted(MATMUL_CASES))
def test_matmul_shape_mismatch(case):
    a, b, phrase = MATMUL_CASES[case]
    ours, theirs = _both(lambda L: L.ones(*a, requires_grad=True) @ L.ones(*b))
    _check(ours, theirs, phrase, str(list(a)), str(list(b)))


def test_matmul_of_a_scalar():
    ours, theirs = _both(lambda L: L.ones(3) @ L.tensor(2.0))
    _check(ours, theirs, "both arguments to matmul need to be at least 1D", "0D")


def test_view_of_the_wrong_size():
    ours, theirs = _both(lambda L: L.ones(2, 3).view(5))
    _check(ours, theirs, "shape '[5]' is invalid for input of size 6", "[2, 3]")


# ----------------------------------------------------------------------------------------------
# requires_grad
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["factory", "tensor", "method", "attribute"])
def test_integer_tensor_cannot_require_grad(how):
    def snippet(L):
        if how == "factory":
            L.zeros(2, dtype=L.long, requires_grad=True)
        elif how == "tensor":
            L.tensor([1, 2], requires_grad=True)
        elif how == "method":
            L.tensor([1, 2]).requires_grad_()
        else:
            L.tensor([1, 2]).requires_grad = True

    ours, theirs = _both(snippet)
    # PyTorch says "Only Tensors of floating point and complex dtype" from the factories and
    # "only Tensors of floating point dtype" from requires_grad_(); both share this phrase.
    phrase = "nly Tensors of floating point"
    _check(ours, theirs, phrase, "torch.int64")
    assert "can require gradients" in ours


@pytest.mark.parametrize("how", ["method", "attribute"])
def test_changing_requires_grad_of_a_non_leaf(how):
    def snippet(L):
        y = _leaf(L) * 2
        if how == "method":
            y.requires_grad_(False)
        else:
            y.requires_grad = False

    ours, theirs = _both(snippet)
    _check(
        ours,
        theirs,
        "you can only change requires_grad flags of leaf variables. If you want to use a "
        "computed variable in a subgraph that doesn't require differentiation use "
        "var_no_grad = var.detach().",
        "MulBackward0",
    )


@LIBS
def test_reading_grad_of_a_non_leaf_warns(lib):
    x = _leaf(lib)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning) as record:
        assert y.grad is None
    text = str(record[0].message)
    assert "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed" in text
    assert ".retain_grad()" in text
    z = x * 3
    z.retain_grad()
    z.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.grad.tolist() == [1.0, 1.0, 1.0]
        assert x.grad is not None and lib.ones(1).grad is None


def test_hooks_and_retain_grad_need_requires_grad():
    ours, theirs = _both(lambda L: L.ones(2).retain_grad())
    _check(ours, theirs, "can't retain_grad on Tensor that has requires_grad=False")
    ours, theirs = _both(lambda L: L.ones(2).register_hook(lambda g: g))
    _check(ours, theirs, "cannot register a hook on a tensor that doesn't require gradient")


# ----------------------------------------------------------------------------------------------
# Conversions and inference tensors
# ----------------------------------------------------------------------------------------------
def test_numpy_of_a_tensor_that_requires_grad():
    ours, theirs = _both(lambda L: _leaf(L).numpy())
    _check(
        ours,
        theirs,
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
    )


def test_item_of_several_elements():
    ours, theirs = _both(lambda L: L.ones(3).item())
    _check(ours, theirs, "a Tensor with 3 elements cannot be converted to Scalar")


def test_bool_of_several_elements():
    ours, theirs = _both(lambda L: bool(L.ones(3) > 0))
    _check(ours, theirs, "Boolean value of Tensor with more than one value is ambiguous", "[3]")


def test_bool_of_an_empty_tensor():
    ours, theirs = _both(lambda L: bool(L.tensor([])))
    _check(ours, theirs, "Boolean value of Tensor with no values is ambiguous", "[0]")


def test_len_and_iter_of_a_scalar():
    ours, theirs = _both(lambda L: len(L.tensor(1.0)), TypeError)
    _check(ours, theirs, "len() of a 0-d tensor")
    ours, theirs = _both(lambda L: iter(L.tensor(1.0)), TypeError)
    _check(ours, theirs, "iteration over a 0-d tensor")


def test_inference_tensor_saved_for_backward():
    def snippet(L):
        with L.inference_mode():
            t = L.ones(3)
        (_leaf(L) * t).sum().backward()

    ours, theirs = _both(snippet)
    _check(ours, theirs, "Inference tensors cannot be saved for backward.")
    assert "clone" in ours, "the advice: make a clone"


@pytest.mark.parametrize("view", [False, True], ids=["tensor", "view"])
@pytest.mark.parametrize("op", ["add_", "zero_", "copy_"])
def test_inference_tensor_changed_in_place_outside_inference_mode(op, view):
    def snippet(L):
        with L.inference_mode():
            t = L.ones(3)
        target = t[:2] if view else t
        args = {"add_": (1,), "zero_": (), "copy_": (L.zeros(target.shape),)}[op]
        getattr(target, op)(*args)

    ours, theirs = _both(snippet)
    _check(ours, theirs, "Inplace update to inference tensor outside InferenceMode is not allowed.")
    with minitorch.inference_mode():
        t = minitorch.ones(3)
    with pytest.raises(RuntimeError):
        t.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0], "nothing is written before the error"
    with minitorch.inference_mode():
        assert t.add_(1).tolist() == [2.0, 2.0, 2.0], "inside inference mode it is allowed"


# ----------------------------------------------------------------------------------------------
# Devices (only testable with CUDA)
# ----------------------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
@pytest.mark.parametrize("op", ["add", "matmul"])
def test_tensors_on_different_devices(op):
    def snippet(L):
        a = L.ones(2, 2, device="cuda", requires_grad=True)
        b = L.ones(2, 2)
        return a + b if op == "add" else a @ b

    ours, theirs = _both(snippet)
    _check(ours, theirs, "Expected all tensors to be on the same device", "cuda", "cpu")
