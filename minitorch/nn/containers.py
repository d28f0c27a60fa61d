"""Containers that register the modules they hold: `Sequential`, `ModuleList`, `ModuleDict`.

A plain Python list of layers is invisible to `parameters()` and `state_dict()`; these are not.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from minitorch.nn.module import Module, _indent


def _index(index: int, size: int) -> int:
    """A position in [0, size), with PyTorch's error for one out of range."""
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of range")
    return index % size


class Sequential(Module):
    """Runs its modules one after another: `Sequential(Linear(2, 3), ReLU())(x)`.

    Built from modules (named "0", "1", ...) or from an OrderedDict of named modules. Indexable
    (a slice gives a Sequential keeping the names), iterable, `len`, `append`.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(index, slice):
            return type(self)(OrderedDict(items[index]))
        return items[_index(index, len(items))][1]

    def __setitem__(self, index: int, module: Module) -> None:
        name = list(self._modules)[_index(index, len(self._modules))]
        self.add_module(name, module)

    def __delitem__(self, index: int | slice) -> None:
        names = list(self._modules)
        doomed = names[index] if isinstance(index, slice) else [names[_index(index, len(names))]]
        for name in doomed:
            del self._modules[name]
        # Renumber so that names stay "0", "1", ... as PyTorch does.
        modules = list(self._modules.values())
        self._modules.clear()
        for i, module in enumerate(modules):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)
        return self


class ModuleList(Module):
    """A list of modules, registered under "0", "1", ... Has no forward: index it or loop."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index: int | slice) -> Any:
        values = list(self._modules.values())
        if isinstance(index, slice):
            return type(self)(values[index])
        return values[_index(index, len(values))]

    def __setitem__(self, index: int, module: Module) -> None:
        self.add_module(str(_index(index, len(self))), module)

    def __delitem__(self, index: int | slice) -> None:
        values = list(self._modules.values())
        if isinstance(index, slice):
            del values[index]
        else:
            del values[_index(index, len(values))]
        self._modules.clear()
        for i, module in enumerate(values):
            self._modules[str(i)] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return type(self)([*self, *other])

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable, but got "
                + type(modules).__name__
            )
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(values):
            self.add_module(str(i), m)

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __repr__(self) -> str:
        """Like PyTorch: runs of identical layers are shown once, e.g. `(0-2): 3 x Linear(...)`."""
        entries = [repr(m) for m in self._modules.values()]
        if not entries:
            return "ModuleList()"
        lines, start = [], 0
        for end in range(1, len(entries) + 1):
            if end < len(entries) and entries[end] == entries[start]:
                continue
            count = end - start
            label = f"({start})" if count == 1 else f"({start}-{end - 1}): {count} x"
            text = f"{label}: {entries[start]}" if count == 1 else f"{label} {entries[start]}"
            lines.append(_indent(text, 2))
            start = end
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules (insertion order kept), registered under their keys."""

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        # A mapping (dict, ModuleDict) gives its items; anything else is a sequence of pairs.
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module
