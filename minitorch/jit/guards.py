"""Guards: the conditions under which a recorded trace may be replayed for a new call.

A trace is a flat program recorded from one call (minitorch/autograd/record.py). It holds for
another call when that call would run the same ops:
- every tensor argument has the same shape, dtype, device and requires_grad;
- every other argument is equal to the recorded one;
- grad mode is the same (it decides what the ops record for backward);
- every captured tensor (parameter, global) still has the same shape, dtype, device and
  requires_grad (it is read by reference, so new values are fine); guards name it as the code
  does where they can (`cell.weight_ih`, `w`), else by its slot (`captured %7`);
- every value that Python read out of a tensor reads the same again. Those are checked while
  the replay runs, when the tensor exists (see `Read` steps in the record).

Failures are described in the style of TorchDynamo's guard messages:
`tensor 'x' size mismatch at index 0. expected 16, actual 32`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minitorch.autograd.record import Program
from minitorch.nn.module import Module
from minitorch.tensor import Tensor


@dataclass(frozen=True)
class TensorGuard:
    """A tensor argument (or captured tensor) must look as it did when traced."""

    name: str
    shape: tuple[int, ...]
    dtype: Any
    device: Any
    requires_grad: bool

    def failure(self, value: Any) -> str | None:
        """Why `value` fails this guard, or None if it passes."""
        if not isinstance(value, Tensor):
            return f"'{self.name}' was a tensor, now it is a {type(value).__name__}"
        if value.dim() != len(self.shape):
            return (
                f"tensor '{self.name}' rank mismatch. expected {len(self.shape)}, "
                f"actual {value.dim()}"
            )
        for index, (expected, actual) in enumerate(zip(self.shape, value.shape)):
            if expected != actual:
                return (
                    f"tensor '{self.name}' size mismatch at index {index}. expected {expected}, "
                    f"actual {actual}"
                )
        for what in ("dtype", "device", "requires_grad"):
            expected, actual = getattr(self, what), getattr(value, what)
            if expected != actual:
                return f"tensor '{self.name}' {what} mismatch. expected {expected}, actual {actual}"
        return None

    def __str__(self) -> str:
        grad = ", requires_grad" if self.requires_grad else ""
        return f"tensor '{self.name}': {list(self.shape)}, {self.dtype}, {self.device}{grad}"


@dataclass(frozen=True)
class ValueGuard:
    """A non-tensor argument must equal the traced one."""

    name: str
    value: Any

    def failure(self, value: Any) -> str | None:
        """Why `value` fails this guard, or None if it passes."""
        if isinstance(value, Tensor):
            return f"'{self.name}' was {self.value!r}, now it is a tensor"
        if type(value) is not type(self.value) or value != self.value:
            return f"'{self.name}' == {self.value!r} failed, actual {value!r}"
        return None

    def __str__(self) -> str:
        return f"'{self.name}' == {self.value!r}"


@dataclass(frozen=True)
class Guards:
    """All the guards of one trace that can be checked before it runs."""

    arguments: tuple[TensorGuard | ValueGuard, ...]
    grad_enabled: bool
    captured: tuple[TensorGuard, ...]
    captured_tensors: tuple[Tensor, ...]  # what `captured` guards, by reference

    def failure(self, args: tuple, grad_enabled: bool) -> str | None:
        """The first guard that fails for a call with `args`, described; None if all pass."""
        if len(args) != len(self.arguments):
            return f"{len(self.arguments)} arguments expected, {len(args)} given"
        for guard, value in zip(self.arguments, args):
            reason = guard.failure(value)
            if reason is not None:
                return reason
        if grad_enabled != self.grad_enabled:
            return f"grad mode mismatch. expected {self.grad_enabled}, actual {grad_enabled}"
        for guard, tensor in zip(self.captured, self.captured_tensors):
            reason = guard.failure(tensor)
            if reason is not None:
                return reason
        return None

    def __str__(self) -> str:
        lines = [str(g) for g in self.arguments]
        lines.append(f"grad mode is {'on' if self.grad_enabled else 'off'}")
        lines += [str(g) for g in self.captured]
        return "\n".join(lines)


def guards_for(
    args: tuple, names: list[str], grad_enabled: bool, program: Program, fn: Callable
) -> Guards:
    """The guards of a trace of `fn` recorded from a call with `args` (named `names`)."""
    arguments = tuple(
        _tensor_guard(name, value) if isinstance(value, Tensor) else ValueGuard(name, value)
        for name, value in zip(names, args)
    )
    known = captured_names(fn)
    slots = program.captured
    captured = tuple(
        _tensor_guard(known.get(id(s.tensor), f"captured %{s.index}"), s.tensor) for s in slots
    )
    return Guards(arguments, grad_enabled, captured, tuple(s.tensor for s in slots))


def captured_names(fn: Callable) -> dict[int, str]:
    """Names, by tensor id, for the tensors `fn` reaches without arguments: the parameters and
    buffers of a Module (`cell.weight_ih`), and the tensors and modules in its closure or among
    the globals its code names. Other captured tensors (made inside the library, or reached
    through another function) keep their slot number (`captured %7`)."""
    names: dict[int, str] = {}

    def visit(name: str, value: Any) -> None:
        if isinstance(value, Tensor):
            names.setdefault(id(value), name)
        elif isinstance(value, Module):
            for inner, t in [*value.named_parameters(), *value.named_buffers()]:
                names.setdefault(id(t), f"{name}.{inner}")

    if isinstance(fn, Module):
        visit("self", fn)
        fn = type(fn).forward
    code = getattr(fn, "__code__", None)
    if code is not None:
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                visit(name, cell.cell_contents)
            except ValueError:  # a cell not filled in yet
                pass
        for name in code.co_names:
            if name in fn.__globals__:
                visit(name, fn.__globals__[name])
    return names


def _tensor_guard(name: str, t: Tensor) -> TensorGuard:
    return TensorGuard(name, tuple(t.shape), t.dtype, t.device, t.requires_grad)
