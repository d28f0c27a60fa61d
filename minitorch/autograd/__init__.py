"""minitorch.autograd: recording ops (Function), the backward engine and the grad modes."""

from minitorch.autograd import engine, functional, graph, profiler, record
from minitorch.autograd.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from minitorch.autograd.function import Function
from minitorch.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from minitorch.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from minitorch.autograd.variable import Variable

# Backward is not part of a forward record: NOTE [Forward record] in record.py.
backward = record.unrecorded_function("autograd.backward()", engine.backward)
grad = record.unrecorded_function("autograd.grad()", engine.grad)

__all__ = [
    "Function",
    "GradcheckError",
    "Variable",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "record",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "profiler",
    "set_detect_anomaly",
    "set_grad_enabled",
]
