"""`Module`: the base class of every layer and model.

A module keeps three ordered registries, filled by plain attribute assignment:

- `_parameters`: `Parameter`s (learnable tensors), e.g. `self.weight = Parameter(...)`;
- `_buffers`: tensors that are state but not learned (running statistics, masks), added with
  `register_buffer`;
- `_modules`: submodules, e.g. `self.fc = Linear(3, 4)`.

Every walk over a model (`parameters()`, `state_dict()`, `to()`, `train()`, `repr`) follows these
registries recursively, in registration order, exactly as PyTorch does, so the names and their
order agree with the PyTorch model written the same way.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import torch

from minitorch.autograd.function import Function, RemovableHandle
from minitorch.autograd.grad_mode import is_grad_enabled, no_grad
from minitorch.nn.parameter import Parameter
from minitorch.tensor import Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What `load_state_dict(strict=False)` returns; its repr says when everything matched."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _indent(text: str, spaces: int) -> str:
    """Indent every line of `text` but the first (the first follows a "(name): " label)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _tensor_type_name(value: Any) -> str:
    """How PyTorch names a value's type in assignment errors: 'torch.FloatTensor', 'int'."""
    if isinstance(value, Tensor):
        return value.type()
    return type(value).__name__


class Module:
    """Base class for layers and models. Subclasses call `super().__init__()` first, assign
    parameters and submodules as attributes, and define `forward`; call the module itself
    (`model(x)`), not `forward`, so that hooks run."""

    training: bool

    def __init__(self) -> None:
        # object.__setattr__: our own __setattr__ needs these registries to exist already.
        set_plain = object.__setattr__
        set_plain(self, "training", True)
        set_plain(self, "_parameters", {})
        set_plain(self, "_buffers", {})
        set_plain(self, "_non_persistent_buffers_set", set())
        set_plain(self, "_modules", {})
        set_plain(self, "_forward_pre_hooks", [])
        set_plain(self, "_forward_hooks", [])
        set_plain(self, "_backward_pre_hooks", [])
        set_plain(self, "_backward_hooks", [])
        # None until a backward hook is registered; then True (full hooks) or False (the
        # deprecated register_backward_hook). A module may not mix the two kinds.
        set_plain(self, "_is_full_backward_hook", None)

    # ------------------------------------------------------------------------------------------
    # Running the module
    # ------------------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
        ):
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        """PyTorch's order: forward pre-hooks, the full backward hooks' wrapping of the inputs,
        forward, forward hooks, the wrapping of the outputs, then the deprecated backward hooks
        on the output's grad_fn."""
        for hook, with_kwargs in list(self._forward_pre_hooks):
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        full_hooks = list(self._backward_hooks) if self._is_full_backward_hook else []
        backward_hook = None
        if full_hooks or self._backward_pre_hooks:
            backward_hook = BackwardHook(self, full_hooks, list(self._backward_pre_hooks))
            args = backward_hook.setup_input_hook(args)
        output = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(self._forward_hooks):
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result
        if backward_hook is not None:
            if not isinstance(output, (Tensor, tuple)):
                warnings.warn(
                    "For backward hooks to be called, module output should be a Tensor or a "
                    f"tuple of Tensors but received {type(output)}",
                    stacklevel=3,
                )
            output = backward_hook.setup_output_hook(output)
        if self._backward_hooks and self._is_full_backward_hook is False:
            self._register_old_backward_hooks(args, output)
        return output

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """`hook(module, args)` runs before `forward`; a returned value replaces `args` (a
        non-tuple is wrapped in a tuple). With `with_kwargs=True` it is `hook(module, args,
        kwargs)` and may return `(args, kwargs)`."""
        return self._add_hook(self._forward_pre_hooks, (hook, with_kwargs), prepend)

    def register_forward_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """`hook(module, args, output)` runs after `forward`; a returned value replaces the
        output. With `with_kwargs=True` it is `hook(module, args, kwargs, output)`."""
        return self._add_hook(self._forward_hooks, (hook, with_kwargs), prepend)

    def register_full_backward_pre_hook(
        self, hook: Callable[[Module, tuple], Any], prepend: bool = False
    ) -> RemovableHandle:
        """`hook(module, grad_output)` runs once per backward through this module, as soon as
        the gradients of all its outputs are known and before the gradients of its inputs are
        computed. `grad_output` is a tuple with one entry per output (None for an output that
        is not a tensor or got no gradient); a returned tuple of the same length replaces it."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(
        self, hook: Callable[[Module, tuple, tuple], Any], prepend: bool = False
    ) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs once per backward through this module,
        when the gradients of its positional inputs have been computed. Both are tuples with
        one entry per positional input (output): None for an argument that is not a tensor
        (zeros for a tensor that does not require grad while another does). A returned tuple of
        the same length replaces `grad_input`. If no input requires grad, the hook runs when
        the output gradients are known, with `grad_input` all None (and a warning)."""
        self._set_backward_hook_kind(full=True)
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(
        self, hook: Callable[[Module, tuple, tuple], Any]
    ) -> RemovableHandle:
        """Deprecated (use `register_full_backward_hook`). `hook(module, grad_input,
        grad_output)` is registered on the grad_fn of the module's (first) output, so it sees
        that one node's gradients, which are the module's only when forward is a single op.
        PyTorch's FutureWarnings say when they are not."""
        self._set_backward_hook_kind(full=False)
        return self._add_hook(self._backward_hooks, hook, False)

    def _set_backward_hook_kind(self, full: bool) -> None:
        """A module's backward hooks are all full ones or all deprecated ones, as in PyTorch."""
        if self._is_full_backward_hook is (not full):
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them."
            )
        self._is_full_backward_hook = full

    def _register_old_backward_hooks(self, args: tuple, output: Any) -> None:
        """`register_backward_hook`: put the hooks on the grad_fn of the first output tensor."""
        first = output
        while not isinstance(first, Tensor):
            if isinstance(first, dict):
                first = next(v for v in first.values() if isinstance(v, Tensor))
            else:
                first = first[0]
        grad_fn = first.grad_fn
        if grad_fn is None:
            return
        for hook in self._backward_hooks:
            grad_fn.register_hook(functools.partial(hook, self))
        _warn_old_backward_hook(args, output, grad_fn)

    @staticmethod
    def _add_hook(hooks: list, entry: Any, prepend: bool) -> RemovableHandle:
        if prepend:
            hooks.insert(0, entry)
        else:
            hooks.append(entry)
        return RemovableHandle(hooks, entry)

    # ------------------------------------------------------------------------------------------
    # Registering parameters, buffers and submodules
    # ------------------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_tensor_type_name(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_tensor_type_name(value)}' as child module '{name}' "
                    "(torch.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_tensor_type_name(value)}' as buffer '{name}' "
                    "(torch.Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Remove `name` from every registry and the instance dict (before re-registering)."""
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails, i.e. for registered names.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            entries = d.get(registry)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        names.update(self._parameters, self._buffers, self._modules)
        return sorted(names)

    def _check_new_name(self, kind: str, name: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder, as `Linear(bias=False)` does for `bias`)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_new_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_tensor_type_name(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter. Persistent buffers are saved in
        `state_dict()`; all buffers move with `to()`."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_new_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{_tensor_type_name(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule under `name` (what `self.name = module` does)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path such as `"encoder.layers.0"` ("" is the module)."""
        module = self
        for part in target.split(".") if target else ():
            if part not in module._modules or module._modules[part] is None:
                raise AttributeError(f"{module._get_name()} has no attribute `{part}`")
            module = module._modules[part]
        return module

    # ------------------------------------------------------------------------------------------
    # Walking the model
    # ------------------------------------------------------------------------------------------
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first, each once (unless remove_duplicate=False)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            child_prefix = f"{prefix}.{name}" if prefix else name
            yield from module.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules, each once."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Any]]:
        seen = set()
        if recurse:
            walk = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            walk = [(prefix, self)]
        for module_prefix, module in walk:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs in registration order; a shared parameter once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call `fn` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------------------------------
    # Modes and gradients
    # ------------------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout drops) on this module and all below it."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: `train(False)`."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros."""
        for param in self.parameters():
            grad = param._grad
            if grad is None:
                continue
            if set_to_none:
                param._grad = None
            else:
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    # ------------------------------------------------------------------------------------------
    # Moving and casting
    # ------------------------------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace the storage of every parameter (and its grad) and every buffer by `fn(t)`.
        Parameters stay the same objects, so optimizers built earlier still hold them."""
        for module in self.children():
            module._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)
                if param._grad is not None:
                    param._grad.data = fn(param._grad)
            for name, buffer in self._buffers.items():
                if buffer is not None:
                    self._buffers[name] = fn(buffer)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast parameters and buffers in place: `to("cuda")`, `to(torch.float64)`,
        `to(device, dtype)`, `to(tensor)`. Only floating point tensors change dtype."""
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )

        def convert(t: Tensor) -> Tensor:
            floating = t.is_floating_point() or t.dtype.is_complex
            return t.to(device=device, dtype=dtype if floating else None)

        return self._apply(convert)

    def cuda(self, device: Any = None) -> Module:
        return self.to("cuda" if device is None else device)

    def cpu(self) -> Module:
        return self.to("cpu")

    def _cast_floating(self, dtype: torch.dtype) -> Module:
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def double(self) -> Module:
        return self._cast_floating(torch.float64)

    def float(self) -> Module:
        return self._cast_floating(torch.float32)

    def half(self) -> Module:
        return self._cast_floating(torch.float16)

    def bfloat16(self) -> Module:
        return self._cast_floating(torch.bfloat16)

    # ------------------------------------------------------------------------------------------
    # Saving and loading
    # ------------------------------------------------------------------------------------------
    def state_dict(
        self, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """An OrderedDict of every parameter and persistent buffer, detached (unless keep_vars),
        keyed by dotted names such as `"fc.weight"`."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(
        self, state_dict: dict, strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy values from `state_dict` into this model's parameters and buffers (in place,
        without recording). A shape mismatch is always an error; with `strict=True` missing and
        unexpected keys are errors too. Returns the missing and unexpected keys."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        for prefix, module in self._prefixed_modules():
            module._load_own_state(state_dict, prefix, assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            details = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t{details}"
            )
        return _IncompatibleKeys(missing, unexpected)

    def _prefixed_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """Every module below this one with the key prefix of its entries ("fc." ...)."""
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module._prefixed_modules(prefix + name + ".")

    def _load_own_state(
        self,
        state_dict: dict,
        prefix: str,
        assign: bool,
        missing: list,
        unexpected: list,
        errors: list,
    ) -> None:
        """Load this module's own parameters and persistent buffers (not its children's)."""
        own = {name: p for name, p in self._parameters.items() if p is not None}
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                own[name] = b
        for name, current in own.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if isinstance(value, torch.Tensor):  # a state dict saved by PyTorch itself
                value = Tensor._make(value.detach())
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(value)}"
                )
                continue
            if value.shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {current.shape}."
                )
                continue
            if assign:
                self._assign_loaded(name, current, value)
            else:
                with no_grad():
                    current.copy_(value)
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            first = key[len(prefix) :].split(".", 1)[0]
            if first not in self._modules and first not in own:
                unexpected.append(key)

    def _assign_loaded(self, name: str, current: Tensor, value: Tensor) -> None:
        if isinstance(current, Parameter):
            self._parameters[name] = Parameter(value, current.requires_grad)
        else:
            self._buffers[name] = value

    # ------------------------------------------------------------------------------------------
    # Printing
    # ------------------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The layer's settings shown inside its repr, e.g. `in_features=3, out_features=4`."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): {_indent(repr(module), 2)}" for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        if not lines:
            body = ""
        elif len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        else:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _parse_to(args: tuple, kwargs: dict) -> tuple[Any, torch.dtype | None]:
    """The (device, dtype) asked for by `Module.to(...)`'s flexible arguments."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, (Tensor, torch.Tensor)):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, bool):  # non_blocking given positionally
            continue
        elif isinstance(arg, (str, int, torch.device)):
            device = torch.device(arg)
        else:
            raise TypeError(f"to() received an invalid argument of type {type(arg).__name__}")
    return device, dtype


