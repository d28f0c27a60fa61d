"""Functions and graph nodes: how one op is recorded while the forward pass runs.

Every op in minitorch, built-in or written by a student, is a `Function` subclass with two static
methods::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * result

`Exp.apply(x)` runs `forward` with recording switched off, then, if grad mode is on and some input
requires grad, records a node: the `ctx` object itself becomes the output's `grad_fn` (as in
PyTorch). The node remembers where each input's gradient must go next (`next_functions`), the
tensors saved for backward, and hooks. The backward engine (engine.py) calls the node with the
gradient of its outputs and passes the results along `next_functions`.
"""

from __future__ import annotations

import itertools
import re
import sys
import traceback
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from minitorch.autograd import grad_mode

if TYPE_CHECKING:
    from minitorch.tensor import Tensor

_sequence = itertools.count()

# minitorch.tensor imports this module, so the Tensor class cannot be imported here at load time;
# minitorch.tensor fills this in right after defining it.
_Tensor: Any = None

# The recorder of the forward record being made (autograd/record.py), None otherwise: while one
# is installed, `Function.apply` hands every op to it. See NOTE [Forward record].
_recorder: Any = None

# The open `minitorch.autograd.profiler.profile`, None otherwise: while one is open,
# `Function.apply` runs each op's forward through it, so that it can time the op.
_profiler: Any = None

FREED_GRAPH_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


class RemovableHandle:
    """Returned by every `register_*hook`; `.remove()` takes the hook out again."""

    def __init__(self, hooks: list, hook: Callable) -> None:
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


class SavedTensor:
    """One tensor saved for backward, with the version it had when saved.

    A tensor that is an output of the very node that saves it is stored without its `grad_fn`
    (that would be a reference cycle: node -> saved output -> node) and gets it back when
    unpacked, so that `create_graph=True` can differentiate through it.
    """

    __slots__ = ("tensor", "version", "output_nr", "packed", "unpack_hook")

    def __init__(self, tensor: Tensor, output_nr: int | None) -> None:
        self.version = tensor._version_counter.value
        self.output_nr = output_nr
        self.packed = None
        self.unpack_hook = None
        hooks = grad_mode._state.saved_tensors_hooks
        if hooks:
            # Like PyTorch, the pack hook sees the tensor itself (an output keeps its grad_fn).
            pack, self.unpack_hook = hooks[-1]
            self.packed = _run_pack_hook(pack, tensor)
            self.tensor = None
        else:
            self.tensor = tensor if output_nr is None else tensor.detach()

    def unpack(self, node: BackwardNode) -> Tensor:
        Tensor = _Tensor
        if self.unpack_hook is not None:
            value = self.unpack_hook(self.packed)
            if not isinstance(value, Tensor):
                raise TypeError(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got result "
                    f"of type {type(value).__name__}"
                )
        else:
            value = self.tensor
            if value._version_counter.value != self.version:
                raise RuntimeError(_modified_message(value, node, self))
        if self.output_nr is not None:
            # Give the result back its place in the graph so that it can be differentiated again.
            value = Tensor._make(value._data, node, True, self.output_nr, value._version_counter)
        return value


def _run_pack_hook(pack: Callable, tensor: Tensor) -> Any:
    """Call a saved-tensor pack hook as PyTorch does: with grad mode off, and refusing a hook
    that changes its input in place."""
    version = tensor._version_counter.value
    state = grad_mode._state
    previous = state.grad_enabled
    state.grad_enabled = False
    try:
        packed = pack(tensor)
    finally:
        state.grad_enabled = previous
    if tensor._version_counter.value != version:
        raise RuntimeError(
            "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
            "to pack hook cannot be modified by in-place operations as this can lead to "
            "unexpected side-effects."
        )
    return packed


def op_name(node_name: str) -> str:
    """The forward op a node belongs to, as PyTorch names it: "ExpBackward0" -> "Exp"."""
    return re.sub(r"Backward\d*$", "", node_name)


def _modified_message(value: Tensor, node: BackwardNode, saved: SavedTensor) -> str:
    producer = node if saved.output_nr is not None else value.grad_fn
    if producer is not None:
        nr = saved.output_nr if saved.output_nr is not None else value._output_nr
        origin = f", which is output {nr} of {op_name(producer.name())},"
    else:
        origin = ""
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{value.type()} {list(value.shape)}]{origin} is at version "
        f"{value._version}; expected version {saved.version} instead. Hint: it was saved by "
        f"{node.name()}; clone it before changing it in place, or change it out of place."
    )


