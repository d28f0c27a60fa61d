"""Signatures: what must be equal for two lazy ops to run as one batched op.

A signature is a tuple: the op class, the grad mode (grad_enabled, inference), and one entry
per argument (roles: NOTE [Autobatch] in lazy.py):
- a shared tensor: `(id(tensor), version)`, so only ops on the very same weight, unchanged,
  batch together;
- a per-sample tensor (a pending result, or data): `(shape, dtype)`;
- a raw storage (embedding indices): `(shape, dtype, "raw")`;
- anything else (a number, a dim, a dtype): the value with its type (`x * 2` and `x * 2.0` may
  give different dtypes), or a fresh object if it cannot be hashed (the op then runs alone).

The recorder builds the tuple for every op and looks it up; the first op with a new signature
gets an `OpKind`, made by `describe`: the batching rule that accepts its arguments (rules.py) or
the reason why none does, and the output shapes, found by running the op's forward once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from minitorch.autobatch.lazy import CONST, RAW, VALUES, template_for
from minitorch.autobatch.rules import Rule, rule_for
from minitorch.autograd import grad_mode
from minitorch.tensor import Tensor


class ArgInfo(NamedTuple):
    """One argument of a lazy op, as the batching rules see it."""

    role: str  # SHARED, SAMPLE, RAW or CONST
    shape: tuple = ()
    dtype: torch.dtype | None = None
    value: Any = None  # CONST: the value itself


class OutputMeta(NamedTuple):
    """One output of an op kind: its per-sample shape and dtype, and the placeholder template."""

    shape: torch.Size
    dtype: torch.dtype
    differentiable: bool
    template: torch.Tensor
    key: tuple  # (shape, dtype): the signature entry of an argument that is this output


@dataclass
class OpKind:
    """Everything known about the lazy ops of one signature."""

    index: int  # small integer naming the signature (what the schedulers compare)
    name: str  # the op class, for messages and stats
    rule: Rule | None  # how to run a batch of them; None: each runs alone
    reason: str | None  # why there is no rule (shown by stats)
    args: tuple[ArgInfo, ...]
    outputs: tuple[OutputMeta, ...]
    returns_tuple: bool
    matmul_like: bool


class ShapeUnknown(Exception):
    """The op's output shape could not be found without running it (it depends on values)."""


class _Unhashable:
    """A signature entry equal to nothing else: an op with such an argument runs alone."""

    __slots__ = ()


def const_key(value: Any) -> Any:
    """The signature entry of a non-tensor argument."""
    kind = type(value)
    if kind is int or kind is float or kind is bool:
        return (kind, value)
    if value is None or kind is str or kind is torch.dtype or kind is torch.Size:
        return value
    if kind is tuple or kind is list:
        return (kind, tuple(const_key(v) for v in value))
    if kind is slice:
        return (slice, const_key(value.start), const_key(value.stop), const_key(value.step))
    if isinstance(value, (Tensor, torch.Tensor)):
        return (id(value),)  # a tensor inside a container (an index): by identity
    try:
        hash(value)
    except TypeError:
        return _Unhashable()
    return (kind, value)


_PYTHON = (CONST, VALUES)  # arguments that are Python values, passed to a probe as they are


def creation_kind(index: int, name: str, function: type, infos: tuple[ArgInfo, ...],
                  shape: tuple, dtype: torch.dtype, device: Any) -> OpKind:  # fmt: skip
    """The `OpKind` of a lazy creation (`FromData` or `Filled`, rules.py) by the factory `name`
    of one output shape, dtype and device: no probe is needed to know what it makes."""
    size = torch.Size(shape)
    template = template_for(size, dtype, device)
    return OpKind(
        index=index,
        name=name,
        rule=rule_for(function),
        reason=None,
        args=infos,
        outputs=(OutputMeta(size, dtype, False, template, (size, dtype)),),
        returns_tuple=False,
        matmul_like=False,
    )


# Output shapes, by op and argument shapes: they never change, so they are kept across blocks.
_output_shapes: dict[tuple, tuple] = {}


def describe(index: int, function: type, args: tuple, infos: tuple[ArgInfo, ...]) -> OpKind:
    """The `OpKind` of a new signature. Raises `ShapeUnknown` if the output shapes cannot be
    found without running the op."""
    name = function.__name__
    rule = rule_for(function)
    reason = "no batching rule" if rule is None else rule.check(function, infos)
    outputs, returns_tuple = _output_meta(function, args, infos, values_matter=reason is not None)
    return OpKind(
        index=index,
        name=name,
        rule=rule if reason is None else None,
        reason=reason,
        args=infos,
        outputs=outputs,
        returns_tuple=returns_tuple,
        matmul_like=rule is not None and rule.matmul_like,
    )


def _output_meta(function: type, args: tuple, infos: tuple[ArgInfo, ...],
                 values_matter: bool) -> tuple:  # fmt: skip
    key = (function, values_matter,
           *(const_key(i.value) if i.role in _PYTHON else i for i in infos))  # fmt: skip
    try:
        shapes = _output_shapes.get(key)
    except TypeError:  # an unhashable constant
        shapes, key = None, None
    if shapes is None:
        shapes = _probe(function, args, infos, values_matter)
        if key is not None:
            if len(_output_shapes) >= 4096:
                _output_shapes.clear()
            _output_shapes[key] = shapes
    metas, returns_tuple = shapes
    device = _device_of(args)
    outputs = tuple(
        OutputMeta(shape, dtype, diff, template_for(shape, dtype, device), (shape, dtype))
        for shape, dtype, diff in metas
    )
    return outputs, returns_tuple


def _probe(function: type, args: tuple, infos: tuple[ArgInfo, ...], values_matter: bool) -> tuple:
    """Run `function.forward` on stand-ins of the arguments to learn the output shapes: zeros
    when a batching rule accepted the arguments (batchable ops never have shapes that depend
    on values), else "meta" tensors, which have shapes but no values, so that an op whose
    output shape depends on values (`x[mask]`) raises instead of guessing."""
    device = "meta" if values_matter else "cpu"
    meta_args = []
    for arg, info in zip(args, infos):
        if info.role in _PYTHON:
            meta_args.append(arg)
        else:
            meta = torch.zeros(info.shape, dtype=info.dtype, device=device)
            meta_args.append(meta if info.role == RAW else Tensor._make(meta))
    ctx = function._backward_cls()
    ctx.needs_input_grad = (False,) * len(args)
    state = grad_mode._state
    previous = state.grad_enabled
    state.grad_enabled = False
    try:
        outputs = function.forward(ctx, *meta_args)
    except Exception as error:  # data-dependent shapes, values read in forward, ...
        raise ShapeUnknown(f"{function.__name__}: {error}") from None
    finally:
        state.grad_enabled = previous
    returns_tuple = isinstance(outputs, tuple)
    non_differentiable = ctx._non_differentiable
    metas = []
    for out in outputs if returns_tuple else (outputs,):
        if not isinstance(out, Tensor):
            raise ShapeUnknown(f"{function.__name__} returned a {type(out).__name__}")
        data = out._data
        diff = data.dtype.is_floating_point and not any(out is n for n in non_differentiable)
        metas.append((data.shape, data.dtype, diff))
    return tuple(metas), returns_tuple


def _device_of(args: tuple) -> torch.device:
    for a in args:
        if isinstance(a, Tensor):
            return a._data.device
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cpu")
