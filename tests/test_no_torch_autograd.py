"""Proof that torch's autograd never does minitorch's work: torch tensors are only storage.

1. Every storage tensor reachable after a forward and backward (outputs, parameters, gradients,
   every tensor saved by every node) has `requires_grad=False` and no `grad_fn`.
2. Switching torch's own autograd off (`torch.autograd.set_grad_enabled(False)`, anomaly mode
   off) changes nothing in minitorch's results.
3. torch's `saved_tensors_hooks` see nothing saved during a minitorch forward and backward, and
   torch's `backward`/`grad` are never called.
"""

import pytest
import torch

import minitorch


def _model_step(create_graph=False):
    """A small MLP with a cross-entropy-like loss; returns (loss, params, every tensor made)."""
    gen = torch.Generator().manual_seed(0)

    def param(*shape):
        return minitorch.tensor(torch.randn(*shape, generator=gen).tolist(), requires_grad=True)

    w1, b1, w2, b2 = param(4, 8), param(8), param(8, 3), param(3)
    x = minitorch.tensor(torch.randn(5, 4, generator=gen).tolist())
    target = minitorch.tensor([0, 2, 1, 1, 0])
    hidden = (x @ w1 + b1).relu()
    hidden = hidden * hidden.sigmoid() + hidden.tanh() * 0.5
    logits = hidden @ w2 + b2
    log_probs = logits.log_softmax(dim=1)
    picked = log_probs.gather(1, target.unsqueeze(1))
    loss = -picked.mean() + 0.01 * (w1 * w1).sum() + logits.exp().max() * 0.0
    made = [x, target, hidden, logits, log_probs, picked, loss]
    params = [w1, b1, w2, b2]
    loss.backward(retain_graph=True, create_graph=create_graph)
    return loss, params, made


def _nodes(root):
    seen, stack = [], [root]
    while stack:
        node = stack.pop()
        if node is None or any(node is s for s in seen):
            continue
        seen.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return seen


def _storages(loss, params, made):
    """(label, torch tensor) for every storage reachable from the step."""
    found = []
    for i, t in enumerate(made):
        found.append((f"tensor {i}", t._data))
    for i, p in enumerate(params):
        found.append((f"param {i}", p._data))
        found.append((f"param {i} grad", p.grad._data))
        if p.grad.grad_fn is not None:
            found.extend((f"param {i} grad node {n.name()}", s) for n, s in _saved_of(p.grad))
    found.extend((f"saved by {n.name()}", s) for n, s in _saved_of(loss))
    return found


def _saved_of(t):
    result = []
    for node in _nodes(t.grad_fn):
        if isinstance(node, minitorch.autograd.graph.AccumulateGrad):
            result.append((node, node.variable._data))
            continue
        for saved in node.saved_tensors:
            if saved is not None:
                result.append((node, saved._data))
    return result


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
def test_no_storage_is_tracked_by_torch(create_graph):
    loss, params, made = _model_step(create_graph)
    storages = _storages(loss, params, made)
    assert len(storages) > 30, f"the walk found too few tensors: {len(storages)}"
    for label, data in storages:
        assert isinstance(data, torch.Tensor), f"{label}: storage is {type(data).__name__}"
        assert not data.requires_grad, f"{label}: torch storage requires grad"
        assert data.grad_fn is None, f"{label}: torch storage has grad_fn {data.grad_fn}"
        assert data.grad is None, f"{label}: torch storage has a torch .grad"


def _results():
    loss, params, _ = _model_step()
    return [loss._data.clone()] + [p.grad._data.clone() for p in params]


def test_results_do_not_depend_on_torch_autograd():
    reference = _results()
    with torch.autograd.set_grad_enabled(False):
        without_grad = _results()
    with torch.autograd.set_detect_anomaly(False):
        without_anomaly = _results()
    with torch.no_grad(), torch.autograd.set_detect_anomaly(False):
        neither = _results()
    for name, run in [
        ("no grad", without_grad),
        ("no anomaly", without_anomaly),
        ("neither", neither),
    ]:
        for i, (a, b) in enumerate(zip(reference, run)):
            assert torch.equal(a, b), f"{name}: result {i} changed: {a} != {b}"
    assert torch.is_grad_enabled(), "minitorch must leave torch's grad mode alone"


def test_torch_saves_nothing_during_a_minitorch_step():
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        # the hooks work: a torch computation that records is seen
        probe = torch.ones(2, requires_grad=True)
        (probe * probe).sum()
        assert packed, "torch's saved_tensors_hooks did not fire for torch itself"
        packed.clear()
        _model_step()
        _model_step(create_graph=True)
    assert packed == [], f"torch saved tensors of shapes {packed} during a minitorch step"


def test_torch_backward_is_never_called(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("torch autograd was called by minitorch")

    monkeypatch.setattr(torch.Tensor, "backward", forbidden)
    monkeypatch.setattr(torch.autograd, "backward", forbidden)
    monkeypatch.setattr(torch.autograd, "grad", forbidden)
    loss, params, _ = _model_step()
    (g,) = minitorch.autograd.grad(loss, params[0])
    assert g.shape == (4, 8)