class Node:
    """A node of the backward graph. Named like PyTorch's (`MulBackward0`), callable on a gradient.

    Attributes shared with PyTorch: `name()`, `next_functions`, `register_hook`,
    `register_prehook`, `metadata`; saved values are visible as `_saved_<name>`.
    """

    next_functions: tuple = ()
    # Hook containers are created on first registration; these shared empty defaults keep
    # recording cheap for the (usual) nodes that have no hooks.
    _hooks: list = []
    _prehooks: list = []
    _tensor_prehooks: dict[int, list] = {}
    _retained: dict[int, weakref.ref] = {}

    _qualified_name: str | None = None  # PyTorch's name() for its C++-only nodes

    def name(self) -> str:
        return self._qualified_name or type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    # Hooks ------------------------------------------------------------------------------------
    def register_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(grad_inputs, grad_outputs)` runs after this node computed its input gradients;
        returning a tuple replaces `grad_inputs`."""
        if "_hooks" not in self.__dict__:
            self._hooks = []
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)

    def register_prehook(self, hook: Callable) -> RemovableHandle:
        """`hook(grad_outputs)` runs before this node; returning a tuple replaces the gradients."""
        if "_prehooks" not in self.__dict__:
            self._prehooks = []
        self._prehooks.append(hook)
        return RemovableHandle(self._prehooks, hook)

    def _tensor_hooks_for(self, output_nr: int) -> list:
        """The list of hooks registered on the tensor that is this node's output `output_nr`."""
        if "_tensor_prehooks" not in self.__dict__:
            self._tensor_prehooks = {}
        return self._tensor_prehooks.setdefault(output_nr, [])

    def _retain_grad_of(self, tensor: Tensor) -> None:
        if "_retained" not in self.__dict__:
            self._retained = {}
        self._retained[tensor._output_nr] = weakref.ref(tensor)

    @property
    def metadata(self) -> dict:
        if "_metadata" not in self.__dict__:
            self._metadata = {}
        return self._metadata

    # Running the node --------------------------------------------------------------------------
    def apply_backward(self, grad_outputs: tuple) -> tuple:
        """Compute the gradients for the inputs from the gradients of the outputs."""
        raise NotImplementedError

    def __call__(self, *grad_outputs: Tensor) -> Any:
        grads = self.apply_backward(tuple(grad_outputs))
        return grads[0] if len(grads) == 1 else grads

    def release_saved(self) -> None:
        """Free what this node keeps for backward (called by the engine unless retain_graph)."""


class AccumulateGrad(Node):
    """The node behind a leaf that requires grad: it adds the incoming gradient to `.grad`."""

    _output_meta = (None,)

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable
        # Like PyTorch, a leaf's node runs as soon as it is ready (highest priority).
        self.sequence_nr = sys.maxsize - next(_sequence)

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # PyTorch's name, so graph-walking code agrees

    def apply_backward(self, grad_outputs: tuple) -> tuple:
        return ()


class BackwardNode(Node):
    """The node recorded by `Function.apply`. It is also the `ctx` passed to forward/backward."""

    _forward_cls: type[Function]
    _saved_names: tuple[str, ...] = ()
    # Defaults read through the class until apply() or the ctx API sets them on the instance.
    materialize_grads = True
    _to_save: tuple = ()
    _saved: tuple[SavedTensor | None, ...] | None = ()
    _non_differentiable: tuple = ()
    _input_positions: tuple[int, ...] = ()  # which forward args have an edge (tensors, numbers)
    _input_meta: tuple = ()  # (shape, dtype) of each tensor input, None for wrapped numbers
    _output_meta: tuple = ()  # (shape, dtype, device) of each output
    # Set when the node is recorded; the engine runs later-recorded nodes first.
    sequence_nr: int = -1

    # The ctx API used inside forward/backward ---------------------------------------------------
    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for backward. Read them back with `ctx.saved_tensors`."""
        self._to_save = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs listed here never require grad (indices, masks)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None instead of zeros for outputs that got no gradient."""
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            raise RuntimeError(f"{FREED_GRAPH_MESSAGE} (They were saved by {self.name()}.)")
        return tuple(s if s is None else s.unpack(self) for s in self._saved)

    def __getattr__(self, attr: str) -> Any:
        # `_saved_self`, `_saved_other`, `_saved_result` ... as in PyTorch's generated nodes.
        names = type(self)._saved_names
        if attr.startswith("_saved_") and attr[7:] in names:
            return self.saved_tensors[names.index(attr[7:])]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    def __dir__(self) -> list[str]:
        """List the `_saved_<name>` attributes too, as `dir()` does on PyTorch's nodes."""
        # `_saved_names` is bookkeeping, not a saved value: tools such as torchviz treat every
        # `_saved_*` attribute as one, so it is left out.
        names = {n for n in super().__dir__() if n != "_saved_names"}
        return sorted(names | {f"_saved_{n}" for n in type(self)._saved_names})

    def release_saved(self) -> None:
        if self._saved:
            self._saved = None

    def apply_backward(self, grad_outputs: tuple) -> tuple:
        """Run the Function's backward; return one gradient (or None) per edge."""
        grads = self._forward_cls.backward(self, *grad_outputs)
        if not isinstance(grads, tuple):
            grads = (grads,)
        expected = len(self.needs_input_grad)
        if len(grads) != expected and (
            len(grads) < expected or any(g is not None for g in grads[expected:])
        ):
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(grads)})"
            )
        result = []
        for index, position in enumerate(self._input_positions):
            grad = grads[position]
            if grad is not None:
                shape, dtype = self._input_meta[index]
                if grad.shape != shape:
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {index} - "
                        f"got {list(grad.shape)} but expected shape compatible with {list(shape)}"
                    )
                if grad.dtype != dtype:
                    grad = grad.to(dtype)
            result.append(grad)
        return tuple(result)


class Function:
    """Base class of every differentiable op. Subclass it, write static `forward` and `backward`,
    and call `YourFunction.apply(*args)`.

    `forward(ctx, *args)` receives the arguments as given (tensors and other values) and runs with
    recording off; it returns a tensor or a tuple of tensors. `backward(ctx, *grads)` receives one
    gradient per output and returns one gradient per argument of forward, in order (None for
    arguments that are not tensors or need no gradient).

    Built-in ops set `node_name` to PyTorch's node name, `saved_names` to PyTorch's names for what
    they save, and `wraps_numbers` where PyTorch treats a Python number argument as a tensor that
    needs no grad (so `(x * 2).grad_fn.next_functions` has a `(None, 0)` entry for the 2).
    `non_differentiable_args` lists the positions of tensor arguments that are data rather than
    inputs of the graph (where's condition, a mask): like PyTorch, the node has no edge for them.
    An op may also define `on_storage`, the same op on storage alone, which `minitorch.jit`
    replays without building nodes (NOTE [Storage kernels]).
    """

    node_name: str | None = None
    saved_names: tuple[str, ...] = ()
    wraps_numbers: bool = False
    non_differentiable_args: tuple[int, ...] = ()
    on_storage: Callable[..., tuple] | None = None  # NOTE [Storage kernels]

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        raise NotImplementedError("Function subclasses must implement a static forward(ctx, ...)")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("Function subclasses must implement a static backward(ctx, ...)")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("node_name") or f"{cls.__name__}Backward"
        cls._backward_cls = type(
            name,
            (BackwardNode,),
            {
                "_forward_cls": cls,
                "_saved_names": cls.saved_names,
                "_qualified_name": cls.__dict__.get("node_qualified_name"),
                "__module__": cls.__module__,
            },
        )

    @classmethod
    def apply(cls, *args: Any) -> Any:
        if _recorder is not None:  # a forward record is being made: NOTE [Forward record]
            return _recorder.apply(cls, args)
        Tensor = _Tensor
        ctx = cls._backward_cls()
        state = grad_mode._state
        previous = state.grad_enabled
        inference = state.inference
        if previous and not inference:
            needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
            record = True in needs
        else:
            needs, record = (False,) * len(args), False
        ctx.needs_input_grad = needs

        if previous:
            state.grad_enabled = False
        try:
            if _profiler is None:
                outputs = cls.forward(ctx, *args)
            else:
                outputs = _profiler.run_forward(cls, ctx, args)
        except NotImplementedError:
            raise  # a stub (e.g. a student's unfinished forward) speaks for itself
        except (RuntimeError, IndexError, ValueError) as error:
            raise _with_op_context(error, ctx.name(), args) from None
        finally:
            if previous:
                state.grad_enabled = True

        if inference:
            _mark_inference(outputs)
        if isinstance(outputs, tuple) or outputs._is_view:
            _link_views(cls, args, outputs)
        if not record:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        outs = _record(cls, ctx, args, outs)
        return outs[0] if single else outs


# NOTE [Storage kernels]
# `Function.apply` builds a node, edges and minitorch tensors for every op, because the graph is
# new each time. A replay (minitorch/jit) runs a recorded program again and again: it needs the
# numbers and a way back for the gradients, nothing else. So an op may also describe itself on
# storage alone, as a static method next to its forward and backward:
#
#     @staticmethod
#     def on_storage(needs_input_grad, *args):
#         ...                                   # torch calls on storage only
#         return outputs, backward
#
# - `args` are forward's arguments with every minitorch tensor replaced by its storage
#   (`t._data`); numbers, dims and other values stay as they are.
# - `outputs` is what forward returns, as storage (a tuple of storages if forward returns a
#   tuple), bit for bit the same numbers.
# - `backward(*grad_outputs)` takes one storage gradient per output (zeros where none arrived)
#   and returns a tuple with one gradient per argument: bit for bit what the op's `backward`
#   gives where `needs_input_grad` is True (elsewhere None, or anything: the replay ignores it).
#   A gradient may keep the broadcast shape of the output: the replay sums it back to the
#   argument's shape, exactly as `sum_to_shape` does. `backward` is only called when some
#   argument needs a gradient, maybe more than once (retain_graph), so it must not change what
#   it keeps; and it keeps only what it needs, as `ctx.save_for_backward` would.
# forward and backward stay the definition of the op: tests/test_storage_kernels.py replays every
# op that defines `on_storage` against them, bit for bit. `storage_kernel(function)` below is
# how the replay finds a kernel; an op without one (or a subclass that overrides forward or
# backward but not `on_storage`) is replayed through `forward_with_ctx`: the same numbers, with
# the overhead of wrapping every value in a tensor.


def storage_kernel(function: type[Function]) -> Callable[..., tuple] | None:
    """`function.on_storage` if it was written for the forward and backward that `function`
    uses (a subclass that overrides either one loses it), else None. NOTE [Storage kernels]."""
    for owner in function.__mro__:
        if "on_storage" in owner.__dict__:
            break
    else:
        return None
    if owner.__dict__["on_storage"] is None:
        return None
    if function.forward is not owner.forward or function.backward is not owner.backward:
        return None
    return function.on_storage


def forward_with_ctx(
    function: type[Function], args: Sequence[Any], needs_input_grad: Sequence[bool]
) -> tuple[tuple, BackwardNode]:
    """Run `function.forward` on a fresh ctx with grad mode off; return `(outputs, ctx)`.

    This is `Function.apply` without the node it links into the graph: `outputs` is a tuple
    (one entry per output, even for a single one) and nothing records it. `needs_input_grad[i]`
    says whether backward must compute the gradient of `args[i]` (False for a non-tensor). When
    any is True the ctx keeps what forward saved, and `function.backward(ctx, *grad_outputs)`
    returns one gradient per argument (None where none is needed), as the engine would get it.
    A replayed program (minitorch.jit, notebook 5's tracer) calls each op's backward this way.
    """
    Tensor = _Tensor
    args = tuple(args)
    needs = tuple(bool(n) for n in needs_input_grad)
    if len(needs) != len(args):
        raise ValueError(
            f"forward_with_ctx: {len(args)} arguments but {len(needs)} needs_input_grad flags "
            f"for {function.__name__}"
        )
    ctx = function._backward_cls()
    ctx.needs_input_grad = needs
    with grad_mode.no_grad():
        outputs = function.forward(ctx, *args)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    if any(needs):
        ctx._output_meta = tuple(
            (o._data.shape, o._data.dtype, o._data.device) if isinstance(o, Tensor) else None
            for o in outputs
        )
        if ctx._to_save:
            _pack_saved(ctx, outputs)
    return outputs, ctx


def _record(cls: type[Function], ctx: BackwardNode, args: tuple, outs: tuple) -> tuple:
    """Make `ctx` the grad_fn of the outputs and remember where input gradients must go.
    Returns the outputs (an input returned unchanged is replaced by an alias)."""
    Tensor = _Tensor
    ctx.sequence_nr = next(_sequence)

    positions, edges, meta = [], [], []
    wraps_numbers = cls.wraps_numbers
    no_edge = cls.non_differentiable_args
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            if no_edge and i in no_edge:
                continue
            positions.append(i)
            if not a._requires_grad:
                edges.append(_NO_EDGE)
            elif a.grad_fn is not None:
                edges.append((a.grad_fn, a._output_nr))
            else:
                edges.append(a._gradient_edge())
            data = a._data
            meta.append((data.shape, data.dtype))
        elif wraps_numbers and isinstance(a, (int, float)):
            positions.append(i)
            edges.append(_NO_EDGE)
            meta.append(None)
    ctx.next_functions = tuple(edges)
    ctx._input_positions = tuple(positions)
    ctx._input_meta = tuple(meta)

    non_differentiable = ctx._non_differentiable
    output_meta = []
    for nr, out in enumerate(outs):
        if not isinstance(out, Tensor):
            output_meta.append(None)
            continue
        if _is_one_of(out, args):
            # An input returned unchanged becomes a new tensor sharing its storage.
            out = out._alias()
            outs = outs[:nr] + (out,) + outs[nr + 1 :]
        data = out._data
        if data.is_floating_point() and not (
            non_differentiable and _is_one_of(out, non_differentiable)
        ):
            out.grad_fn = ctx
            out._requires_grad = True
            out._output_nr = nr
        output_meta.append((data.shape, data.dtype, data.device))
    ctx._output_meta = tuple(output_meta)
    if ctx._to_save:
        _pack_saved(ctx, outs)
    if grad_mode._state.anomaly:
        ctx.metadata["traceback_"] = traceback.format_stack()[:-2]
    return outs


_NO_EDGE = (None, 0)


def _link_views(cls: type[Function], args: tuple, outputs: Any) -> None:
    """Outputs that forward made with `a._view(...)` are views of the first argument `a`:
    remember their base and how to recreate them from it (in-place ops on views need both)."""
    source = args[0] if args else None
    if not isinstance(source, _Tensor):
        return
    single = not isinstance(outputs, tuple)
    for nr, out in enumerate((outputs,) if single else outputs):
        if isinstance(out, _Tensor) and out._is_view and out._view_fn is None:
            out._base = source if source._base is None else source._base
            out._view_fn = _view_function(cls, args[1:], nr, single, source._view_fn)


def _view_function(cls: type[Function], rest: tuple, nr: int, single: bool,
                   parent: Callable | None) -> Callable:  # fmt: skip
    def view_fn(base: Any) -> Any:
        viewed = base if parent is None else parent(base)
        out = cls.apply(viewed, *rest)
        return out if single else out[nr]

    # PyTorch forbids in-place changes to the views returned by split/unbind/chunk.
    view_fn.multiple_outputs = None if single else (nr, op_name(cls._backward_cls.__name__))
    return view_fn


def _is_one_of(obj: Any, candidates: tuple) -> bool:
    """Identity membership (`in` would call Tensor.__eq__)."""
    for candidate in candidates:
        if obj is candidate:
            return True
    return False


def _mark_inference(outputs: Any) -> None:
    Tensor = _Tensor
    for out in outputs if isinstance(outputs, tuple) else (outputs,):
        if isinstance(out, Tensor):
            out._inference = True


def _pack_saved(ctx: BackwardNode, outs: tuple) -> None:
    saved = []
    for t in ctx._to_save:
        if t is None:
            saved.append(None)
            continue
        if t._inference:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. To work around you can make a "
                "clone to get a normal tensor and use it in autograd."
            )
        output_nr = None
        for nr, out in enumerate(outs):
            if t is out:
                output_nr = nr
        saved.append(SavedTensor(t, output_nr))
    ctx._saved = tuple(saved)
    ctx._to_save = ()


def _with_op_context(error: Exception, node_name: str, args: tuple) -> Exception:
    """Add the op's name and its input shapes to an error raised while computing forward."""
    Tensor = _Tensor
    inputs = [a for a in args if isinstance(a, Tensor)]
    op = op_name(node_name).lower()
    shapes = ", ".join(str(list(t.shape)) for t in inputs)
    return type(error)(f"{op}: {error} (input shapes: {shapes})")