# ----------------------------------------------------------------------------------------------
# Backward hooks
# ----------------------------------------------------------------------------------------------
# NOTE [Module backward hooks]
# A module is not a node of the graph: its forward may record many ops, or none. So, as
# PyTorch does, `__call__` brackets forward between two identity ops, BackwardHookFunction:
# one applied to the tensors among the positional inputs, one to the tensors among the outputs.
# Their nodes mark where gradients enter and leave the module:
#
#     inputs -> [BackwardHookFunctionBackward] -> forward's ops -> [BackwardHookFunctionBackward]
#
# - The output node runs once the gradients of *all* the outputs are complete (the engine's
#   dependency counting guarantees it). A prehook on it stores grad_output, runs the
#   module's backward pre-hooks (which may replace it) and passes the result on.
# - The input node runs once the gradients of all the inputs are complete. A hook on it (run
#   after it) calls the full backward hooks with (grad_input, grad_output); a returned tuple
#   replaces grad_input. Then grad_output is cleared, so each backward through the module
#   fires the hooks once.
# - If no input requires grad there is no input node: the output node's prehook calls the full
#   hooks itself, with grad_input all None, and warns.
# Non-tensor arguments are skipped by the identity ops and show up as None in the tuples.
class BackwardHookFunction(Function):
    """The identity on any number of tensors; its node is where module backward hooks attach.
    Outputs of inputs that do not require grad do not require grad either."""

    @staticmethod
    def forward(ctx: Any, *args: Tensor) -> tuple:
        outputs = tuple(a._alias() for a in args)
        ctx.mark_non_differentiable(*[o for a, o in zip(args, outputs) if not a.requires_grad])
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        return grads


