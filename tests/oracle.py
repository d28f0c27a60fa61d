"""The oracle: run one expression on PyTorch and on minitorch, and compare what comes out.

An op under test is written once, as `fn(lib, *inputs)`, where `lib` is either the `torch` or the
`minitorch` module and `inputs` are float64 leaf tensors of that library that require grad.
Because minitorch mirrors PyTorch's API, `lambda lib, x: lib.tanh(x) * 2` runs on both.

- `check_op` compares forward values, the grad_fn name, and gradients for a random upstream grad.
- `check_gradcheck` runs `minitorch.autograd.gradcheck` (keep inputs tiny: it is O(numel^2)).
- `check_second_order` differentiates the gradients again (`create_graph=True`) in both libraries.

Input values are plain torch float64 tensors made by the "value makers" below from a seeded
generator. Each maker keeps values away from the points where an op is not differentiable.
Hypothesis strategies for shapes, dims and broadcasting pairs are at the bottom.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
from hypothesis import strategies as st

import minitorch
from minitorch import Tensor

DTYPE = torch.float64
RTOL = 1e-7
ATOL = 1e-9

# A maker builds the values of one input: maker(shape, generator) -> torch float64 tensor.
Maker = Callable[[tuple, torch.Generator], torch.Tensor]


# -------------------------------------------------------------------------------------------------
# Value makers
# -------------------------------------------------------------------------------------------------
def _uniform(shape: tuple, gen: torch.Generator, low: float, high: float) -> torch.Tensor:
    return torch.rand(shape, generator=gen, dtype=DTYPE) * (high - low) + low


def _random_sign(shape: tuple, gen: torch.Generator) -> torch.Tensor:
    return torch.randint(0, 2, shape, generator=gen).to(DTYPE) * 2 - 1


def uniform(low: float = -2.0, high: float = 2.0) -> Maker:
    """Any value in [low, high]: for ops that are smooth everywhere."""
    return lambda shape, gen: _uniform(shape, gen, low, high)


def positive(low: float = 0.5, high: float = 2.0) -> Maker:
    """Values in [low, high], low > 0: for log, sqrt, fractional powers, tensor exponents."""
    return lambda shape, gen: _uniform(shape, gen, low, high)


def away_from_zero(low: float = 0.3, high: float = 2.0) -> Maker:
    """Values of either sign with |value| in [low, high]: for abs, relu, division, norm."""
    return lambda shape, gen: _random_sign(shape, gen) * _uniform(shape, gen, low, high)


def away_from(points: Sequence[float], gap: float = 0.1) -> Maker:
    """Uniform values, pushed `gap` away from each of `points` (e.g. clamp's bounds)."""

    def make(shape: tuple, gen: torch.Generator) -> torch.Tensor:
        values = _uniform(shape, gen, -2.0, 2.0)
        for p in points:
            side = torch.where(values >= p, 1.0, -1.0).to(DTYPE)
            values = torch.where((values - p).abs() < gap, p + side * gap, values)
        return values

    return make


def distinct(gap: float = 0.3) -> Maker:
    """Values that differ pairwise by at least `gap`: no ties for max, min, argmax, sort."""

    def make(shape: tuple, gen: torch.Generator) -> torch.Tensor:
        n = math.prod(shape)
        ranks = torch.randperm(n, generator=gen).to(DTYPE) - (n - 1) / 2
        jitter = _uniform((n,), gen, 0.0, gap / 3)
        return (ranks * gap + jitter).reshape(shape)

    return make


def distinct_magnitudes(gap: float = 0.3) -> Maker:
    """Nonzero values whose absolute values differ pairwise by at least `gap` (norm p=inf)."""

    def make(shape: tuple, gen: torch.Generator) -> torch.Tensor:
        n = math.prod(shape)
        magnitudes = (torch.randperm(n, generator=gen).to(DTYPE) + 1) * gap
        magnitudes = magnitudes + _uniform((n,), gen, 0.0, gap / 3)
        return (magnitudes * _random_sign((n,), gen)).reshape(shape)

    return make


def on_grid(offset: float) -> Maker:
    """Values in [k + offset, k + offset + 0.3] for integers k in [-2, 2]. Two inputs made with
    offsets 0 and 0.5 never come closer than 0.2: no ties for maximum/minimum."""

    def make(shape: tuple, gen: torch.Generator) -> torch.Tensor:
        whole = torch.randint(-2, 3, shape, generator=gen).to(DTYPE)
        return whole + offset + _uniform(shape, gen, 0.0, 0.3)

    return make


def make_values(makers: Sequence[Maker], shapes: Sequence[tuple], seed: int) -> list:
    """One value tensor per input, all from a generator seeded with `seed`."""
    gen = torch.Generator().manual_seed(seed)
    return [maker(tuple(shape), gen) for maker, shape in zip(makers, shapes)]


class Case(NamedTuple):
    """One op under test: `fn(lib, *inputs)`, a value maker per input, and the node name
    minitorch gives where it deliberately differs from torch's (None: same as torch)."""

    fn: Callable
    makers: tuple
    node_name: str | None = None


# -------------------------------------------------------------------------------------------------
# Running an expression in both libraries
# -------------------------------------------------------------------------------------------------
def leaves(lib: Any, values: Sequence[torch.Tensor]) -> list:
    """Fresh leaf tensors of `lib` (torch or minitorch) holding copies of `values`."""
    if lib is torch:
        return [v.clone().requires_grad_(True) for v in values]
    return [Tensor(v.clone(), requires_grad=True) for v in values]


def constant(lib: Any, value: torch.Tensor) -> Any:
    """A tensor of `lib` that needs no gradient (an index or a mask), copied from torch."""
    return value.clone() if lib is torch else Tensor(value.clone())


def as_list(out: Any) -> list:
    """An op's result as a list of tensors (split, chunk and max(dim) return several)."""
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def raw(t: Any) -> torch.Tensor | None:
    """The torch data of a minitorch tensor, or a torch tensor detached; None stays None."""
    if t is None:
        return None
    return t._data if isinstance(t, Tensor) else t.detach()


def assert_close(
    actual: Any,
    expected: Any,
    what: str,
    rtol: float = RTOL,
    atol: float = ATOL,
    none_is_zero: bool = False,
) -> None:
    """`actual` (minitorch) equals `expected` (torch) in shape, dtype and value (NaNs match).

    With `none_is_zero`, a missing gradient (None) counts as zeros on either side, because a
    gradient that is identically zero may legitimately be returned as None by one library.
    """
    actual, expected = raw(actual), raw(expected)
    if none_is_zero and (actual is None) != (expected is None):
        if actual is None:
            actual = torch.zeros_like(expected)
        else:
            expected = torch.zeros_like(actual)
    if actual is None or expected is None:
        assert actual is expected, f"{what}: minitorch gives {actual}, torch gives {expected}"
        return
    assert actual.shape == expected.shape, (
        f"{what}: minitorch shape {list(actual.shape)} != torch shape {list(expected.shape)}"
    )
    assert actual.dtype == expected.dtype, (
        f"{what}: minitorch dtype {actual.dtype} != torch dtype {expected.dtype}"
    )
    assert actual.device == expected.device, (
        f"{what}: minitorch device {actual.device} != torch device {expected.device}"
    )
    actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype.is_floating_point:
        same = torch.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        same = torch.equal(actual, expected)
    if not same:
        difference = (actual.to(DTYPE) - expected.to(DTYPE)).abs()
        worst = difference.nan_to_num(nan=math.inf).max().item() if difference.numel() else 0
        raise AssertionError(
            f"{what}: values differ (largest difference {worst:.3g})\n"
            f"minitorch: {actual}\ntorch:     {expected}"
        )


def _differentiable(outs: list) -> list:
    return [o for o in outs if o.requires_grad]


def _node_name(t: Any) -> str | None:
    """The name of t's grad_fn; None when t is a leaf (an op may return its input as is)."""
    return None if t.grad_fn is None else t.grad_fn.name()


def _assert_same_edges(m_node: Any, t_node: Any) -> None:
    """The node has one edge per differentiable input, as torch's has: the same number, and
    None in the same places (inputs that need no grad, such as a number in `x * 2`)."""
    m_edges = ["None" if n is None else "node" for n, _ in m_node.next_functions]
    t_edges = ["None" if n is None else "node" for n, _ in t_node.next_functions]
    assert m_edges == t_edges, (
        f"{m_node.name()}.next_functions: minitorch {m_edges}, torch {t_edges}"
    )


def _upstream(outs: list, gen: torch.Generator) -> list:
    """A random gradient for every output (torch tensors; copied to minitorch as needed)."""
    return [torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device) for o in outs]


