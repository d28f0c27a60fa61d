"""utils.checkpoint: recomputing in backward gives identical gradients and keeps fewer bytes.

Oracles: the same program without checkpointing (gradients must be bit-for-bit equal, dropout
included, since the random generator is put back for the recomputation), and PyTorch's own
torch.utils.checkpoint on the same float64 program.
"""

from __future__ import annotations

import contextlib
import gc
import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import memory
from minitorch.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

F32 = 4


def make_layers(lib, depth: int, width: int, dropout: float = 0.0, seed: int = 0):
    """`depth` layers x -> dropout(relu(x @ w.t() + b)), parameters shared by both libraries'
    versions through the same seeded values. The dropout mask comes from the global generator."""
    gen = torch.Generator().manual_seed(seed)
    params = []
    for _ in range(depth):
        w = torch.randn(width, width, generator=gen, dtype=torch.float64) / width**0.5
        b = torch.randn(width, generator=gen, dtype=torch.float64) * 0.1
        params.append(
            (
                lib.tensor(w.tolist(), dtype=torch.float64, requires_grad=True),
                lib.tensor(b.tolist(), dtype=torch.float64, requires_grad=True),
            )
        )

    def layer(w, b):
        def forward(h):
            h = (h @ w.t() + b).tanh()
            if dropout:
                keep = (lib.rand_like(h) > dropout).to(h.dtype)
                h = h * keep / (1 - dropout)
            return h

        return forward

    return [layer(w, b) for w, b in params], [t for pair in params for t in pair]


def grads_of(params):
    grads = [p.grad.tolist() for p in params]
    for p in params:
        p.grad = None
    return grads


@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 5), st.booleans())
def test_checkpoint_sequential_gradients_equal_plain(depth, segments, width, dropout):
    segments = min(segments, depth)
    layers, params = make_layers(minitorch, depth, width, 0.3 if dropout else 0.0)
    x = minitorch.randn(3, width, dtype=torch.float64, requires_grad=True)

    minitorch.manual_seed(7)
    h = x
    for layer in layers:
        h = layer(h)
    h.sum().backward()
    expected = grads_of(params + [x])
    after_plain = torch.rand(1)

    minitorch.manual_seed(7)
    out = checkpoint_sequential(layers, segments, x, use_reentrant=False)
    out.sum().backward()
    assert grads_of(params + [x]) == expected
    assert torch.rand(1).equal(after_plain), "the recomputation must not consume random numbers"


@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_checkpoint_matches_pytorch_checkpoint(dropout):
    results = {}
    for lib in (torch, minitorch):
        layers, params = make_layers(lib, 4, 6, dropout)
        checkpoint_fn = torch.utils.checkpoint.checkpoint if lib is torch else checkpoint
        x = lib.tensor(torch.linspace(-1, 1, 12).reshape(2, 6).tolist(), dtype=torch.float64)
        x.requires_grad_()
        torch.manual_seed(3)
        first, second = layers[0], layers[1]
        h = checkpoint_fn(lambda v, f=first, g=second: g(f(v)), x, use_reentrant=False)
        h = checkpoint_fn(layers[2], h, use_reentrant=False)
        loss = layers[3](h).pow(2).sum()
        loss.backward()
        results[lib] = grads_of(params + [x])
    for ours, theirs in zip(results[minitorch], results[torch]):
        torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs), rtol=1e-12, atol=1e-12)


def test_rng_state_matters():
    """Without preserve_rng_state the recomputed dropout masks differ: gradients change."""
    layers, params = make_layers(minitorch, 2, 8, dropout=0.5)
    x = minitorch.randn(4, 8, dtype=torch.float64)
    block = lambda v: layers[1](layers[0](v))  # noqa: E731
    results = []
    for preserve in (True, False):
        minitorch.manual_seed(0)
        checkpoint(block, x, use_reentrant=False, preserve_rng_state=preserve).sum().backward()
        results.append(grads_of(params))
    minitorch.manual_seed(0)
    block(x).sum().backward()
    assert results[0] == grads_of(params)
    assert results[1] != results[0]


def test_function_runs_again_once_in_backward_and_keeps_nothing():
    calls = []
    w = minitorch.randn(20, dtype=torch.float64, requires_grad=True)

    def block(v):
        calls.append(1)
        return (v * w).exp().sin()

    x = minitorch.randn(20, dtype=torch.float64)
    out = checkpoint(block, x, use_reentrant=False)
    assert len(calls) == 1
    # Only x (the block's input, kept for the recomputation) is alive through saved tensors.
    assert memory.saved_bytes(out) == 20 * 8
    out.sum().backward()
    assert len(calls) == 2
    assert w.grad.tolist() == pytest.approx(
        (x * (x * w).exp().cos() * (x * w).exp()).tolist(), rel=1e-12
    )