class BackwardHook:
    """One call of a module with backward hooks: wraps its inputs and outputs in
    BackwardHookFunction and calls the user's hooks from their nodes. NOTE [Module backward
    hooks]."""

    def __init__(self, module: Module, user_hooks: list, user_pre_hooks: list) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index: list[int] | None = None
        self.output_tensors_index: list[int] | None = None

    @staticmethod
    def _pack_with_none(indices: list[int], values: tuple, size: int) -> tuple:
        """The tensors' gradients put back at their argument positions, None elsewhere."""
        packed: list = [None] * size
        for index, value in zip(indices, values):
            packed[index] = value
        return tuple(packed)

    @staticmethod
    def _apply_on_tensors(args: tuple, on_node: Callable) -> tuple[tuple, list[int] | None]:
        """Pass the tensors among `args` through one BackwardHookFunction and hand its node to
        `on_node`. Nothing happens (indices None) unless grad mode is on and one of them
        requires grad."""
        indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in indices]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        on_node(next(t.grad_fn for t in new_tensors if t.grad_fn is not None))
        replaced = list(args)
        for index, tensor in zip(indices, new_tensors):
            replaced[index] = tensor
        return (tuple(replaced) if type(args) is tuple else type(args)(*replaced)), indices

    def setup_input_hook(self, args: tuple) -> tuple:
        def on_node(node: Any) -> None:
            node.register_hook(self._input_hook)

        result, self.input_tensors_index = self._apply_on_tensors(args, on_node)
        self.n_inputs = len(args)
        return result

    def setup_output_hook(self, output: Any) -> Any:
        def on_node(node: Any) -> None:
            node.register_prehook(self._output_hook)

        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        result, self.output_tensors_index = self._apply_on_tensors(outputs, on_node)
        self.n_outputs = len(outputs)
        return result if is_tuple else result[0]

    def _output_hook(self, grads: tuple) -> tuple | None:
        """Prehook of the output node: grad_output is complete."""
        if all(g is None for g in grads):
            return None
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grads, self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            result = pre_hook(self.module, self.grad_outputs)
            if result is None:
                continue
            if len(result) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(result)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = result
        grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                stacklevel=6,  # the caller of backward()
            )
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                result = hook(self.module, grad_inputs, self.grad_outputs)
                if result is not None and not (
                    isinstance(result, tuple) and all(r is None for r in result)
                ):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_tensors_index)

    def _input_hook(self, grad_inputs: tuple, _grad_outputs: tuple) -> tuple | None:
        """Hook of the input node: grad_input is computed."""
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs (e.g. a
            # double backward): PyTorch does not call the hooks then.
            return None
        result = self._pack_with_none(self.input_tensors_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            replaced = hook(self.module, result, self.grad_outputs)
            if replaced is None:
                continue
            if len(replaced) != len(result):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(replaced)}, but expected {len(result)}"
                )
            result = replaced
        self.grad_outputs = None
        return tuple(result[i] for i in self.input_tensors_index)