def check_op(
    fn: Callable,
    values: Sequence[torch.Tensor],
    seed: int = 0,
    node_name: str | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
    device: str = "cpu",
) -> None:
    """Forward values, grad_fn name and input gradients of `fn` match PyTorch's.

    `node_name`: None to require torch's node name; a string to require that name instead, where
    minitorch's node deliberately differs from torch's (the test says why in a comment).
    `device`: where the inputs live ("cuda" in the tests marked cuda).
    """
    values = [v.to(device) for v in values]
    t_inputs, m_inputs = leaves(torch, values), leaves(minitorch, values)
    t_outs, m_outs = as_list(fn(torch, *t_inputs)), as_list(fn(minitorch, *m_inputs))
    assert len(m_outs) == len(t_outs), (
        f"minitorch returns {len(m_outs)} outputs, torch returns {len(t_outs)}"
    )
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        assert_close(m, t, f"forward output {i}", rtol, atol)
        assert m.requires_grad == t.requires_grad, (
            f"output {i}: minitorch requires_grad={m.requires_grad}, torch {t.requires_grad}"
        )
    t_diff, m_diff = _differentiable(t_outs), _differentiable(m_outs)
    if not t_diff:
        return
    expected_name = node_name or _node_name(t_diff[0])
    actual_name = _node_name(m_diff[0])
    assert actual_name == expected_name, (
        f"grad_fn name: minitorch {actual_name}, expected {expected_name}"
    )
    if node_name is None and actual_name is not None:
        _assert_same_edges(m_diff[0].grad_fn, t_diff[0].grad_fn)

    upstream = _upstream(t_diff, torch.Generator().manual_seed(seed + 1))
    t_grads = torch.autograd.grad(t_diff, t_inputs, upstream, allow_unused=True)
    m_upstream = [Tensor(u.clone()) for u in upstream]
    m_grads = minitorch.autograd.grad(m_diff, m_inputs, m_upstream, allow_unused=True)
    for i, (m, t) in enumerate(zip(m_grads, t_grads)):
        assert_close(m, t, f"gradient of input {i}", rtol, atol, none_is_zero=True)


