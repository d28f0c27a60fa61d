"""minitorch.autobatch on per-sample code as people write it (issue 35): inputs made per sample
(`tensor`, `zeros`, `ones`, `full`), a number per sample (`pred - target_value`), losses added
up with `total = total + loss` or Python's `sum()`, `stack(losses).sum()`, the loss after the
block. Each pattern must give eager per-sample minitorch's loss and gradients (float64, 1e-10)
and must batch: a few calls, not one per sample. benchmarks/bench_autobatch.py times them.
"""

from __future__ import annotations

import pytest
import torch

import minitorch
from minitorch import autobatch
from minitorch.datasets import make_expression_trees

HIDDEN = 8
SAMPLES = 12


@pytest.fixture(autouse=True)
def float64():
    """Tensors made from Python numbers are float64 here, so results agree to 1e-10."""
    previous = minitorch.get_default_dtype()
    minitorch.set_default_dtype(minitorch.float64)
    yield
    minitorch.set_default_dtype(previous)


def close(mine: minitorch.Tensor, expected: minitorch.Tensor) -> None:
    torch.testing.assert_close(mine._data, expected._data, rtol=1e-10, atol=1e-10)


class TreeRNN(minitorch.nn.Module):
    """bench_autobatch.py's Tree-RNN: a leaf's input made per sample, a Linear per operator."""

    def __init__(self) -> None:
        super().__init__()
        self.leaf = minitorch.nn.Linear(1, HIDDEN)
        self.node = minitorch.nn.ModuleDict(
            {op: minitorch.nn.Linear(2 * HIDDEN, HIDDEN) for op in "+-*"}
        )
        self.head = minitorch.nn.Linear(HIDDEN, 1)

    def encode(self, tree) -> minitorch.Tensor:
        if tree.is_leaf:
            return self.leaf(minitorch.tensor([[tree.value]])).tanh()
        children = minitorch.cat([self.encode(tree.left), self.encode(tree.right)], 1)
        return self.node[tree.op](children).tanh()

    def loss(self, tree, value: float) -> minitorch.Tensor:
        return ((self.head(self.encode(tree)) - value) ** 2).sum()


def _loss_after_block(model, trees, values, block):
    with block():
        predictions = [model.head(model.encode(tree)) for tree in trees]
    total = ((predictions[0] - values[0]) ** 2).sum()
    for prediction, value in zip(predictions[1:], values[1:]):
        total = total + ((prediction - value) ** 2).sum()
    return total


def _chain_in_block(model, trees, values, block):
    with block():
        total = 0
        for tree, value in zip(trees, values):
            total = total + model.loss(tree, value)
    return total


def _stacked_list(model, trees, values, block):
    with block():
        losses = [model.loss(tree, value) for tree, value in zip(trees, values)]
        total = minitorch.stack(losses).sum()
    return total


def _python_sum(model, trees, values, block):
    with block():
        total = sum(model.loss(tree, value) for tree, value in zip(trees, values))
    return total


def _cat_one_loss(model, trees, values, block):
    with block():
        roots = minitorch.cat([model.encode(tree) for tree in trees])
        total = minitorch.nn.functional.mse_loss(
            model.head(roots), minitorch.tensor(values)[:, None]
        )
    return total


PATTERNS = {
    "loss after the block": _loss_after_block,
    "total = total + loss": _chain_in_block,
    "stack(losses).sum()": _stacked_list,
    "sum(losses)": _python_sum,
    "cat, one loss": _cat_one_loss,
}


class _Eager:
    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return None


