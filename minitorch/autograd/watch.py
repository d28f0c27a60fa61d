"""Two small doors into the op machinery, for writing a tracer of your own (notebook 5).

- `watch_ops(on_op, on_read=None)`: while the block runs, every op calls
  `on_op(function, args, outputs)` right after it ran, and every Python read of a tensor's value
  calls `on_read(tensor, kind, value)`, `kind` one of `READ_KINDS`.
  It is the forward record's hook (NOTE [Forward record] in record.py) with callbacks instead of
  a program, so it sees exactly what `minitorch.jit` sees.
- `forward_with_ctx(function, args, needs_input_grad)`: run one op's `forward` on a fresh ctx
  and return `(outputs, ctx)`, with the ctx ready for `function.backward(ctx, *grads)`. This is
  what `Function.apply` does, minus the node it links into the graph: a replayed program can
  then call each op's backward itself. It lives in function.py (minitorch.jit uses it too) and
  is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitorch.autograd.function import Function, forward_with_ctx
from minitorch.autograd.record import Recorder

__all__ = ["READ_KINDS", "forward_with_ctx", "watch_ops"]

# The kinds of read `watch_ops` reports, each with the Python call that reads the value again out
# of a tensor (notebook 5's `READERS` spells out the same table). A read that shows the values
# without being one of these (`repr`, `format`, `numpy`: printing or leaving the library) is
# reported as a "tolist" read of the values it showed: the printed text and the array are
# functions of them, and a guard on them is then exact.
READ_KINDS = ("bool", "item", "float", "int", "index", "len", "tolist")
_SHOWN_AS_VALUES = frozenset({"repr", "format", "numpy"})


class watch_ops(Recorder):
    """`with watch_ops(on_op, on_read):` calls `on_op(function, args, outputs)` after each op
    (`function` is the op's `Function` class, e.g. `Mul`; `args` the arguments it was given;
    `outputs` a tuple of what it returned) and `on_read(tensor, kind, value)` after each Python
    read of a tensor (`kind` is one of `READ_KINDS`: `bool(t)`, `t.item()`, `float(t)`, `int(t)`,
    `operator.index(t)` (`range(t)`, `x[t]`), `len(t)` (also iteration), `t.tolist()`; printing
    and `numpy()` are reported as "tolist" with the values they showed).

    Ops and reads run as usual, graph included. The callbacks run unwatched, so their own tensor
    ops are not reported. Like every forward record, watches cannot be nested."""

    def __init__(
        self,
        on_op: Callable[[type[Function], tuple, tuple], None],
        on_read: Callable[[Any, str, Any], None] | None = None,
    ) -> None:
        super().__init__()
        self._on_op = on_op
        self._on_read = on_read

    def apply(self, function: type[Function], args: tuple) -> Any:
        outputs = super().apply(function, args)
        with self.paused():
            self._on_op(function, args, outputs if isinstance(outputs, tuple) else (outputs,))
        return outputs

    def read(self, tensor: Any, kind: str, reader: Callable[[Any], Any]) -> Any:
        value = super().read(tensor, kind, reader)
        if self._on_read is not None:
            with self.paused():
                if kind in _SHOWN_AS_VALUES:
                    self._on_read(tensor, "tolist", tensor.tolist())
                else:
                    self._on_read(tensor, kind, value)
        return value
