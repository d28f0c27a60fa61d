"""minitorch.nn layers, losses, init and clip_grad_norm_ against torch.nn in float64.

Each layer is built in both libraries with the same arguments, torch's weights are copied into
minitorch's, and the output and the gradients of the input and of every parameter must agree.
Default initialisation draws from torch's generator the way PyTorch does, so after the same seed
the weights agree too (tested, although the course does not rely on it).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_close, seeds

import minitorch
from minitorch import Tensor

FEW = settings(max_examples=10)
DOUBLE = torch.float64


def build_both(make):
    """`make(lib)` in both libraries (float64), minitorch's weights copied from torch's."""
    t_layer = make(torch).double()
    m_layer = make(minitorch).double()
    copied = {k: Tensor(v.detach().clone()) for k, v in t_layer.state_dict().items()}
    m_layer.load_state_dict(copied)
    return m_layer, t_layer


def check_layer(make, x, *extra, rtol=1e-7, atol=1e-9, input_grad=True):
    """Output, input gradient and parameter gradients of `make(lib)(x, *extra)` agree."""
    m_layer, t_layer = build_both(make)
    t_x = x.clone().requires_grad_(input_grad)
    m_x = Tensor(x.clone(), requires_grad=input_grad)
    t_extra = [e.clone() for e in extra]
    m_extra = [Tensor(e.clone()) for e in extra]
    t_out, m_out = t_layer(t_x, *t_extra), m_layer(m_x, *m_extra)
    assert_close(m_out, t_out, "layer output", rtol, atol)
    if not t_out.requires_grad:
        return
    upstream = torch.randn(
        t_out.shape, dtype=t_out.dtype, generator=torch.Generator().manual_seed(1)
    )
    t_out.backward(upstream)
    m_out.backward(Tensor(upstream.clone()))
    if input_grad:
        assert_close(m_x.grad, t_x.grad, "input gradient", rtol, atol)
    m_params = dict(m_layer.named_parameters())
    for name, t_param in t_layer.named_parameters():
        assert_close(m_params[name].grad, t_param.grad, f"gradient of {name}", rtol, atol)


def randn(*shape):
    return torch.randn(*shape, dtype=DOUBLE)


# -------------------------------------------------------------------------------------------------
# Layers with parameters
# -------------------------------------------------------------------------------------------------
@FEW
@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    bias=st.booleans(),
    seed=seeds,
)
def test_linear(batch, sizes, bias, seed):
    torch.manual_seed(seed)
    check_layer(lambda lib: lib.nn.Linear(*sizes, bias=bias), randn(*batch, sizes[0]))


@FEW
@given(
    channels=st.tuples(st.integers(1, 2), st.integers(1, 3)),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 2),
    padding=st.integers(0, 1),
    dilation=st.integers(1, 2),
    bias=st.booleans(),
    seed=seeds,
)
def test_conv2d(channels, kernel, stride, padding, dilation, bias, seed):
    torch.manual_seed(seed)
    options = dict(stride=stride, padding=padding, dilation=dilation, bias=bias)
    check_layer(
        lambda lib: lib.nn.Conv2d(*channels, kernel, **options), randn(2, channels[0], 5, 6)
    )


def test_conv2d_rectangular_kernel_and_same_padding():
    check_layer(lambda lib: lib.nn.Conv2d(2, 3, (3, 1), padding="same"), randn(1, 2, 4, 5))
    check_layer(lambda lib: lib.nn.Conv2d(2, 3, (1, 3), stride=(2, 1)), randn(2, 4, 5))


@pytest.mark.parametrize("padding_idx", [None, 1, -1])
def test_embedding(padding_idx):
    indices = torch.tensor([[0, 1, 3], [1, 1, 2]])
    m_layer, t_layer = build_both(lambda lib: lib.nn.Embedding(4, 3, padding_idx=padding_idx))
    t_out, m_out = t_layer(indices), m_layer(Tensor(indices))
    assert_close(m_out, t_out, "embedding output")
    upstream = randn(*t_out.shape)
    t_out.backward(upstream)
    m_out.backward(Tensor(upstream))
    assert_close(m_layer.weight.grad, t_layer.weight.grad, "embedding weight gradient")
    assert repr(m_layer) == repr(t_layer)


def test_embedding_from_pretrained_is_frozen_by_default():
    table = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]])
    layer = minitorch.nn.Embedding.from_pretrained(table)
    assert not layer.weight.requires_grad
    assert layer(minitorch.tensor([1])).tolist() == [[3.0, 4.0]]
    assert minitorch.nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad


@pytest.mark.parametrize(
    "shape, affine, bias", [((4,), True, True), ((3, 4), True, False), ((4,), False, True)]
)
def test_layer_norm(shape, affine, bias):
    torch.manual_seed(0)

    def make(lib):
        layer = lib.nn.LayerNorm(shape, elementwise_affine=affine, bias=bias)
        if affine:  # move away from ones/zeros so the parameters matter
            lib.nn.init.normal_(layer.weight)
            if bias:
                lib.nn.init.normal_(layer.bias)
        return layer

    check_layer(make, randn(2, 3, 4), rtol=1e-6, atol=1e-8)
    assert repr(make(minitorch)) == repr(make(torch))


# -------------------------------------------------------------------------------------------------
# Layers without parameters
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.nn.ReLU(),
        lambda lib: lib.nn.Tanh(),
        lambda lib: lib.nn.Sigmoid(),
        lambda lib: lib.nn.Identity(3, unused=True),
        lambda lib: lib.nn.Softmax(dim=1),
        lambda lib: lib.nn.LogSoftmax(dim=-1),
        lambda lib: lib.nn.Flatten(),
        lambda lib: lib.nn.Flatten(0, 1),
        lambda lib: lib.nn.MaxPool2d(2),
        lambda lib: lib.nn.MaxPool2d((2, 3), stride=1, padding=1),
        lambda lib: lib.nn.MaxPool2d(3, 2, ceil_mode=True),
        lambda lib: lib.nn.Dropout(0.3).eval(),
    ],
)
def test_parameter_free_layers(make):
    # Distinct, non-zero values: no ties for max pooling, relu differentiable everywhere.
    values = (torch.randperm(2 * 3 * 5 * 5).to(DOUBLE) - 75.5).reshape(2, 3, 5, 5) / 10
    check_layer(make, values)
    assert repr(make(minitorch)) == repr(make(torch))


def test_max_pool2d_return_indices_like_torch():
    values = torch.randperm(32).to(DOUBLE).reshape(1, 2, 4, 4)
    m_out, m_idx = minitorch.nn.MaxPool2d(2, return_indices=True)(Tensor(values))
    t_out, t_idx = torch.nn.MaxPool2d(2, return_indices=True)(values)
    assert_close(m_out, t_out, "pooled values")
    assert_close(m_idx, t_idx, "indices of the maxima")
    assert not m_idx.requires_grad


def test_dropout_layer_trains_then_passes_through_in_eval():
    x = torch.randn(50, 40, dtype=DOUBLE)
    torch.manual_seed(5)
    t_out = torch.nn.Dropout(0.5)(x)
    minitorch.manual_seed(5)
    layer = minitorch.nn.Dropout(0.5)
    m_out = layer(Tensor(x))
    assert_close(m_out, t_out, "dropout with the same seed")
    zero_fraction = (m_out == 0).to(DOUBLE).mean().item()
    assert 0.4 < zero_fraction < 0.6
    layer.eval()
    m_x = Tensor(x)
    assert layer(m_x) is m_x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        minitorch.nn.Dropout(-0.1)


def test_layer_reprs_equal_torchs():
    makers = [
        lambda lib: lib.nn.Linear(3, 4),
        lambda lib: lib.nn.Linear(3, 4, bias=False),
        lambda lib: lib.nn.Conv2d(1, 2, 3),
        lambda lib: lib.nn.Conv2d(1, 2, (3, 2), stride=2, padding=1, dilation=2, bias=False),
        lambda lib: lib.nn.Conv2d(1, 2, 3, padding="same"),
        lambda lib: lib.nn.Embedding(10, 3, padding_idx=0),
        lambda lib: lib.nn.MaxPool2d(3, 1, 1),
        lambda lib: lib.nn.Dropout(),
        lambda lib: lib.nn.ReLU(inplace=True),
        lambda lib: lib.nn.Softmax(),
        lambda lib: lib.nn.CrossEntropyLoss(label_smoothing=0.1),
        lambda lib: lib.nn.MSELoss(reduction="sum"),
        lambda lib: lib.nn.BCEWithLogitsLoss(),
    ]
    for make in makers:
        assert repr(make(minitorch)) == repr(make(torch))


# -------------------------------------------------------------------------------------------------
# A small CNN, trained for a few steps in both libraries
# -------------------------------------------------------------------------------------------------
def _cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(3 * 3 * 3, 8),
        nn.LayerNorm(8),
        nn.Tanh(),
        nn.Linear(8, 4),
    )


def test_small_cnn_training_steps_match_torch():
    torch.manual_seed(0)
    m_model, t_model = build_both(_cnn)
    x = randn(5, 1, 6, 6)
    y = torch.randint(0, 4, (5,))
    for step in range(3):
        t_loss = torch.nn.functional.cross_entropy(t_model(x), y)
        m_loss = minitorch.nn.functional.cross_entropy(m_model(Tensor(x)), Tensor(y))
        assert_close(m_loss, t_loss, f"loss at step {step}", 1e-6, 1e-8)
        for model, loss, lib in ((t_model, t_loss, torch), (m_model, m_loss, minitorch)):
            model.zero_grad()
            loss.backward()
            with lib.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
    m_params = dict(m_model.named_parameters())
    for name, t_param in t_model.named_parameters():
        assert_close(m_params[name], t_param, f"{name} after training", 1e-6, 1e-8)


def test_torch_autograd_never_runs_inside_the_layers():
    """Every layer here computes on storage only: torch's autograd saves nothing, even while
    minitorch builds a second-order graph, and no storage ends up requiring grad."""
    torch.manual_seed(0)
    model = _cnn(minitorch).double()
    embedding = minitorch.nn.Embedding(3, 4, padding_idx=0).double()
    x = minitorch.randn(2, 1, 6, 6, dtype=DOUBLE, requires_grad=True)
    saved_by_torch = []
    with torch.autograd.graph.saved_tensors_hooks(
        lambda t: saved_by_torch.append(t) or t, lambda t: t
    ):
        logits = model(x) + embedding(minitorch.tensor([1, 2])).sum(1, keepdim=True)
        loss = minitorch.nn.functional.cross_entropy(logits, minitorch.tensor([0, 3]))
        loss = loss + minitorch.nn.functional.binary_cross_entropy_with_logits(
            logits, minitorch.zeros(2, 4, dtype=DOUBLE)
        )
        (grad_x,) = minitorch.autograd.grad(loss, x, create_graph=True)
        grad_x.pow(2).sum().backward()
    assert saved_by_torch == []
    for name, param in [*model.named_parameters(), ("embedding", embedding.weight)]:
        for storage in (param._data, param.grad._data):
            assert not storage.requires_grad and storage.grad_fn is None, name


# -------------------------------------------------------------------------------------------------
# Loss modules
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_modules(reduction):
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(4, 3, generator=gen, dtype=DOUBLE)
    classes = torch.tensor([0, 2, 1, -100])
    weight = torch.tensor([1.0, 2.0, 0.5], dtype=DOUBLE)
    target = torch.rand(4, 3, generator=gen, dtype=DOUBLE)
    cases = [
        (lambda lib: lib.nn.MSELoss(reduction=reduction), target),
        (lambda lib: lib.nn.L1Loss(reduction=reduction), target),
        (lambda lib: lib.nn.CrossEntropyLoss(reduction=reduction), classes),
        (
            lambda lib: lib.nn.CrossEntropyLoss(
                _as(lib, weight), reduction=reduction, label_smoothing=0.2
            ),
            classes,
        ),
        (lambda lib: lib.nn.NLLLoss(_as(lib, weight), reduction=reduction), classes),
        (
            lambda lib: lib.nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=_as(lib, weight)),
            target,
        ),
        (lambda lib: lib.nn.BCEWithLogitsLoss(_as(lib, target), reduction=reduction), target),
    ]
    for make, tgt in cases:
        check_layer(make, logits, tgt)


def _as(lib, value):
    return value.clone() if lib is torch else Tensor(value.clone())


def test_loss_weights_are_buffers_like_torchs():
    weight = torch.tensor([1.0, 2.0])
    m_loss = minitorch.nn.CrossEntropyLoss(Tensor(weight))
    t_loss = torch.nn.CrossEntropyLoss(weight)
    assert list(m_loss.state_dict()) == list(t_loss.state_dict()) == ["weight"]
    m_bce = minitorch.nn.BCEWithLogitsLoss(pos_weight=Tensor(weight))
    assert list(m_bce.state_dict()) == list(
        torch.nn.BCEWithLogitsLoss(pos_weight=weight).state_dict()
    )
    assert minitorch.nn.MSELoss(reduce=False).reduction == "none"
    with pytest.raises(ValueError, match="elementwise is not a valid value for reduction"):
        minitorch.nn.L1Loss(reduction="elementwise")(minitorch.zeros(1), minitorch.zeros(1))


# -------------------------------------------------------------------------------------------------
# init
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("uniform_", dict(a=-0.5, b=2.0)),
        ("normal_", dict(mean=1.0, std=0.5)),
        ("constant_", dict(val=0.3)),
        ("zeros_", {}),
        ("ones_", {}),
        ("xavier_uniform_", dict(gain=2.0)),
        ("xavier_normal_", {}),
        ("kaiming_uniform_", dict(a=math.sqrt(5))),
        ("kaiming_uniform_", dict(mode="fan_out", nonlinearity="relu")),
        ("kaiming_normal_", dict(nonlinearity="relu")),
        ("orthogonal_", dict(gain=1.5)),
    ],
)
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2, 2), (3, 5)])
def test_init_functions_draw_what_torch_draws(name, kwargs, shape):
    t_tensor = torch.empty(shape, dtype=DOUBLE)
    m_tensor = minitorch.empty(shape, dtype=DOUBLE)
    torch.manual_seed(7)
    getattr(torch.nn.init, name)(t_tensor, **kwargs)
    minitorch.manual_seed(7)
    version = m_tensor._version
    assert getattr(minitorch.nn.init, name)(m_tensor, **kwargs) is m_tensor
    assert_close(m_tensor, t_tensor, f"{name}{kwargs}", rtol=1e-6, atol=1e-8)
    assert m_tensor._version == version + 1, "an in-place fill counts as a change"


def test_init_works_on_parameters_that_require_grad_and_is_not_recorded():
    weight = minitorch.nn.Parameter(minitorch.empty(3, 2))
    minitorch.nn.init.xavier_uniform_(weight)
    assert weight.is_leaf and weight.grad_fn is None and weight.requires_grad


@pytest.mark.parametrize(
    "nonlinearity, param",
    [
        ("linear", None),
        ("conv2d", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("selu", None),
    ],
)
def test_calculate_gain(nonlinearity, param):
    expected = torch.nn.init.calculate_gain(nonlinearity, param)
    assert minitorch.nn.init.calculate_gain(nonlinearity, param) == pytest.approx(expected)


def test_init_errors_like_torch():
    with pytest.raises(
        ValueError,
        match="Fan in and fan out can not be computed for tensor with fewer than 2 dimensions",
    ):
        minitorch.nn.init.xavier_uniform_(minitorch.empty(3))
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        minitorch.nn.init.calculate_gain("gelu")


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.nn.Linear(5, 3),
        lambda lib: lib.nn.Conv2d(2, 3, 3),
        lambda lib: lib.nn.Embedding(4, 3, padding_idx=2),
        lambda lib: lib.nn.LayerNorm(3),
    ],
)
def test_default_initialisation_equals_torchs_after_the_same_seed(make):
    torch.manual_seed(11)
    t_layer = make(torch)
    minitorch.manual_seed(11)
    m_layer = make(minitorch)
    m_params = dict(m_layer.named_parameters())
    for name, t_param in t_layer.named_parameters():
        assert_close(m_params[name], t_param, name, rtol=0, atol=0)


# -------------------------------------------------------------------------------------------------
# clip_grad_norm_
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    gen = torch.Generator().manual_seed(3)
    grads = [
        torch.randn(3, 2, generator=gen, dtype=DOUBLE),
        torch.randn(4, generator=gen, dtype=DOUBLE),
    ]
    t_params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    m_params = [minitorch.nn.Parameter(minitorch.zeros(*g.shape, dtype=DOUBLE)) for g in grads]
    for t_p, m_p, g in zip(t_params, m_params, grads):
        t_p.grad = g.clone()
        m_p.grad = Tensor(g.clone())
    m_params.append(minitorch.nn.Parameter(minitorch.zeros(2)))  # no grad: skipped
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type)
    m_total = minitorch.nn.utils.clip_grad_norm_(iter(m_params), max_norm, norm_type)
    assert_close(m_total, t_total, "total norm")
    for i, (m_p, t_p) in enumerate(zip(m_params, t_params)):
        assert_close(m_p.grad, t_p.grad, f"clipped gradient {i}")


def test_clip_grad_norm_on_a_single_tensor_and_nonfinite_error():
    p = minitorch.nn.Parameter(minitorch.zeros(2))
    p.grad = minitorch.tensor([3.0, 4.0])
    total = minitorch.nn.utils.clip_grad_norm_(p, 1.0)
    assert total.item() == pytest.approx(5.0)
    assert p.grad.norm().item() == pytest.approx(1.0, rel=1e-5)
    p.grad = minitorch.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        minitorch.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


# -------------------------------------------------------------------------------------------------
# CUDA (skipped without a device)
# -------------------------------------------------------------------------------------------------
@pytest.mark.cuda
def test_cnn_with_losses_on_cuda_matches_torch_on_cuda():
    torch.manual_seed(0)
    m_model, t_model = build_both(_cnn)
    m_model.to("cuda"), t_model.to("cuda")
    assert all(p.device.type == "cuda" for p in m_model.parameters())
    x = randn(5, 1, 6, 6).cuda()
    y = torch.tensor([0, 3, -100, 2, 1], device="cuda")
    embedding = build_both(lambda lib: lib.nn.Embedding(4, 4, padding_idx=0))
    for model, emb, lib, inputs, target in (
        (m_model, embedding[0], minitorch, Tensor(x), Tensor(y)),
        (t_model, embedding[1], torch, x, y),
    ):
        emb.to("cuda")
        logits = model(inputs) + emb(target.clamp(0, 3)).sum(1, keepdim=True)
        F = lib.nn.functional  # noqa: N806
        loss = F.cross_entropy(logits, target, label_smoothing=0.1) + F.nll_loss(
            logits.log_softmax(1), target
        )
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    m_params = dict(m_model.named_parameters())
    for name, t_param in t_model.named_parameters():
        assert_close(m_params[name].grad, t_param.grad, f"gradient of {name}", 1e-6, 1e-8)
    assert_close(embedding[0].weight.grad, embedding[1].weight.grad, "embedding gradient")
