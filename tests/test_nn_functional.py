"""minitorch.nn.functional against torch.nn.functional in float64: forward values, gradients of
every input (including targets where torch differentiates them), gradcheck and second
derivatives of the fused Functions, and the errors a user can hit.

Node names: where minitorch records one fused node and torch a different one, the test names
minitorch's node and says why (`node_name=`); elsewhere the names and edges must equal torch's.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import (
    assert_close,
    check_gradcheck,
    check_op,
    check_second_order,
    constant,
    distinct,
    make_values,
    on_grid,
    seeds,
    shapes,
    uniform,
)

import minitorch
from minitorch import Tensor

FEW = settings(max_examples=12)


def F(lib):
    return lib.nn.functional


def ints(low: int, high: int):
    return st.integers(min_value=low, max_value=high)


# -------------------------------------------------------------------------------------------------
# linear
# -------------------------------------------------------------------------------------------------
@FEW
@given(batch=shapes(0, 2), sizes=st.tuples(ints(1, 4), ints(1, 4)), bias=st.booleans(), seed=seeds)
def test_linear_matches_torch(batch, sizes, bias, seed):
    features_in, features_out = sizes
    x_shape = (*batch, features_in)
    shapes_ = [x_shape, (features_out, features_in)] + ([(features_out,)] if bias else [])
    values = make_values([uniform()] * len(shapes_), shapes_, seed)
    # torch names the node AddmmBackward0/MmBackward0 for a 2-D input only (otherwise a view's
    # node, as it reshapes around the product); minitorch records its one linear node always.
    torch_named = len(x_shape) == 2
    node = None if torch_named else ("AddmmBackward0" if bias else "MmBackward0")
    check_op(lambda lib, *xs: F(lib).linear(*xs), values, seed, node_name=node)


def test_linear_error_names_the_shapes():
    x, w = minitorch.randn(4, 3), minitorch.randn(2, 5)
    with pytest.raises(RuntimeError) as m_error:
        minitorch.nn.functional.linear(x, w)
    with pytest.raises(RuntimeError) as t_error:
        torch.nn.functional.linear(torch.randn(4, 3), torch.randn(2, 5))
    assert "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)" in str(m_error.value)
    assert "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)" in str(t_error.value)


def test_linear_gradcheck_and_second_order():
    values = make_values([uniform()] * 3, [(2, 3), (2, 3), (2,)], 0)
    check_gradcheck(lambda lib, *xs: F(lib).linear(*xs), values)
    # tanh makes the second derivative non-zero.
    check_second_order(lambda lib, x, w, b: F(lib).linear(x, w, b).tanh(), values)


# -------------------------------------------------------------------------------------------------
# conv2d and max_pool2d
# -------------------------------------------------------------------------------------------------
@st.composite
def conv_cases(draw):
    kernel = (draw(ints(1, 3)), draw(ints(1, 3)))
    stride = (draw(ints(1, 2)), draw(ints(1, 2)))
    dilation = (draw(ints(1, 2)), draw(ints(1, 2)))
    padding = (draw(ints(0, 1)), draw(ints(0, 1)))
    reach = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    height = draw(ints(max(1, reach[0] - 2 * padding[0]), 5))
    width = draw(ints(max(1, reach[1] - 2 * padding[1]), 5))
    n, c, o = draw(ints(1, 2)), draw(ints(1, 2)), draw(ints(1, 3))
    return (
        (n, c, height, width),
        (o, c, *kernel),
        dict(stride=stride, padding=padding, dilation=dilation),
    )


@FEW
@given(case=conv_cases(), bias=st.booleans(), seed=seeds)
def test_conv2d_matches_torch(case, bias, seed):
    x_shape, w_shape, options = case
    shapes_ = [x_shape, w_shape] + ([(w_shape[0],)] if bias else [])
    values = make_values([uniform()] * len(shapes_), shapes_, seed)

    def conv(lib, x, w, b=None):
        return F(lib).conv2d(x, w, b, **options)

    # Without a bias torch's node keeps a None edge for it; minitorch's has no edge there.
    check_op(conv, values, seed, node_name=None if bias else "ConvolutionBackward0")


def test_conv2d_unbatched_and_string_padding():
    values = make_values([uniform()] * 3, [(2, 5, 4), (3, 2, 3, 3), (3,)], 1)
    check_op(lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding="same"), values)
    check_op(lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding="valid"), values)


def test_conv2d_gradcheck_and_second_order():
    values = make_values([uniform()] * 3, [(1, 1, 3, 3), (2, 1, 2, 2), (2,)], 2)
    check_gradcheck(lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding=1), values)
    check_second_order(
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, stride=2, padding=1).tanh(), values
    )


def test_conv2d_errors_name_shapes():
    x = minitorch.randn(1, 3, 5, 5)
    w = minitorch.randn(2, 1, 3, 3)
    with pytest.raises(
        RuntimeError,
        match=r"expected input\[1, 3, 5, 5\] to have 1 channels, "
        r"but got 3 channels instead",
    ):
        minitorch.nn.functional.conv2d(x, w)
    with pytest.raises(
        RuntimeError,
        match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
        r"to conv2d, but got input of size: \[5, 5\]",
    ):
        minitorch.nn.functional.conv2d(minitorch.randn(5, 5), w)


@st.composite
def pool_cases(draw):
    kernel = (draw(ints(1, 3)), draw(ints(1, 3)))
    stride = (draw(ints(1, 3)), draw(ints(1, 3)))
    padding = (draw(ints(0, kernel[0] // 2)), draw(ints(0, kernel[1] // 2)))
    height = draw(ints(kernel[0], 6))
    width = draw(ints(kernel[1], 6))
    batch = draw(st.sampled_from([(), (1,), (2,)]))
    options = dict(
        kernel_size=kernel, stride=stride, padding=padding, ceil_mode=draw(st.booleans())
    )
    return (*batch, draw(ints(1, 2)), height, width), options


@FEW
@given(case=pool_cases(), seed=seeds)
def test_max_pool2d_matches_torch(case, seed):
    shape, options = case
    values = make_values([distinct()], [shape], seed)  # no ties: a unique maximum per window
    check_op(lambda lib, x: F(lib).max_pool2d(x, **options), values, seed)
    check_op(lambda lib, x: F(lib).max_pool2d(x, return_indices=True, **options), values, seed)


def test_max_pool2d_gradcheck_and_second_order():
    values = make_values([distinct()], [(1, 1, 4, 4)], 3)
    check_gradcheck(lambda lib, x: F(lib).max_pool2d(x, 2), values)
    check_second_order(lambda lib, x: F(lib).max_pool2d(x, 3, 1, 1) ** 2, values)


# -------------------------------------------------------------------------------------------------
# Classification losses
# -------------------------------------------------------------------------------------------------
@st.composite
def class_cases(draw):
    """(input shape, target) for class-index losses: (C,), (N, C) or (N, C, d1[, d2])."""
    classes = draw(ints(1, 4))
    form = draw(st.sampled_from(["single", "rows", "spatial"]))
    n = draw(ints(1, 4))
    if form == "single":
        shape, target_shape = (classes,), ()
    elif form == "rows":
        shape, target_shape = (n, classes), (n,)
    else:
        extra = tuple(draw(shapes(1, 2, 1, 3)))
        shape, target_shape = (n, classes, *extra), (n, *extra)
    seed = draw(seeds)
    gen = torch.Generator().manual_seed(seed)
    target = torch.randint(0, classes, target_shape, generator=gen)
    if draw(st.booleans()) and target.numel() > 1:
        target.view(-1)[0] = -100  # one ignored entry
    return shape, target


@FEW
@given(
    case=class_cases(),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    weighted=st.booleans(),
    smoothing=st.sampled_from([0.0, 0.25]),
    seed=seeds,
)
def test_cross_entropy_matches_torch(case, reduction, weighted, smoothing, seed):
    shape, target = case
    classes = shape[0] if len(shape) == 1 else shape[1]
    weight = torch.rand(classes, dtype=torch.float64) + 0.5 if weighted else None
    (values,) = [make_values([uniform()], [shape], seed)]

    def loss(lib, x):
        w = None if weight is None else constant(lib, weight)
        return F(lib).cross_entropy(
            x, constant(lib, target), weight=w, reduction=reduction, label_smoothing=smoothing
        )

    # NllLossBackward0 (NllLoss2DBackward0 / ViewBackward0 for higher ranks) after
    # LogSoftmaxBackward0, or with label smoothing AddBackward0 on top, as torch records them.
    check_op(loss, values, seed)


@FEW
@given(
    case=class_cases(),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    weighted=st.booleans(),
    seed=seeds,
)
def test_nll_loss_matches_torch(case, reduction, weighted, seed):
    shape, target = case
    classes = shape[0] if len(shape) == 1 else shape[1]
    weight = torch.rand(classes, dtype=torch.float64) + 0.5 if weighted else None
    values = make_values([uniform(-3.0, 0.0)], [shape], seed)

    def loss(lib, x):
        w = None if weight is None else constant(lib, weight)
        return F(lib).nll_loss(x, constant(lib, target), weight=w, reduction=reduction)

    # torch names the node NllLoss2DBackward0 for 4-D inputs and views other ranks as 4-D;
    # so does minitorch.
    check_op(loss, values, seed)


@FEW
@given(
    n=ints(1, 3),
    classes=ints(1, 4),
    smoothing=st.sampled_from([0.0, 0.1]),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    seed=seeds,
)
def test_cross_entropy_with_class_probabilities(n, classes, smoothing, reduction, seed):
    values = make_values([uniform(), uniform(0.0, 1.0)], [(n, classes), (n, classes)], seed)
    values[1] = values[1] / values[1].sum(1, keepdim=True)

    def loss(lib, x, p):
        return F(lib).cross_entropy(x, p, label_smoothing=smoothing, reduction=reduction)

    check_op(loss, values, seed)


def test_cross_entropy_gradcheck_and_second_order():
    values = make_values([uniform()], [(3, 4)], 4)
    target = torch.tensor([0, 3, -100])
    weight = torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=torch.float64)

    def loss(lib, x):
        return F(lib).cross_entropy(
            x, constant(lib, target), weight=constant(lib, weight), label_smoothing=0.1
        )

    check_gradcheck(loss, values)
    check_second_order(loss, values)
    check_second_order(lambda lib, x: F(lib).nll_loss(x.tanh(), constant(lib, target)), values)


def test_cross_entropy_target_errors():
    logits = minitorch.randn(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        minitorch.nn.functional.cross_entropy(logits, minitorch.tensor([0, 4, 1]))
    with pytest.raises(
        ValueError,
        match=r"Expected input batch_size \(3\) to match target "
        r"batch_size \(2\).",
    ):
        minitorch.nn.functional.cross_entropy(logits, minitorch.tensor([0, 1]))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        minitorch.nn.functional.cross_entropy(logits, minitorch.tensor([0, 1, 2]), reduction="avg")


def test_cross_entropy_all_ignored_is_nan_like_torch():
    target = torch.tensor([-100, -100])
    expected = torch.nn.functional.cross_entropy(torch.zeros(2, 3), target)
    actual = minitorch.nn.functional.cross_entropy(minitorch.zeros(2, 3), Tensor(target))
    assert_close(actual, expected, "mean over no entries")


@FEW
@given(
    shape=shapes(1, 3),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    weighted=st.booleans(),
    positive_weighted=st.booleans(),
    seed=seeds,
)
def test_binary_cross_entropy_with_logits_matches_torch(
    shape, reduction, weighted, positive_weighted, seed
):
    values = make_values([uniform(-3, 3), uniform(0.0, 1.0)], [shape, shape], seed)
    gen = torch.Generator().manual_seed(seed)
    weight = torch.rand(shape, generator=gen, dtype=torch.float64) if weighted else None
    pos = torch.rand(shape[-1:], generator=gen, dtype=torch.float64) * 2 + 0.2
    pos_weight = pos if positive_weighted else None

    def loss(lib, x, y):
        w = None if weight is None else constant(lib, weight)
        p = None if pos_weight is None else constant(lib, pos_weight)
        return F(lib).binary_cross_entropy_with_logits(x, y, w, reduction=reduction, pos_weight=p)

    # Gradients with respect to the logits and to the targets.
    check_op(loss, values, seed)


def test_binary_cross_entropy_with_logits_gradcheck_and_second_order():
    values = make_values([uniform(-3, 3), uniform(0.0, 1.0)], [(2, 3), (2, 3)], 5)
    pos_weight = torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64)

    def loss(lib, x, y):
        return F(lib).binary_cross_entropy_with_logits(x, y, pos_weight=constant(lib, pos_weight))

    check_gradcheck(loss, values)
    check_second_order(loss, values)


def test_binary_cross_entropy_with_logits_is_stable_for_large_logits():
    x = minitorch.tensor([1000.0, -1000.0], requires_grad=True)
    y = minitorch.tensor([0.0, 1.0])
    loss = minitorch.nn.functional.binary_cross_entropy_with_logits(x, y, reduction="none")
    assert loss.tolist() == [1000.0, 1000.0]
    loss.sum().backward()
    assert x.grad.tolist() == [1.0, -1.0]


# -------------------------------------------------------------------------------------------------
# Regression losses
# -------------------------------------------------------------------------------------------------
@st.composite
def broadcastable_pairs(draw):
    shape = draw(shapes(1, 3))
    target = shape if draw(st.booleans()) else tuple(1 for _ in shape[1:]) + shape[-1:]
    return shape, target


@FEW
@given(
    pair=broadcastable_pairs(),
    reduction=st.sampled_from(["mean", "sum", "none"]),
    name=st.sampled_from(["mse_loss", "l1_loss"]),
    seed=seeds,
)
def test_regression_losses_match_torch(pair, reduction, name, seed):
    shape, target_shape = pair
    # Input and target never meet (on_grid offsets), so |input - target| is differentiable.
    values = make_values([on_grid(0.0), on_grid(0.5)], [shape, target_shape], seed)

    def loss(lib, x, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the broadcasting warning, checked below
            return getattr(F(lib), name)(x, y, reduction=reduction)

    # MseLossBackward0, or for l1_loss the reduction's node (torch composes it), as in torch.
    check_op(loss, values, seed)


def test_mse_loss_warns_about_broadcasting_like_torch():
    with pytest.warns(UserWarning, match="Using a target size"):
        minitorch.nn.functional.mse_loss(minitorch.randn(3, 1), minitorch.randn(3))


# -------------------------------------------------------------------------------------------------
# Embedding, layer_norm, pad, one_hot, softmax family
# -------------------------------------------------------------------------------------------------
@FEW
@given(index_shape=shapes(0, 2), rows=ints(1, 5), dim=ints(1, 3), padding=st.booleans(), seed=seeds)
def test_embedding_matches_torch(index_shape, rows, dim, padding, seed):
    gen = torch.Generator().manual_seed(seed)
    indices = torch.randint(0, rows, index_shape, generator=gen)
    padding_idx = int(indices.reshape(-1)[0]) if padding and indices.numel() else None
    values = make_values([uniform()], [(rows, dim)], seed)

    def embed(lib, w):
        return F(lib).embedding(constant(lib, indices), w, padding_idx=padding_idx)

    check_op(embed, values, seed)


def test_embedding_gradcheck_and_index_error():
    indices = torch.tensor([[0, 2], [2, 1]])
    values = make_values([uniform()], [(3, 2)], 6)
    check_gradcheck(lambda lib, w: F(lib).embedding(constant(lib, indices), w), values)
    with pytest.raises(IndexError, match="index out of range in self"):
        minitorch.nn.functional.embedding(minitorch.tensor([3]), minitorch.randn(3, 2))


@FEW
@given(shape=shapes(1, 3, 1, 4), normalized=ints(1, 2), affine=st.booleans(), seed=seeds)
def test_layer_norm_matches_torch(shape, normalized, affine, seed):
    normalized = min(normalized, len(shape))
    norm_shape = shape[len(shape) - normalized :]
    shapes_ = [shape] + ([norm_shape, norm_shape] if affine else [])
    values = make_values([uniform()] * len(shapes_), shapes_, seed)

    def norm(lib, x, *affine_params):
        return F(lib).layer_norm(x, norm_shape, *affine_params, eps=1e-5)

    # NativeLayerNormBackward0, as in torch; without weight and bias torch's node still has
    # their (None, 0) edges, minitorch's has none (it makes no edge for a None argument).
    node = None if affine else "NativeLayerNormBackward0"
    check_op(norm, values, seed, node_name=node, rtol=1e-6, atol=1e-8)


def test_layer_norm_gradcheck_and_error():
    values = make_values([uniform()] * 3, [(2, 3), (3,), (3,)], 7)
    check_gradcheck(lambda lib, x, w, b: F(lib).layer_norm(x, (3,), w, b), values)
    with pytest.raises(
        RuntimeError,
        match=r"Given normalized_shape=\[4\], expected input with "
        r"shape \[\*, 4\], but got input of size\[2, 3\]",
    ):
        minitorch.nn.functional.layer_norm(minitorch.randn(2, 3), (4,))


@st.composite
def pad_cases(draw):
    shape = draw(shapes(1, 3, 2, 4))
    dims = draw(ints(1, len(shape)))
    amounts = []
    for d in range(dims):
        side = shape[len(shape) - 1 - d]
        # A negative amount crops; keep at least one element.
        before = draw(ints(-(side - 1) // 2, 2))
        after = draw(ints(-(side - 1) // 2, 2))
        amounts += [before, after]
    return shape, tuple(amounts)


@FEW
@given(case=pad_cases(), value=st.sampled_from([0.0, -1.5]), seed=seeds)
def test_pad_matches_torch(case, value, seed):
    shape, amounts = case
    values = make_values([uniform()], [shape], seed)
    check_op(lambda lib, x: F(lib).pad(x, amounts, value=value), values, seed)


def test_pad_gradcheck_and_errors():
    values = make_values([uniform()], [(2, 3)], 8)
    check_gradcheck(lambda lib, x: F(lib).pad(x, (1, -1, 2, 0)), values)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        minitorch.nn.functional.pad(minitorch.randn(2), (1,))
    with pytest.raises(NotImplementedError, match="mode='constant' only"):
        minitorch.nn.functional.pad(minitorch.randn(1, 2, 2), (1, 1), mode="reflect")


@pytest.mark.parametrize("classes", [-1, 5])
def test_one_hot_matches_torch(classes):
    index = torch.tensor([[0, 3], [1, 1]])
    expected = torch.nn.functional.one_hot(index, classes)
    actual = minitorch.nn.functional.one_hot(Tensor(index), classes)
    assert_close(actual, expected, "one_hot")
    with pytest.raises(RuntimeError, match="index tensor of type LongTensor"):
        minitorch.nn.functional.one_hot(minitorch.tensor([0.0, 1.0]))


@pytest.mark.parametrize("name", ["relu", "tanh", "sigmoid", "softmax", "log_softmax"])
def test_activations_match_torch(name):
    values = make_values([distinct(0.2)], [(3, 4)], 9)
    extra = {"dim": 1} if "softmax" in name else {}
    check_op(lambda lib, x: getattr(F(lib), name)(x, **extra), values)


def test_softmax_without_dim_warns_and_picks_torchs_dim():
    x = torch.randn(2, 3, dtype=torch.float64)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        actual = minitorch.nn.functional.softmax(Tensor(x))
    with pytest.warns(UserWarning):
        expected = torch.nn.functional.softmax(x)
    assert_close(actual, expected, "softmax with the implicit dim")


# -------------------------------------------------------------------------------------------------
# dropout
# -------------------------------------------------------------------------------------------------
def test_dropout_statistics():
    minitorch.manual_seed(0)
    x = minitorch.ones(200, 100, dtype=minitorch.float64)
    out = minitorch.nn.functional.dropout(x, p=0.3)
    dropped = (out == 0).to(minitorch.float64).mean().item()
    assert abs(dropped - 0.3) < 0.02, f"dropped fraction {dropped}, expected about 0.3"
    kept = out._data[out._data != 0]
    assert torch.allclose(kept, torch.full_like(kept, 1 / 0.7)), "kept values are scaled 1/(1-p)"
    assert abs(out.mean().item() - 1.0) < 0.05, "the expected value is preserved"


def test_dropout_equals_torch_after_the_same_seed_and_its_gradient_uses_the_mask():
    values = make_values([uniform()], [(4, 5)], 10)

    def drop(lib, x):
        lib.manual_seed(123)
        return F(lib).dropout(x, 0.4)

    check_op(drop, values)


def test_dropout_off_when_not_training_and_p_checked():
    x = minitorch.randn(3, 3)
    assert minitorch.nn.functional.dropout(x, 0.5, training=False) is x
    assert minitorch.nn.functional.dropout(x, 1.0).abs().sum().item() == 0.0
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got"):
        minitorch.nn.functional.dropout(x, 1.5)