def test_works_with_autograd_grad_retain_graph_and_inputs_without_grad():
    w = minitorch.randn(5, dtype=torch.float64, requires_grad=True)
    x = minitorch.randn(5, dtype=torch.float64)
    out = checkpoint(lambda v: (v * w).tanh(), x, use_reentrant=False).sum()
    (first,) = minitorch.autograd.grad(out, w, retain_graph=True)
    (second,) = minitorch.autograd.grad(out, w)
    expected = x * (1 - (x * w).tanh() ** 2)
    assert first.tolist() == pytest.approx(expected.tolist(), rel=1e-12)
    assert second.tolist() == first.tolist()


def test_a_block_that_changes_between_runs_raises():
    state = {"n": 3}

    def block(v):
        out = v[: state["n"]].exp()
        state["n"] -= 1
        return out.sum()

    x = minitorch.randn(4, requires_grad=True)
    out = checkpoint(block, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata than during the forward pass"):
        out.backward()


def test_use_reentrant_must_be_passed_like_in_pytorch():
    x = minitorch.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda v: v.exp(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda v: v.exp(), x, use_reentrant=True).sum().backward()
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential([lambda v: v], 2, x, use_reentrant=False)


def test_checkpoint_sequential_keeps_fewer_bytes_and_a_lower_peak():
    """16 layers of (256, 32) float32 activations, 4 segments: the graph keeps 3 segment inputs
    plus the last segment's 4 layers, instead of all 16 layers."""
    depth, batch, width = 16, 256, 32
    gen = torch.Generator().manual_seed(0)
    params = []
    for _ in range(depth):
        w = minitorch.tensor((torch.randn(width, width, generator=gen) / 6).tolist())
        params.append(w.requires_grad_())
    layers = [(lambda h, w=w: (h @ w.t()).relu()) for w in params]
    x = minitorch.randn(batch, width)
    activation = batch * width * F32

    def run(segments):
        gc.collect()
        with memory.track() as mem:
            if segments == 1:
                h = x
                for layer in layers:
                    h = layer(h)
            else:
                h = checkpoint_sequential(layers, segments, x, use_reentrant=False)
            loss = h.sum()
            del h
            saved = memory.saved_bytes(loss)
            loss.backward()
            del loss
        for p in params:
            p.grad = None
        return saved, mem.peak_bytes - mem.start_bytes

    plain_saved, plain_peak = run(1)
    ckpt_saved, ckpt_peak = run(4)
    # plain: Mm saves each layer's input and Relu its result, which is the next layer's input:
    # x and 16 relu results
    assert plain_saved == (1 + depth) * activation
    # checkpointed: x, the inputs of segments 2, 3 and 4, and the 4 relu results of the last
    # segment: (segments - 1) + depth / segments activations besides x
    assert ckpt_saved == (1 + 3 + 4) * activation
    # peaks (measured: about 18 activations plain, 10 checkpointed) include backward's
    # temporaries and the gradients, so the gain is smaller than for the saved bytes
    assert ckpt_peak < 0.6 * plain_peak


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_context_fn_wraps_the_forward_and_the_recomputation(lib):
    events = []

    @contextlib.contextmanager
    def mark(name):
        events.append(name)
        yield

    checkpoint_fn = torch.utils.checkpoint.checkpoint if lib is torch else checkpoint
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    out = checkpoint_fn(
        lambda v: v.exp(),
        x,
        use_reentrant=False,
        context_fn=lambda: (mark("forward"), mark("recompute")),
    )
    assert events == ["forward"]
    out.sum().backward()
    assert events == ["forward", "recompute"]
    assert x.grad.tolist() == x.detach().exp().tolist()


def test_second_derivatives_through_a_checkpoint_equal_plain():
    w = minitorch.tensor([0.3, -0.7, 1.1], dtype=torch.float64, requires_grad=True)
    x = minitorch.tensor([0.5, 1.5, -2.0], dtype=torch.float64, requires_grad=True)

    def block(v):
        return (v * w).tanh() * v.exp()

    results = []
    for use_checkpoint in (False, True):
        out = checkpoint(block, x, use_reentrant=False) if use_checkpoint else block(x)
        gw, gx = minitorch.autograd.grad(out.sum(), (w, x), create_graph=True)
        results.append([g.tolist() for g in minitorch.autograd.grad((gw * gx).sum(), (w, x))])
    for ours, plain in zip(results[1], results[0]):
        assert ours == pytest.approx(plain, rel=1e-12)