def check_gradcheck(fn: Callable, values: Sequence[torch.Tensor]) -> None:
    """minitorch's gradcheck (finite differences) accepts fn's backward on these values."""
    total = sum(v.numel() for v in values)
    assert total <= 24, f"gradcheck inputs should be tiny (got {total} elements)"
    inputs = leaves(minitorch, values)

    def cloned_outputs(*xs):
        # Workaround: minitorch's gradcheck keeps the perturbed outputs without copying them, so
        # an output that is a view of an input (reshape, split, x[0]) changes back when the
        # input is restored and its numerical Jacobian comes out as zeros. clone() is an
        # identity for the gradient and gives each output storage of its own.
        return [out.clone() for out in as_list(fn(minitorch, *xs))]

    assert minitorch.autograd.gradcheck(cloned_outputs, inputs)


def _first_and_second(lib: Any, fn: Callable, values: list, upstream: list, weights: list):
    """Gradients of fn (for a given upstream gradient, itself a leaf) and the gradient of
    sum(weight * gradient) with respect to the inputs and the upstream gradient."""
    inputs = leaves(lib, values)
    outs = _differentiable(as_list(fn(lib, *inputs)))
    grad_out = leaves(lib, upstream)
    firsts = lib.autograd.grad(outs, inputs, grad_out, create_graph=True, allow_unused=True)
    weights = [constant(lib, w) for w in weights]
    terms = [(g * w).sum() for g, w in zip(firsts, weights) if g is not None]
    terms = [term for term in terms if term.requires_grad]
    if not terms:
        return firsts, [None] * (len(inputs) + len(grad_out))
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    seconds = lib.autograd.grad(total, inputs + grad_out, allow_unused=True)
    return firsts, seconds


