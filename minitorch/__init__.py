"""minitorch: a from-scratch autograd library that mirrors PyTorch's API for a teaching subset.

Storage is a torch tensor used only as an n-d array; the graph, the backward engine and every
derivative are minitorch's own. Programs inside the subset run after `import minitorch as torch`.
"""

import torch as _torch

from minitorch import autograd, cuda, profiler
from minitorch.autograd.anomaly import is_anomaly_enabled
from minitorch.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from minitorch.creation import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    get_default_device,
    get_default_dtype,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    set_default_device,
    set_default_dtype,
    tensor,
    zeros,
    zeros_like,
)
from minitorch.ops import (
    abs,
    add,
    amax,
    amin,
    argmax,
    argmin,
    argsort,
    cat,
    chunk,
    clamp,
    clone,
    cos,
    div,
    exp,
    flatten,
    gather,
    index_select,
    log,
    log_softmax,
    logsumexp,
    masked_fill,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mul,
    multinomial,
    neg,
    norm,
    normal,
    permute,
    pow,
    relu,
    reshape,
    sigmoid,
    sin,
    softmax,
    sort,
    split,
    sqrt,
    squeeze,
    stack,
    std,
    sub,
    sum,
    t,
    tanh,
    transpose,
    unbind,
    unsqueeze,
    var,
    where,
)
from minitorch.tensor import Size, Tensor, device, dtype

# dtypes are torch's own objects, so `minitorch.float32 == torch.float32`.
float32 = float = _torch.float32
float64 = double = _torch.float64
float16 = half = _torch.float16
bfloat16 = _torch.bfloat16
int64 = long = _torch.int64
int32 = int = _torch.int32
bool = _torch.bool
# Random streams are torch's too: `minitorch.Generator().manual_seed(0)` seeds DataLoader shuffles.
Generator = _torch.Generator


def is_tensor(obj: object) -> "builtins.bool":  # noqa: F821
    """True for minitorch tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> "builtins.int":  # noqa: F821, A002
    return input.numel()


def equal(input: Tensor, other: Tensor) -> "builtins.bool":  # noqa: F821, A002
    """True if both tensors have the same shape and the same elements (never recorded)."""
    from minitorch.ops.elementwise import whole_compare

    return whole_compare("equal", input, other)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: "builtins.bool" = False) -> "builtins.bool":  # noqa: F821, A002 # fmt: skip
    """True if `|input - other| <= atol + rtol * |other|` everywhere (never recorded)."""
    from minitorch.ops.elementwise import whole_compare

    return whole_compare("allclose", input, other, rtol, atol, equal_nan)


__version__ = "0.1.0"

# Submodules that pull in more code load on first use, so `import minitorch` stays fast and
# `minitorch.nn.Linear` works after `import minitorch as torch`, as it does for PyTorch.
# `data` is the former name of `datasets`, kept as a module that re-exports it.
_LAZY_SUBMODULES = (
    "nn", "optim", "datasets", "data", "utils", "viz", "memory", "jit", "autobatch"
)  # fmt: skip
_LAZY_ATTRIBUTES = {"save": "minitorch.serialization", "load": "minitorch.serialization"}


def __getattr__(name: str):
    import importlib

    if name in _LAZY_SUBMODULES:
        try:
            return importlib.import_module(f"minitorch.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"minitorch.{name}":
                raise  # the submodule is there, but something it imports is missing
            # A submodule not written yet: a plain missing attribute, so that hasattr() works.
            raise AttributeError(
                f"module 'minitorch' has no attribute '{name}' (minitorch/{name} is missing)"
            ) from None
    if name in _LAZY_ATTRIBUTES:
        return getattr(importlib.import_module(_LAZY_ATTRIBUTES[name]), name)
    raise AttributeError(f"module 'minitorch' has no attribute '{name}'")
