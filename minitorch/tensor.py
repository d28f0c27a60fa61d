"""The Tensor: an n-d array (a torch tensor used only as storage) plus what autograd needs.

A minitorch Tensor holds
- `_data`: a torch tensor that is never seen by torch's own autograd (it never requires grad);
- `requires_grad`, `grad`, `grad_fn` and `is_leaf`, with PyTorch's meaning;
- a version counter, shared with its views and `detach()` aliases, bumped by every in-place op, so
  that backward can tell when a tensor it saved was changed.

Ops are methods that call the Functions in `minitorch.ops`; see autograd/function.py for how they
are recorded.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from minitorch.autograd import engine as _engine_module
from minitorch.autograd import function as _function_module
from minitorch.autograd import grad_mode
from minitorch.autograd.function import AccumulateGrad, Node, RemovableHandle
from minitorch.autograd.record import (
    recorded_creation,
    recorded_read,
    report_opaque,
    unrecorded,
)

dtype = torch.dtype
device = torch.device
Size = torch.Size


# Called with every new tensor (and every tensor whose storage is replaced) while a
# `minitorch.memory.track()` block runs; None otherwise, so that costs one check per tensor.
_memory_watch: Callable[[Tensor], None] | None = None


class _Version:
    """A counter shared by a tensor, its views and its detached aliases."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Tensor:
    """An n-d array that records the ops applied to it when it requires grad."""

    __slots__ = (
        "_data",
        "_requires_grad",
        "_grad",
        "grad_fn",
        "_output_nr",
        "_version_counter",
        "_hooks",
        "_retains_grad",
        "_grad_accumulator",
        "_inference",
        "_is_view",
        "_base",
        "_view_fn",
        "__weakref__",
    )

    def __init__(self, *data: Any, requires_grad: bool = False) -> None:
        """Prefer `minitorch.tensor(...)`. Like `torch.Tensor`, `Tensor([1, 2])` copies data into
        the default float dtype and `Tensor(2, 3)` makes an uninitialized 2x3 tensor, on the CPU
        whatever the default device; a torch tensor (storage) is wrapped as it is."""
        first = data[0] if len(data) == 1 else None
        if isinstance(first, Tensor):
            first = first._data
        if isinstance(first, torch.Tensor):
            storage = first
        elif all(isinstance(d, int) for d in data) or isinstance(first, torch.Size):
            storage = torch.empty(_shape_args(data) if data else (0,), device="cpu")
        else:
            storage = torch.as_tensor(first, dtype=torch.get_default_dtype(), device="cpu")
        self._init(storage.detach(), None, False, 0, _Version())
        if requires_grad:
            self.requires_grad_(True)
        recorder = _function_module._recorder
        if recorder is not None:  # NOTE [Forward record]: a creation op
            recorder.created(Tensor, data, {"requires_grad": requires_grad}, self)

    def _init(self, data: torch.Tensor, grad_fn: Node | None, requires_grad: bool,
              output_nr: int, version: _Version) -> None:  # fmt: skip
        self._data = data
        self.grad_fn = grad_fn
        self._requires_grad = requires_grad
        self._output_nr = output_nr
        self._version_counter = version
        self._grad: Tensor | None = None
        self._hooks: list | None = None
        self._retains_grad = False
        self._grad_accumulator: weakref.ref | None = None
        self._inference = grad_mode._state.inference
        self._is_view = False
        self._base: Tensor | None = None  # for views: the tensor whose storage they show
        self._view_fn: Callable[[Tensor], Tensor] | None = None  # recreates the view from _base
        if _memory_watch is not None:  # only while minitorch.memory is recording
            _memory_watch(self)

    @classmethod
    def _make(
        cls,
        data: torch.Tensor,
        grad_fn: Node | None = None,
        requires_grad: bool = False,
        output_nr: int = 0,
        version: _Version | None = None,
    ) -> Tensor:
        """Wrap a torch tensor (used as storage, never copied) without any checks."""
        t = cls.__new__(cls)
        t._init(data, grad_fn, requires_grad, output_nr, version or _Version())
        return t

    def _view(self, data: torch.Tensor) -> Tensor:
        """A new tensor over (part of) this tensor's storage, sharing its version counter."""
        view = Tensor._make(data, version=self._version_counter)
        view._is_view = True
        return view

    def _alias(self) -> Tensor:
        return Tensor._make(self._data, version=self._version_counter)

    # ------------------------------------------------------------------------------------------
    # Autograd attributes
    # ------------------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make this leaf record the ops applied to it (or stop doing so)."""
        if self.grad_fn is not None:
            if requires_grad:
                return self  # a non-leaf requires grad already; PyTorch allows this no-op
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                f"var_no_grad = var.detach(). (This tensor is an output of {self.grad_fn.name()}.)"
            )
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients "
                f"(got a tensor of dtype {self.dtype} and shape {list(self.shape)})"
            )
        if requires_grad and self._inference and not grad_mode._state.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors the user created, and for every tensor that does not require grad."""
        return self.grad_fn is None

    def is_inference(self) -> bool:
        """True for tensors created inside `inference_mode()` (they can never join a graph)."""
        return self._inference

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _version(self) -> int:
        """How many times this tensor (or a view or detached alias of it) was changed in place.
        Backward compares it with the value seen when a tensor was saved."""
        return self._version_counter.value

    def retain_grad(self) -> None:
        """Keep `.grad` on a non-leaf after backward (leaves always keep it)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self.grad_fn._retain_grad_of(self)
        report_opaque("retain_grad()")

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """`hook(grad)` runs when this tensor's gradient is computed; a returned tensor replaces
        the gradient. Returns a handle with `.remove()`."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            hooks = self.grad_fn._tensor_hooks_for(self._output_nr)
        hooks.append(hook)
        report_opaque("register_hook() on a tensor")
        return RemovableHandle(hooks, hook)

    def _gradient_edge(self) -> tuple[Node, int]:
        """Where the gradient for this tensor goes: its grad_fn, or the leaf's AccumulateGrad."""
        if self.grad_fn is not None:
            return self.grad_fn, self._output_nr
        node = self._grad_accumulator() if self._grad_accumulator is not None else None
        if node is None:
            node = AccumulateGrad(self)
            self._grad_accumulator = weakref.ref(node)
        return node, 0

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Sequence[Tensor] | Tensor | None = None,
    ) -> None:
        """Compute the gradient of this tensor with respect to the graph's leaves and add it to
        their `.grad`. See `minitorch.autograd.backward`."""
        from minitorch.autograd import engine

        with unrecorded("backward()"):
            engine.backward(self, gradient, retain_graph, create_graph, inputs)

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (leaves, and non-leaves after `retain_grad()`)."""
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            _warn_non_leaf_grad()
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and value.shape != self.shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                "the same size"
            )
        self._grad = value

    def detach(self) -> Tensor:
        """The same storage and version counter, cut from the graph (`requires_grad=False`)."""
        return Tensor._make(self._data, version=self._version_counter)

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """The same storage with no graph and a NEW version counter.

        Unsafe by design, exactly like PyTorch's `.data`: changes made through it are invisible
        to autograd, so a gradient that needed the old values is silently wrong. Use `detach()`.
        """
        return Tensor._make(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        report_opaque("assignment to .data")
        self._data = value._data
        if _memory_watch is not None:
            _memory_watch(self)

    # ------------------------------------------------------------------------------------------
    # Array attributes and conversions
    # ------------------------------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return self._data.shape

    def size(self, dim: int | None = None) -> Any:
        return self._data.shape if dim is None else self._data.size(dim)

    def dim(self) -> int:
        return self._data.dim()

    @property
    def ndim(self) -> int:
        return self._data.dim()

    def numel(self) -> int:
        return self._data.numel()

    def element_size(self) -> int:
        return self._data.element_size()

    @property
    def nbytes(self) -> int:
        return self._data.numel() * self._data.element_size()

    @property
    def dtype(self) -> torch.dtype:
        return self._data.dtype

    @property
    def device(self) -> torch.device:
        return self._data.device

    @property
    def is_cuda(self) -> bool:
        return self._data.is_cuda

    def is_floating_point(self) -> bool:
        return self._data.is_floating_point()

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """`t.type()`: the legacy type name, e.g. `'torch.FloatTensor'` (`'torch.cuda.FloatTensor'`
        on a GPU). `t.type(T)`: `t` cast to `T`, which is a dtype (`minitorch.float64`), a legacy
        type (`minitorch.LongTensor`) or its name (`'torch.LongTensor'`); a type name also says
        the device (`'torch.cuda.FloatTensor'`). Returns `t` itself if it is of that type
        already, else a copy (recorded as ToCopyBackward0, like `.to()`)."""
        if dtype is None:
            return self._data.type()
        if isinstance(dtype, type):  # a legacy type, minitorch's or torch's: use its name
            dtype = f"torch.{'cuda.' if dtype.is_cuda else ''}{dtype.__name__}"
        # torch reads the name (and raises "invalid type" for an unknown one).
        target = torch.empty(0, dtype=self.dtype, device=self.device).type(dtype)
        return self.to(device=target.device, dtype=target.dtype)

    def is_contiguous(self) -> bool:
        return self._data.is_contiguous()

    def data_ptr(self) -> int:
        return self._data.data_ptr()

    def untyped_storage(self) -> torch.UntypedStorage:
        """The storage behind this tensor (shared by its views), with `data_ptr()` and
        `nbytes()` as in PyTorch."""
        return self._data.untyped_storage()

    @recorded_read("item")
    def item(self) -> float | int | bool:
        """The value of a one-element tensor as a Python number."""
        if self._data.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.numel()} elements cannot be converted to Scalar"
            )
        return self._data.item()

    @recorded_read("tolist")
    def tolist(self) -> Any:
        return self._data.tolist()

    @recorded_read("numpy")
    def numpy(self, *, force: bool = False) -> Any:
        """The values as a numpy array sharing memory with this (CPU) tensor. `force=True`
        detaches and copies to the CPU first, as `t.detach().cpu().numpy()`."""
        if force:
            return self._data.cpu().numpy()
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._data.numpy()

    @recorded_read("numpy")
    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        array = self.numpy() if not self._data.is_cuda else self._data.cpu().numpy()
        return array if dtype is None else array.astype(dtype)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """Move and/or cast: `.to("cuda")`, `.to(minitorch.float64)`, `.to(other_tensor)`."""
        from minitorch.ops import to_copy

        if args and isinstance(args[0], Tensor):
            args = (args[0].device, args[0].dtype) + args[1:]
        kwargs.pop("non_blocking", None)
        kwargs.pop("copy", None)
        target = torch.empty(0, dtype=self.dtype, device=self.device).to(*args, **kwargs)
        if target.dtype == self.dtype and target.device == self.device:
            return self
        return to_copy(self, target.dtype, target.device)

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        return self.to("cuda" if device is None else device)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def double(self) -> Tensor:
        return self.to(torch.float64)

    def float(self) -> Tensor:
        return self.to(torch.float32)

    def half(self) -> Tensor:
        return self.to(torch.float16)

    def bfloat16(self) -> Tensor:
        return self.to(torch.bfloat16)

    def long(self) -> Tensor:
        return self.to(torch.int64)

    def int(self) -> Tensor:
        return self.to(torch.int32)

    def bool(self) -> Tensor:
        return self.to(torch.bool)

    # ------------------------------------------------------------------------------------------
    # Printing and Python protocols
    # ------------------------------------------------------------------------------------------
    @recorded_read("repr")
    def __repr__(self) -> str:
        text = repr(self._data)
        if self.grad_fn is not None:
            extra = f"grad_fn=<{self.grad_fn.name()}>"
        elif self._requires_grad:
            extra = "requires_grad=True"
        else:
            return text
        # PyTorch's rule (_add_suffixes in torch/_tensor_str.py): a suffix that would pass the
        # print width goes on a new line, under "tensor(". Torch counts the last line 2 longer
        # than it is, unless it is a suffix that wrapped already (7 spaces, then dtype=...).
        body = text[:-1]
        last_line = body[body.rfind("\n") + 1 :]
        wrapped = last_line.startswith(" " * 7) and not last_line.startswith(" " * 8)
        length = len(last_line) + (0 if wrapped else 2)
        if length + len(extra) + 2 > torch._tensor_str.PRINT_OPTS.linewidth:
            return f"{body},\n{' ' * 7}{extra})"
        return f"{body}, {extra})"

    @recorded_read("format")
    def __format__(self, spec: str) -> str:
        if self._data.dim() == 0:
            return format(self._data.item(), spec)
        return format(repr(self), spec)

    @recorded_read("len")
    def __len__(self) -> int:
        if self._data.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        len(self)  # how many items: a value read for a record being made
        return iter(_ops.unbind(self, 0))

    @recorded_read("bool")
    def __bool__(self) -> bool:
        if self._data.numel() != 1:
            how_many = "no values" if self._data.numel() == 0 else "more than one value"
            raise RuntimeError(
                f"Boolean value of Tensor with {how_many} is ambiguous (shape {list(self.shape)})"
            )
        return bool(self._data.item())

    @recorded_read("float")
    def __float__(self) -> float:
        return float(self.item())

    @recorded_read("int")
    def __int__(self) -> int:
        return int(self.item())

    @recorded_read("index")
    def __index__(self) -> int:
        if self.dtype.is_floating_point or self._data.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.item())

    __hash__ = object.__hash__

    def __getitem__(self, index: Any) -> Tensor:
        return _ops.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        _ops.setitem(self, index, value)

    # Arithmetic ---------------------------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _ops.add(self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _ops.add(other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _ops.sub(self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _ops.sub(other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _ops.mul(self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _ops.mul(other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _ops.div(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _ops.div(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return _ops.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _ops.remainder(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _ops.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _ops.floor_divide(other, self)

    def __pow__(self, exponent: Any) -> Tensor:
        return _ops.pow(self, exponent)

    def __rpow__(self, base: Any) -> Tensor:
        return _ops.pow(base, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _ops.matmul(other, self)

    def __neg__(self) -> Tensor:
        return _ops.neg(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ops.abs(self)

    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other)

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other)

    # Comparisons give bool tensors and are never recorded.
    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ops.compare("eq", self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _ops.compare("ne", self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _ops.compare("lt", self, other)

    def __le__(self, other: Any) -> Tensor:
        return _ops.compare("le", self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _ops.compare("gt", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _ops.compare("ge", self, other)

    def eq(self, other: Any) -> Tensor:
        return _ops.compare("eq", self, other)

    def ne(self, other: Any) -> Tensor:
        return _ops.compare("ne", self, other)

    def lt(self, other: Any) -> Tensor:
        return _ops.compare("lt", self, other)

    def le(self, other: Any) -> Tensor:
        return _ops.compare("le", self, other)

    def gt(self, other: Any) -> Tensor:
        return _ops.compare("gt", self, other)

    def ge(self, other: Any) -> Tensor:
        return _ops.compare("ge", self, other)

    def __invert__(self) -> Tensor:
        return _ops.logical("not", self)

    def __and__(self, other: Any) -> Tensor:
        return _ops.logical("and", self, other)

    def __or__(self, other: Any) -> Tensor:
        return _ops.logical("or", self, other)

    def __xor__(self, other: Any) -> Tensor:
        return _ops.logical("xor", self, other)

    # Differentiable ops as methods ---------------------------------------------------------------
    def add(self, other: Any, alpha: float = 1) -> Tensor:
        return _ops.add(self, other if alpha == 1 else _ops.mul(other, alpha))

    def sub(self, other: Any, alpha: float = 1) -> Tensor:
        return _ops.sub(self, other if alpha == 1 else _ops.mul(other, alpha))

    def mul(self, other: Any) -> Tensor:
        return _ops.mul(self, other)

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        return _ops.div(self, other, rounding_mode=rounding_mode)

    def neg(self) -> Tensor:
        return _ops.neg(self)

    def pow(self, exponent: Any) -> Tensor:
        return _ops.pow(self, exponent)

    def exp(self) -> Tensor:
        return _ops.exp(self)

    def log(self) -> Tensor:
        return _ops.log(self)

    def sqrt(self) -> Tensor:
        return _ops.sqrt(self)

    def sin(self) -> Tensor:
        return _ops.sin(self)

    def cos(self) -> Tensor:
        return _ops.cos(self)

    def tanh(self) -> Tensor:
        return _ops.tanh(self)

    def sigmoid(self) -> Tensor:
        return _ops.sigmoid(self)

    def relu(self) -> Tensor:
        return _ops.relu(self)

    def abs(self) -> Tensor:
        return _ops.abs(self)

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:
        return _ops.clamp(self, min, max)

    clip = clamp

    def maximum(self, other: Tensor) -> Tensor:
        return _ops.maximum(self, other)

    def minimum(self, other: Tensor) -> Tensor:
        return _ops.minimum(self, other)

    def matmul(self, other: Tensor) -> Tensor:
        return _ops.matmul(self, other)

    def mm(self, mat2: Tensor) -> Tensor:
        return _ops.mm(self, mat2)

    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        return _ops.sum(self, dim, keepdim, dtype=dtype)

    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        return _ops.mean(self, dim, keepdim, dtype=dtype)

    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _ops.max(self, dim, keepdim)

    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        return _ops.min(self, dim, keepdim)

    def amax(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        return _ops.amax(self, dim, keepdim)

    def amin(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        return _ops.amin(self, dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _ops.argmax(self, dim, keepdim)

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return _ops.argmin(self, dim, keepdim)

    def norm(self, p: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
        return _ops.norm(self, p, dim, keepdim)

    def var(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
            correction: int | None = None) -> Tensor:  # fmt: skip
        return _ops.var(self, dim, unbiased, keepdim, correction=correction)

    def std(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
            correction: int | None = None) -> Tensor:  # fmt: skip
        return _ops.std(self, dim, unbiased, keepdim, correction=correction)

    def softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return _ops.softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return _ops.log_softmax(self, dim, dtype)

    def logsumexp(self, dim: Any, keepdim: bool = False) -> Tensor:
        return _ops.logsumexp(self, dim, keepdim)

    def reshape(self, *shape: Any) -> Tensor:
        return _ops.reshape(self, _shape_args(shape))

    def view(self, *shape: Any) -> Tensor:
        return _ops.view(self, _shape_args(shape))

    def view_as(self, other: Tensor) -> Tensor:
        return _ops.view(self, other.shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        return _ops.reshape(self, other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        return _ops.flatten(self, start_dim, end_dim)

    def squeeze(self, dim: Any = None) -> Tensor:
        return _ops.squeeze(self, dim)

    def unsqueeze(self, dim: int) -> Tensor:
        return _ops.unsqueeze(self, dim)

    def permute(self, *dims: Any) -> Tensor:
        return _ops.permute(self, _shape_args(dims))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        return _ops.transpose(self, dim0, dim1)

    def t(self) -> Tensor:
        return _ops.t(self)

    @property
    def T(self) -> Tensor:  # noqa: N802 (PyTorch's name)
        return _ops.permute(self, tuple(range(self.dim() - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:  # noqa: N802 (PyTorch's name)
        """The last two dims swapped (a batch of matrices transposed)."""
        return _ops.transpose(self, -2, -1)

    def expand(self, *sizes: Any) -> Tensor:
        return _ops.expand(self, _shape_args(sizes))

    def expand_as(self, other: Tensor) -> Tensor:
        return _ops.expand(self, other.shape)

    def repeat(self, *sizes: Any) -> Tensor:
        return _ops.repeat(self, _shape_args(sizes))

    def split(self, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
        return _ops.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        return _ops.chunk(self, chunks, dim)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        return _ops.unbind(self, dim)

    def masked_fill(self, mask: Tensor, value: Any) -> Tensor:
        return _ops.masked_fill(self, mask, value)

    def where(self, condition: Tensor, other: Any) -> Tensor:
        return _ops.where(condition, self, other)

    def sort(self, dim: int = -1, descending: bool = False, *,
             stable: bool | None = None) -> Any:  # fmt: skip
        """`(values, indices)` sorted along `dim`: see `minitorch.sort`."""
        return _ops.sort(self, dim, descending, stable=stable)

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        return _ops.argsort(self, dim, descending, stable=stable)

    def multinomial(self, num_samples: int, replacement: bool = False, *,
                    generator: torch.Generator | None = None) -> Tensor:  # fmt: skip
        """Indices drawn with the weights in (each row of) this tensor: see
        `minitorch.multinomial`."""
        return _ops.multinomial(self, num_samples, replacement, generator=generator)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        return _ops.index_select(self, dim, index)

    def gather(self, dim: int, index: Tensor) -> Tensor:
        return _ops.gather(self, dim, index)

    def clone(self) -> Tensor:
        return _ops.clone(self)

    def contiguous(self) -> Tensor:
        return self if self._data.is_contiguous() else _ops.clone(self)

    # In-place ops (each bumps the version counter) -----------------------------------------------
    def add_(self, other: Any, alpha: float = 1) -> Tensor:
        return _ops.inplace(self, Tensor.add, other, alpha)

    def sub_(self, other: Any, alpha: float = 1) -> Tensor:
        return _ops.inplace(self, Tensor.sub, other, alpha)

    def mul_(self, other: Any) -> Tensor:
        return _ops.inplace(self, Tensor.mul, other)

    def div_(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return _ops.inplace(self, Tensor.div, other)
        return _ops.inplace(self, lambda t, o: _ops.div(t, o, rounding_mode=rounding_mode), other)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        return _ops.inplace(self, Tensor.clamp, min, max)

    def relu_(self) -> Tensor:
        return _ops.inplace(self, Tensor.relu)

    def zero_(self) -> Tensor:
        return _ops.inplace(self, _ops.fill, 0)

    def fill_(self, value: Any) -> Tensor:
        return _ops.inplace(self, _ops.fill, value)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        return _ops.inplace(self, _ops.copy_from, src)

    def masked_fill_(self, mask: Tensor, value: Any) -> Tensor:
        return _ops.inplace(self, Tensor.masked_fill, mask, value)

    # Non-differentiable helpers ------------------------------------------------------------------
    @recorded_creation
    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:  # fmt: skip
        """Zeros of `size`, with this tensor's dtype and device unless given."""
        data = self._data.new_zeros(_shape_args(size), dtype=dtype, device=device)
        return Tensor._make(data).requires_grad_(requires_grad)

    @recorded_creation
    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:  # fmt: skip
        """Ones of `size`, with this tensor's dtype and device unless given."""
        data = self._data.new_ones(_shape_args(size), dtype=dtype, device=device)
        return Tensor._make(data).requires_grad_(requires_grad)

    @recorded_creation
    def new_tensor(self, data: Any, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:  # fmt: skip
        """A copy of `data`, with this tensor's dtype and device unless given."""
        storage = torch.as_tensor(data, dtype=dtype or self.dtype, device=device or self.device)
        return Tensor._make(storage).requires_grad_(requires_grad)

    def any(self) -> Tensor:
        return _ops.predicate("any", self)

    def all(self) -> Tensor:
        return _ops.predicate("all", self)

    def isnan(self) -> Tensor:
        return _ops.predicate("isnan", self)


def _shape_args(args: tuple) -> tuple:
    """Accept both `f(2, 3)` and `f((2, 3))`, as PyTorch does."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)):
        return tuple(args[0])
    return args


def _warn_non_leaf_grad() -> None:
    warnings.warn(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
        "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
        "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
        UserWarning,
        stacklevel=3,
    )


_function_module._Tensor = Tensor
_engine_module._Tensor = Tensor

from minitorch import ops as _ops  # noqa: E402  (ops need Tensor defined first)
