"""`Optimizer`: the base class every optimizer in minitorch.optim derives from.

An optimizer holds `param_groups` (a list of dicts, each with its `params` and its options such
as `lr`) and `state` (a dict from each parameter to the buffers it keeps between steps, e.g. a
momentum buffer). `step()` updates every parameter that has a gradient; parameters whose
`.grad` is None are skipped, exactly like torch.optim.

How a step changes a parameter: in place, on its storage, outside the graph. That is what
`with no_grad(): p -= lr * p.grad` does too, but without recording or building temporaries
through the graph machinery. Each updated parameter's version counter is bumped, so a graph
that saved the old value and is backpropagated after the step raises the usual "modified by an
inplace operation" error, as in PyTorch.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

import torch

from minitorch.autograd.grad_mode import enable_grad
from minitorch.autograd.record import unrecorded
from minitorch.tensor import Tensor


class Optimizer:
    """Base class: parameter groups, per-parameter state, `zero_grad`, `state_dict`.

    Subclasses pass their default options to `__init__` and implement `_update(param, grad,
    state, group)`, which changes the storage `param` (a torch tensor) in place using `grad`
    (also storage) and the parameter's `state` dict.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {_typename(params)}"
            )
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing options take the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    f"{_typename(param)}"
                )
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's `.grad`: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient. `closure`, if given, recomputes and
        returns the loss (it runs with grad mode on); its result is returned."""
        # The update works on storage: a forward record cannot replay it (NOTE [Forward record]).
        with unrecorded(f"{type(self).__name__}.step()"):
            loss = None
            if closure is not None:
                with enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state.get(p, {})  # .get: no empty entry for stateless updates
                    self._update(p._data, p.grad._data, state, group)
                    p._version_counter.value += 1  # the parameter changed in place
                    if state and p not in self.state:
                        self.state[p] = state
        return loss

    def _update(
        self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict
    ) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement _update")

    # Saving and restoring ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """`{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`: parameters
        are replaced by their position across all groups, as in PyTorch, so the dict can be
        saved and loaded into an optimizer over other (same-shaped) parameters."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore options and state saved by `state_dict()`. Groups must have the same sizes.
        State tensors are copied (cast to each parameter's dtype and device, except `step`)."""
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(
            len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)
        ):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        by_index = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved_groups),
                chain.from_iterable(g["params"] for g in self.param_groups),
            )
        )
        self.state = defaultdict(dict)
        for key, values in state_dict["state"].items():
            if key in by_index:
                param = by_index[key]
                self.state[param] = {k: _cast_state(param, k, v) for k, v in values.items()}
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
        self.param_groups = saved_groups

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"


def _cast_state(param: Tensor, key: str, value: Any) -> Any:
    if not isinstance(value, (Tensor, torch.Tensor)):
        return copy.deepcopy(value)
    data = value._data if isinstance(value, Tensor) else value.detach()  # torch's state too
    if key != "step" and param.is_floating_point():
        data = data.to(dtype=param.dtype, device=param.device)
    return Tensor._make(data.clone())


def _typename(obj: Any) -> str:
    cls = type(obj)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def check_unsupported(**options: Any) -> None:
    """PyTorch's `differentiable`, `fused` and `capturable` switches change how a step runs on
    special hardware or inside a graph; minitorch accepts them only at their default (off)."""
    for name, value in options.items():
        if value:
            raise ValueError(f"minitorch optimizers do not support {name}=True")


def state_buffer(param: torch.Tensor) -> Tensor:
    """A zero buffer shaped like the parameter, kept in `state` as a minitorch tensor."""
    return Tensor._make(torch.zeros_like(param))


def step_counter() -> Tensor:
    """The step count, a 0-d float32 tensor as in torch.optim's state."""
    return Tensor._make(torch.tensor(0.0, dtype=torch.float32))


def check_non_negative(**values: float) -> None:
    """PyTorch's errors for negative options, e.g. `Invalid learning rate: -1`."""
    words = {
        "lr": "learning rate",
        "eps": "epsilon value",
        "momentum": "momentum value",
        "weight_decay": "weight_decay value",
        "alpha": "alpha value",
    }
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {words[name]}: {value}")