def check_second_order(
    fn: Callable,
    values: Sequence[torch.Tensor],
    seed: int = 0,
    rtol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """Differentiating fn's gradients (made with create_graph=True) gives what torch gives,
    with respect to every input and to the upstream gradient."""
    values = list(values)
    gen = torch.Generator().manual_seed(seed + 2)
    t_outs = _differentiable(as_list(fn(torch, *leaves(torch, values))))
    upstream = _upstream(t_outs, gen)
    weights = [torch.randn(v.shape, generator=gen, dtype=DTYPE) for v in values]
    t_first, t_second = _first_and_second(torch, fn, values, upstream, weights)
    m_first, m_second = _first_and_second(minitorch, fn, values, upstream, weights)
    for i, (m, t) in enumerate(zip(m_first, t_first)):
        assert_close(m, t, f"first derivative, input {i}", rtol, atol, none_is_zero=True)
    names = [f"input {i}" for i in range(len(values))]
    names += [f"upstream gradient {i}" for i in range(len(upstream))]
    for name, m, t in zip(names, m_second, t_second):
        assert_close(m, t, f"second derivative w.r.t. {name}", rtol, atol, none_is_zero=True)


# -------------------------------------------------------------------------------------------------
# Hypothesis strategies
# -------------------------------------------------------------------------------------------------
seeds = st.integers(min_value=0, max_value=2**16)


def shapes(min_rank: int = 0, max_rank: int = 3, min_side: int = 1, max_side: int = 3):
    """Small shapes, 0-d included when min_rank is 0; sides of 1 are common on purpose."""
    side = st.integers(min_value=min_side, max_value=max_side)
    return st.lists(side, min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def broadcast_shapes(draw: Any, max_rank: int = 3) -> tuple[tuple, tuple]:
    """Two shapes that broadcast together: each drops some leading dims of a common shape and
    replaces some of its sides by 1 (so ranks differ, size-1 dims stretch, 0-d appears)."""
    common = draw(shapes(0, max_rank, 1, 3))

    def one_input() -> tuple:
        rank = draw(st.integers(min_value=0, max_value=len(common)))
        tail = common[len(common) - rank :]
        return tuple(1 if draw(st.booleans()) else size for size in tail)

    return one_input(), one_input()


@st.composite
def shape_and_dim(draw: Any, min_rank: int = 1, max_rank: int = 3) -> tuple[tuple, int]:
    """A shape and a dim of it, negative dims included (a 0-d tensor accepts 0 and -1)."""
    shape = draw(shapes(min_rank, max_rank))
    rank = max(len(shape), 1)
    dim = draw(st.integers(min_value=-rank, max_value=rank - 1))
    return shape, dim


@st.composite
def shape_and_dims(draw: Any, max_rank: int = 3) -> tuple[tuple, Any]:
    """A shape and what reductions accept as `dim`: None, one int, or a tuple of distinct dims."""
    shape = draw(shapes(0, max_rank))
    if not shape:
        return shape, None
    choice = draw(st.sampled_from(["none", "int", "tuple"]))
    if choice == "none":
        return shape, None
    if choice == "int":
        return shape, draw(st.integers(min_value=-len(shape), max_value=len(shape) - 1))
    dims = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    # Some dims counted from the end: still distinct dims.
    return shape, tuple(d - len(shape) if draw(st.booleans()) else d for d in dims)