def _loss_and_grads(model, pattern, trees, values, batched):
    model.zero_grad()
    loss = pattern(model, trees, values, autobatch.batch if batched else _Eager)
    loss.backward()
    return loss, [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("name", PATTERNS)
def test_tree_patterns_give_eager_losses_and_gradients_in_few_calls(name):
    minitorch.manual_seed(0)
    model = TreeRNN()
    trees, targets = make_expression_trees(SAMPLES, seed=1)
    values = targets.tolist()
    expected, expected_grads = _loss_and_grads(model, PATTERNS[name], trees, values, False)
    loss, grads = _loss_and_grads(model, PATTERNS[name], trees, values, True)
    close(loss, expected)
    for mine, theirs in zip(grads, expected_grads, strict=True):
        close(mine, theirs)
    stats = autobatch.stats()
    assert stats.forced_flushes == 0 and stats.ran_alone <= 5, str(stats)  # cat, mse_loss ...
    assert stats.batched_ops + stats.ran_alone == stats.ops_recorded  # a chain's adds count
    # Trees of depth <= 4: each level is a few calls, whatever the number of samples.
    assert stats.calls <= 30, f"{name}: {stats.calls} calls for {SAMPLES} trees\n{stats}"


def test_elman_cells_with_inputs_made_per_step_and_a_loss_per_sample():
    minitorch.manual_seed(0)
    cell_in, cell_h = minitorch.nn.Linear(3, HIDDEN), minitorch.nn.Linear(HIDDEN, HIDDEN)
    head = minitorch.nn.Linear(HIDDEN, 1)
    parameters = [*cell_in.parameters(), *cell_h.parameters(), *head.parameters()]
    lengths = [3, 5, 2, 5, 4, 1]
    rows = [[[0.1 * i + 0.01 * t, -0.2 * t, 0.5] for t in range(n)] for i, n in enumerate(lengths)]
    labels = [float(i % 2) for i in range(len(lengths))]

    def total_loss():
        total = 0
        for sample, label in zip(rows, labels):
            h = minitorch.zeros(1, HIDDEN)
            for row in sample:
                h = (cell_in(minitorch.tensor([row])) + cell_h(h)).tanh()
            total = total + ((head(h) - label) ** 2).sum()
        return total

    results = []
    for batched in (False, True):
        for p in parameters:
            p.grad = None
        if batched:
            with autobatch.batch():
                loss = total_loss()
        else:
            loss = total_loss()
        loss.backward()
        results.append((loss, [p.grad.clone() for p in parameters]))
    (expected, expected_grads), (loss, grads) = results
    close(loss, expected)
    for mine, theirs in zip(grads, expected_grads, strict=True):
        close(mine, theirs)
    stats = autobatch.stats()
    # 5 steps at most: per step a hidden Linear, an add and a tanh run once for all samples
    # (plus the creations, the input Linear, the head, the loss and one sum).
    assert stats.calls <= 3 * max(lengths) + 12, str(stats)


@pytest.mark.parametrize(
    "make",
    [
        lambda i: minitorch.tensor([[0.5 * i, 1.0]]),
        lambda i: minitorch.tensor(float(i) / 3),
        lambda i: minitorch.zeros(2, 3),
        lambda i: minitorch.ones((2, 3), dtype=minitorch.float32),
        lambda i: minitorch.full((2,), 0.25 * i),
        lambda i: minitorch.full((2,), 7, dtype=minitorch.float64),
    ],
    ids=["tensor", "tensor-0d", "zeros", "ones-float32", "full-per-sample", "full-int-value"],
)
def test_creations_of_every_sample_are_one_call(make):
    with autobatch.batch():
        made = [make(i) for i in range(5)]
        doubled = [m * 2 for m in made]
    stats = autobatch.stats()
    assert stats.calls == 2, str(stats)  # one creation for all samples, one multiply
    for i, (m, d) in enumerate(zip(made, doubled)):
        expected = make(i)
        assert m.dtype == expected.dtype and m.shape == expected.shape
        assert not m.requires_grad and m.grad_fn is None
        torch.testing.assert_close(m._data, expected._data)
        torch.testing.assert_close(d._data, expected._data * 2)


def test_creations_that_cannot_wait_are_made_at_once():
    """Integer data (indices, targets that ops read as storage) and a leaf that requires grad
    are made eagerly, as before; data holding a pending tensor waits for it (a flush)."""
    with autobatch.batch():
        index = minitorch.tensor([0, 2])
        leaf = minitorch.tensor([1.5], requires_grad=True)
        picked = minitorch.arange(4.0)[index]
    stats = autobatch.stats()
    assert stats.ops_recorded == 1 and stats.forced_flushes == 0, str(stats)  # the indexing
    assert leaf.requires_grad and leaf.is_leaf and picked.tolist() == [0.0, 2.0]
    with autobatch.batch():
        nested = minitorch.tensor([minitorch.tensor(1.5), minitorch.tensor(2.0)])
    assert nested.tolist() == [1.5, 2.0] and autobatch.stats().forced_flushes == 1


def test_a_number_per_sample_batches():
    xs = [minitorch.randn(4) for _ in range(6)]
    values = [0.1 * i for i in range(6)]
    with autobatch.batch():
        out = [(x - v) * (v + 1) for x, v in zip(xs, values)]
        flipped = [v - x for x, v in zip(xs, values)]
    assert autobatch.stats().calls == 3, str(autobatch.stats())  # -, *, rsub: once each
    for x, v, o, f in zip(xs, values, out, flipped):
        assert torch.equal(o._data, ((x - v) * (v + 1))._data)  # bit for bit
        assert torch.equal(f._data, (v - x)._data)


def test_an_add_chain_is_one_sum_unless_its_totals_are_kept():
    w = minitorch.randn(3, requires_grad=True)
    xs = [minitorch.randn(3) for _ in range(8)]

    def losses():
        return [(w * x).tanh().sum() for x in xs]

    expected = sum(losses())
    (expected_grad,) = minitorch.autograd.grad(expected, [w])
    with autobatch.batch():
        total = sum(losses())
    stats = autobatch.stats()
    assert stats.calls == 4 and stats.ran_alone == 0, str(stats)  # mul, tanh, sum, the chain
    close(total, expected)
    (grad,) = minitorch.autograd.grad(total, [w])
    close(grad, expected_grad)

    with autobatch.batch():  # every running total kept: the chain is read, so it stays
        totals = [minitorch.zeros(())]
        for loss in losses():
            totals.append(totals[-1] + loss)
    assert autobatch.stats().ran_alone == 1 + 8  # zeros(()), then each add
    running = 0
    for loss, kept in zip(losses(), totals[1:]):
        running = running + loss
        close(kept, running)


def test_requires_grad_on_a_tensor_made_in_the_block_makes_a_leaf_as_eagerly():
    w = minitorch.randn(3)
    with autobatch.batch():
        hs = [minitorch.zeros(3).requires_grad_() for _ in range(2)]
        total = sum((h * w).sum() for h in hs)
    total.backward()
    for h in hs:
        assert h.is_leaf and h.requires_grad
        close(h.grad, w)
