"""minitorch.autograd: recording ops (Function), the backward engine and the grad modes."""

from minitorch.autograd import graph
from minitorch.autograd.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from minitorch.autograd.engine import backward, grad
from minitorch.autograd.function import Function
from minitorch.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from minitorch.autograd.gradcheck import GradcheckError, gradcheck

__all__ = [
    "Function",
    "GradcheckError",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "graph",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]
