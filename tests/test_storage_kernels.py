"""Every storage kernel (NOTE [Storage kernels] in minitorch/autograd/function.py) against the
op's own forward and backward: a replay of each op gives the eager outputs and gradients bit
for bit, with broadcasting, number operands, views and the shapes each op special-cases."""

from __future__ import annotations

import pytest
import torch

import minitorch
import minitorch.jit
from minitorch.autograd.function import Function, storage_kernel
from minitorch.nn import functional as F
from minitorch.ops.rnn import gru_step, lstm_cell, lstm_step

DTYPE = torch.float64


def _index(values: list[int]) -> minitorch.Tensor:
    return minitorch.tensor(values)


def randn(*shape: int, gen: torch.Generator) -> minitorch.Tensor:
    values = torch.randn(shape, generator=gen, dtype=DTYPE)
    return minitorch.as_tensor(values).requires_grad_()


# (name, function, shapes of its tensor arguments)
CASES = [
    ("add broadcast", lambda x, y: x + y, [(3, 4), (4,)]),
    ("add number", lambda x: x + 0.5, [(3,)]),
    ("number add", lambda x: 2 + x, [(3,)]),
    ("sub broadcast", lambda x, y: x - y, [(3, 4), (3, 1)]),
    ("sub number", lambda x: x - 1.5, [(3,)]),
    ("rsub", lambda x: 1.5 - x, [(3,)]),
    ("mul broadcast", lambda x, y: x * y, [(2, 3, 4), (3, 1)]),
    ("mul number", lambda x: x * 2.5, [(3,)]),
    ("number mul", lambda x: 3 * x, [(3,)]),
    ("mul zero", lambda x: x * 0, [(3,)]),
    ("div broadcast", lambda x, y: x / (y.abs() + 1), [(3, 4), (4,)]),
    ("div number", lambda x: x / 1.5, [(3,)]),
    ("number div", lambda x: 2 / (x.abs() + 1), [(3,)]),
    ("square", lambda x: x**2, [(3,)]),
    ("cube", lambda x: x**3, [(3,)]),
    ("pow zero", lambda x: x**0, [(3,)]),
    ("pow half", lambda x: (x.abs() + 1) ** 0.5, [(3,)]),
    ("neg", lambda x: -x, [(3,)]),
    ("exp", lambda x: x.exp(), [(3,)]),
    ("log", lambda x: (x.abs() + 1).log(), [(3,)]),
    ("sqrt", lambda x: (x.abs() + 1).sqrt(), [(3,)]),
    ("sin cos", lambda x: x.sin() + x.cos(), [(3,)]),
    ("tanh sigmoid", lambda x: x.tanh() * x.sigmoid(), [(3,)]),
    ("relu abs", lambda x: x.relu() + x.abs(), [(5,)]),
    ("sum", lambda x: x.sum(), [(3, 4)]),
    ("sum dim", lambda x: x.sum(1), [(3, 4)]),
    ("sum dims keepdim", lambda x: x.sum((0, 2), keepdim=True), [(2, 3, 4)]),
    ("sum 0-d", lambda x: (x.sum() * 2).sum(), [(3,)]),
    ("mean", lambda x: x.mean(), [(3, 4)]),
    ("mean dim", lambda x: x.mean(-1, keepdim=True), [(3, 4)]),
    ("mm", lambda x, y: x @ y, [(3, 4), (4, 5)]),
    ("mm transposed", lambda x, w: x @ w.t(), [(3, 4), (5, 4)]),
    ("dot", lambda x, y: x @ y, [(4,), (4,)]),
    ("mv", lambda x, y: x @ y, [(3, 4), (4,)]),
    ("vm batched", lambda x, y: x @ y, [(4,), (2, 4, 5)]),
    ("matmul broadcast", lambda x, y: x @ y, [(2, 3, 4), (4, 5)]),
    ("matmul batched", lambda x, y: x @ y, [(2, 3, 4), (2, 4, 5)]),
    ("linear", lambda x, w, b: F.linear(x, w, b), [(5, 3), (4, 3), (4,)]),
    ("linear 3-d", lambda x, w, b: F.linear(x, w, b), [(2, 5, 3), (4, 3), (4,)]),
    ("linear no bias", lambda x, w: F.linear(x, w), [(5, 3), (4, 3)]),
    ("t transpose", lambda x: x.t() * x.transpose(0, 1), [(3, 4)]),
    ("reshape view", lambda x: x.reshape(4, 3) * x.view(12).view(4, 3), [(3, 4)]),
    ("unsqueeze squeeze", lambda x: x.unsqueeze(1).squeeze() + x.squeeze(1), [(3, 1)]),
    ("index", lambda x: x[1] * x[:, 1:3].sum() + x[None].sum() + x[..., 0].sum(), [(3, 4)]),
    ("index tensor", lambda x: x[_index([2, 0, 2])] + x[_index([1]), 0], [(3, 4)]),
    ("cat", lambda x, y: minitorch.cat([x, y], 1).sum(0), [(3, 2), (3, 4)]),
    ("stack", lambda x, y: minitorch.stack([x, y], 1), [(3, 2), (3, 2)]),
    ("lstm step", lstm_step, [(3, 8), (3, 2), (3, 2), (8, 2)]),
    ("lstm step shrinking", lstm_step, [(2, 8), (3, 2), (3, 2), (8, 2)]),
    ("lstm cell", lstm_cell, [(3, 5), (3, 2), (3, 2), (8, 5), (8, 2), (8,), (8,)]),
    ("lstm cell no bias", lambda x, h, c, w_ih, w_hh: lstm_cell(x, h, c, w_ih, w_hh, None, None),
     [(3, 5), (3, 2), (3, 2), (8, 5), (8, 2)]),
    ("gru step", gru_step, [(2, 6), (3, 2), (6, 2), (6,)]),
    ("gru step no bias", lambda g, h, w: gru_step(g, h, w, None), [(3, 6), (3, 2), (6, 2)]),
    ("mse loss", lambda x, y: F.mse_loss(x, y), [(3, 4), (3, 4)]),
    ("mse loss none", lambda x, y: F.mse_loss(x, y, reduction="none"), [(3, 4), (3, 4)]),
    ("smooth l1 loss", lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [(3, 4), (3, 4)]),
    ("huber loss sum", lambda x, y: F.huber_loss(x, y, "sum", delta=0.7), [(3, 4), (3, 4)]),
    ("bce", lambda x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid()), [(3, 4), (3, 4)]),
    ("nll loss", lambda x: F.nll_loss(x.log_softmax(1), _index([0, 2, -100])), [(3, 4)]),
    ("nll loss 3-d", lambda x: F.nll_loss(x, _index([[0, 2], [1, 1]]), None, None, 1), [(2, 3, 2)]),
    ("smoothing", lambda x: F.cross_entropy(x, _index([0, 3]), label_smoothing=0.1), [(2, 4)]),
    ("layer norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
    ("layer norm 3-d", lambda x: F.layer_norm(x, (3, 4)), [(2, 3, 4)]),
]  # fmt: skip


def outputs_and_grads(fn, args) -> list[torch.Tensor]:
    for a in args:
        a.grad = None
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    sum((o * (k + 1)).sum() for k, o in enumerate(outs)).backward()
    return [o._data for o in outs] + [a.grad._data for a in args]


@pytest.mark.parametrize("fn, shapes", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_replay_with_storage_kernels_equals_eager_bit_for_bit(fn, shapes):
    gen = torch.Generator().manual_seed(0)
    traced = minitorch.jit.trace(fn)
    for call in range(5):
        args = [randn(*shape, gen=gen) for shape in shapes]
        replayed = outputs_and_grads(traced, args)
        assert traced.state == ("capture" if call == 0 else "replay")
        eager = outputs_and_grads(fn, args)
        for r, e in zip(replayed, eager, strict=True):
            assert r.shape == e.shape and r.dtype == e.dtype
            assert torch.equal(r, e), (r - e).abs().max()


def test_every_storage_kernel_is_checked_above():
    owners = set()
    for _, fn, shapes in CASES:
        gen = torch.Generator().manual_seed(0)
        program, _ = minitorch.autograd.record.record_call(
            fn, *(randn(*s, gen=gen) for s in shapes)
        )
        owners |= {_kernel_owner(op.function) for op in program.ops}
    assert _all_kernel_owners() <= owners, _all_kernel_owners() - owners


def test_a_subclass_that_changes_forward_loses_the_kernel():
    class Doubled(minitorch.ops.elementwise.Exp):
        @staticmethod
        def forward(ctx, a):
            return minitorch.Tensor._make(a._data.exp() * 2)

    assert storage_kernel(minitorch.ops.elementwise.Exp) is not None
    assert storage_kernel(minitorch.ops.elementwise.Neg) is not None
    assert storage_kernel(Doubled) is None
    assert storage_kernel(minitorch.ops.elementwise.Clamp) is None  # replayed the general way


def _kernel_owner(function: type[Function]) -> type[Function] | None:
    if storage_kernel(function) is None:
        return None
    return next(c for c in function.__mro__ if "on_storage" in c.__dict__)


def _all_kernel_owners() -> set[type[Function]]:
    found, todo = set(), [Function]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__dict__.get("on_storage") is not None and cls.__module__.startswith("minitorch"):
            found.add(cls)
    return found