def _warn_old_backward_hook(inputs: tuple, output: Any, grad_fn: Any) -> None:
    """PyTorch's FutureWarnings for `register_backward_hook` when the output's grad_fn does not
    see all of the module's gradients."""
    if isinstance(output, Tensor):
        output = (output,)
    elif not (isinstance(output, tuple) and all(isinstance(r, Tensor) for r in output)):
        warnings.warn(
            "Using non-full backward hooks on a Module that does not return a single Tensor or "
            "a tuple of Tensors is deprecated and will be removed in future versions. This hook "
            "will be missing some of the grad_output. Please use register_full_backward_hook to "
            "get the documented behavior.",
            FutureWarning,
            stacklevel=5,  # the caller of the module
        )
        return
    if not all(isinstance(i, Tensor) for i in inputs):
        warnings.warn(
            "Using non-full backward hooks on a Module that does not take as input a single "
            "Tensor or a tuple of Tensors is deprecated and will be removed in future versions. "
            "This hook will be missing some of the grad_input. Please use "
            "register_full_backward_hook to get the documented behavior.",
            FutureWarning,
            stacklevel=5,  # the caller of the module
        )
        return
    output_nodes = {r.grad_fn for r in output if r.grad_fn is not None}
    if len(output_nodes) == 0 or (len(output_nodes) == 1 and grad_fn not in output_nodes):
        warnings.warn(
            "Using a non-full backward hook when outputs are nested in python data structure is "
            "deprecated and will be removed in future versions. This hook will be missing some "
            "grad_output.",
            FutureWarning,
            stacklevel=5,  # the caller of the module
        )
    elif len(output_nodes) > 1:
        warnings.warn(
            "Using a non-full backward hook when outputs are generated by different autograd "
            "Nodes is deprecated and will be removed in future versions. This hook will be "
            "missing some grad_output. Please use register_full_backward_hook to get the "
            "documented behavior.",
            FutureWarning,
            stacklevel=5,  # the caller of the module
        )
    else:
        input_nodes = {i.grad_fn for i in inputs if i.grad_fn is not None}
        if input_nodes != {node for node, _ in grad_fn.next_functions}:
            warnings.warn(
                "Using a non-full backward hook when the forward contains multiple autograd "
                "Nodes is deprecated and will be removed in future versions. This hook will be "
                "missing some grad_input. Please use register_full_backward_hook to get the "
                "documented behavior.",
                FutureWarning,
                stacklevel=5,
            )
