"""Anomaly detection: find the forward op behind a NaN (or any error) in backward.

While enabled, every recorded node keeps the stack of the forward call that created it, and the
engine checks each node's output gradients for NaN. On a failure it warns
`Error detected in SqrtBackward0. Traceback of forward call that caused the error: ...` and raises
`Function 'SqrtBackward0' returned nan values in its 0th output.`, as PyTorch does.
It slows every op down, so switch it on only while debugging.
"""

from __future__ import annotations

import warnings
from typing import Any

from minitorch.autograd.grad_mode import _state


def is_anomaly_enabled() -> bool:
    return _state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return _state.anomaly_check_nan


class set_detect_anomaly:
    """Switch anomaly detection on or off; takes effect at once and, used as a context manager,
    restores the previous setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = (_state.anomaly, _state.anomaly_check_nan)
        _state.anomaly, _state.anomaly_check_nan = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: Any) -> None:
        _state.anomaly, _state.anomaly_check_nan = self._previous


class detect_anomaly:
    """Context manager (and decorator) that enables anomaly detection inside its block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self._previous = (_state.anomaly, _state.anomaly_check_nan)
        _state.anomaly, _state.anomaly_check_nan = True, self.check_nan

    def __exit__(self, *exc_info: Any) -> None:
        _state.anomaly, _state.anomaly_check_nan = self._previous

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper
