"""Grad modes: whether ops performed now are recorded in the graph.

`no_grad`, `enable_grad`, `set_grad_enabled` and `inference_mode` work as context managers and as
decorators, exactly like their PyTorch namesakes. The flag is per thread.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    """What is switched on in this thread (read on every op, so kept in one cheap place)."""

    grad_enabled: bool = True
    inference: bool = False
    anomaly: bool = False  # see anomaly.py
    anomaly_check_nan: bool = True
    saved_tensors_hooks: tuple = ()  # stack of (pack, unpack) pairs, see graph.py


_state = _State()


def is_grad_enabled() -> bool:
    """True when ops performed now will be recorded for backward."""
    return _state.grad_enabled


def is_inference_mode_enabled() -> bool:
    """True inside `inference_mode()`."""
    return _state.inference


class _GradModeContext:
    """Base for context managers that set the grad flag on entry and restore it on exit."""

    def _enter_state(self) -> tuple[bool, bool]:
        raise NotImplementedError

    def __enter__(self) -> None:
        self._previous = (_state.grad_enabled, _state.inference)
        _state.grad_enabled, _state.inference = self._enter_state()

    def __exit__(self, *exc_info: object) -> None:
        _state.grad_enabled, _state.inference = self._previous

    def __call__(self, fn: F) -> F:
        """Use the context as a decorator: `@no_grad()` (or `@no_grad`)."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def clone(self) -> _GradModeContext:
        return self.__class__()


class _NoArgumentMode(_GradModeContext):
    """A mode without arguments, usable as `@mode`, `@mode()` and `with mode():`."""

    def __new__(cls, fn: Callable | None = None) -> Any:
        instance = super().__new__(cls)
        if callable(fn):  # the bare decorator form `@no_grad`
            instance.__init__()
            return instance(fn)
        return instance

    def __init__(self, fn: Callable | None = None) -> None:
        pass


class no_grad(_NoArgumentMode):
    """Do not record ops: results have no grad_fn and do not require grad."""

    def _enter_state(self) -> tuple[bool, bool]:
        return False, _state.inference


class enable_grad(_NoArgumentMode):
    """Record ops again, for example inside a `no_grad` block."""

    def _enter_state(self) -> tuple[bool, bool]:
        return True, _state.inference  # inside inference_mode nothing is recorded anyway


class set_grad_enabled(_GradModeContext):
    """Turn recording on or off. Takes effect at once (like PyTorch) and also works as a context
    manager that restores the previous mode on exit."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous = (_state.grad_enabled, _state.inference)
        _state.grad_enabled = self.mode

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: F) -> F:
        """As a decorator, `@set_grad_enabled(False)` only affects calls of `fn`: the mode set by
        the constructor is undone at once (as in PyTorch)."""
        _state.grad_enabled, _state.inference = self._previous
        return super().__call__(fn)

    def clone(self) -> set_grad_enabled:
        return set_grad_enabled(self.mode)

    def _enter_state(self) -> tuple[bool, bool]:
        return self.mode, _state.inference


class inference_mode(_GradModeContext):
    """Like `no_grad`, and tensors created inside are inference tensors: they can never be saved
    for backward later (PyTorch raises the same error)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)

    def _enter_state(self) -> tuple[bool, bool]:
        if not self.mode:
            return True, False  # PyTorch's inference_mode(False) also enables grad
        return False, True
