"""The backward engine: walks the graph from the outputs to the leaves without recursion.

1. Discover every node reachable from the roots and count, for each node, how many edges point
   at it (its dependencies).
2. Take a ready node: all its consumers have run, so its gradient is complete. Among ready nodes,
   the most recently created runs first, as in PyTorch.
3. Run it. Tensor hooks, retained grads and prehooks see its gradient first. An `AccumulateGrad`
   node then adds the gradient into its leaf's `.grad`; any other node calls its backward, runs
   its hooks and frees its saved tensors (unless retain_graph).
4. Add each gradient it returns to the buffer of the next node, whose count of dependencies goes
   down by one; at zero that node is ready.

See NOTE [Dependency counting and the ready queue] below. `grad()` and `backward(inputs=...)`
capture the gradient arriving at given tensors instead, and only run the nodes that lead to them.
"""

from __future__ import annotations

import contextlib
import heapq
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch

from minitorch.autograd import grad_mode
from minitorch.autograd.function import AccumulateGrad, Node

if TYPE_CHECKING:
    from minitorch.tensor import Tensor

Edge = tuple[Node, int]
_Tensor: Any = None  # minitorch.tensor.Tensor, filled in by that module (it imports this one)


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Add the gradients of `tensors` (weighted by `grad_tensors`) to the leaves' `.grad`.

    With `inputs`, only those tensors get their `.grad` updated (non-leaves included).
    """
    tensors = _as_list(tensors)
    roots, root_grads = _roots(tensors, _as_list(grad_tensors, len(tensors)))
    keep = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        _execute(roots, root_grads, keep, create_graph, targets=None)
        return
    inputs = list({id(t): t for t in _as_list(inputs)}.values())  # each tensor once
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    edges = [t._gradient_edge() for t in inputs]
    captured = _execute(roots, root_grads, keep, create_graph, edges, run_targets=True)
    for t, g in zip(inputs, captured):
        # Leaves (and tensors that retain their grad) already received it while the engine ran.
        if g is not None and t.grad_fn is not None and not t._retains_grad:
            _accumulate(t, g, create_graph)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Return the gradients of `outputs` with respect to `inputs`; `.grad` is left untouched."""
    Tensor = _Tensor
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots, root_grads = _roots(outputs, _as_list(grad_outputs, len(outputs)))
    keep = create_graph if retain_graph is None else retain_graph
    captured = _execute(roots, root_grads, keep, create_graph, [t._gradient_edge() for t in inputs])
    result = []
    for index, (t, g) in enumerate(zip(inputs, captured)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {index} appears to not have been used "
                    "in the graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = Tensor._make(torch.zeros_like(t._data))
        result.append(g)
    return tuple(result)


# ----------------------------------------------------------------------------------------------
# Roots
# ----------------------------------------------------------------------------------------------
def _as_list(value: Any, length: int | None = None) -> list:
    Tensor = _Tensor
    if value is None:
        return [None] * length if length is not None else []
    if isinstance(value, Tensor):
        return [value]
    return list(value)


def _roots(outputs: list, grads: list) -> tuple[list[Edge], list[Tensor]]:
    Tensor = _Tensor
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"grad can be implicitly created only for scalar outputs: got {len(outputs)} outputs "
            f"and {len(grads)} gradients"
        )
    edges, root_grads = [], []
    for index, (out, g) in enumerate(zip(outputs, grads)):
        if not out._requires_grad:
            raise RuntimeError(
                f"element {index} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs (got an output of "
                    f"shape {list(out.shape)}; pass gradient= with that shape)"
                )
            g = Tensor._make(torch.ones_like(out._data))
        elif not isinstance(g, Tensor):
            g = Tensor._make(torch.as_tensor(g, dtype=out.dtype, device=out.device))
        if g.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{index}] has a shape of {g.shape} and "
                f"output[{index}] has a shape of {out.shape}."
            )
        edges.append(out._gradient_edge())
        root_grads.append(g)
    return edges, root_grads


# ----------------------------------------------------------------------------------------------
# The walk
# ----------------------------------------------------------------------------------------------
# NOTE [Dependency counting and the ready queue]
# A node may run only once its gradient is complete: after every node that consumes one of its
# outputs (every node with an edge to it) has run and sent its share. Rather than sorting the
# graph first, the engine counts and waits (Kahn's algorithm, as in notebook 2):
#
# - `_count_dependencies` walks the graph once from the roots, with a list as a stack (no
#   recursion, so a 100,000-op chain is fine), and counts for each node the edges pointing at
#   it. `x * x` gives its input two edges, so two dependencies.
# - Each time a node has run, the count of every child goes down by one per edge, whether a
#   gradient went along that edge or not (None, or a part of the graph that `grad()` does not
#   need): a count tracks consumers that have run, not gradients received. At zero the child is
#   ready. A root that another root leads to waits for it like any other node.
# - Gradients that arrive before their node is ready wait in `buffers`, one slot per output of
#   the node, summed as they come (`_add_to_buffer`): fan-out in forward is a sum in backward.
# - Ready nodes wait in a heap keyed by `-sequence_nr`, so among them the most recently recorded
#   runs first, as in PyTorch. A leaf's `AccumulateGrad` has a sequence number above every op's
#   (function.py), so a leaf's `.grad` is written as soon as its gradient is complete. Any
#   topological order gives the same gradients; this one also gives PyTorch's order of hooks.
def _count_dependencies(roots: Iterable[Node]) -> dict[Node, int]:
    """For every node reachable from the roots: how many edges of the graph point at it."""
    dependencies: dict[Node, int] = {}
    seen = set(roots)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            dependencies[child] = dependencies.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return dependencies


def _execute(
    roots: list[Edge],
    root_grads: list[Tensor],
    keep_graph: bool,
    create_graph: bool,
    targets: list[Edge] | None,
    run_targets: bool = False,
) -> list[Tensor | None]:
    """Run backward from `roots`. Without `targets`, accumulate into every leaf reached. With
    `targets`, run only the nodes leading to them and return the gradient arriving at each
    target edge; the targets' own nodes run too (so leaves among them accumulate) only if
    `run_targets`, as PyTorch does for `backward(inputs=...)` but not for `grad()`.

    The loop is the module docstring's four steps. Features that most nodes do not use (hooks,
    retain_grad, targets) are tested inline, so a node without them pays no function call.
    """
    # See NOTE [Dependency counting and the ready queue]
    root_nodes = [node for node, _ in roots]
    # 1. Count the dependencies of every node.
    dependencies = _count_dependencies(root_nodes)
    buffers: dict[Node, list] = {}
    for (node, nr), g in zip(roots, root_grads):
        _add_to_buffer(buffers, node, nr, g)
    plan = None if targets is None else _TargetPlan(root_nodes, targets, run_targets)
    ready: list = []
    for node in dict.fromkeys(root_nodes):  # each root once
        if dependencies.get(node, 0) == 0:
            heapq.heappush(ready, (-node.sequence_nr, node))

    with _grad_mode_for_backward(create_graph):
        while ready:
            # 2. Take a ready node: its gradient is complete.
            node = heapq.heappop(ready)[1]
            grads = buffers.pop(node, None) or [None] * _output_count(node)
            is_leaf = isinstance(node, AccumulateGrad)
            runs = plan is None or node in plan.runnable

            # 3. Run it: first what sees its gradient (tensor hooks, retain_grad, prehooks) ...
            if (
                node._prehooks
                or node._tensor_prehooks
                or node._retained
                or (is_leaf and node.variable._hooks)
            ):
                # A node that does not run still applies the tensor hooks of its outputs (a
                # target's own hooks), but not its node prehooks: PyTorch's behaviour.
                grads = _run_prehooks(node, grads, create_graph, node_prehooks=runs)
            if plan is not None:
                plan.capture(node, grads)
            # ... then, for a leaf, accumulation into `.grad` ...
            if is_leaf:
                if runs:
                    _run_accumulate(node, grads[0], create_graph)
                continue  # a leaf's node has no next_functions
            # ... or else the node's backward and its hooks. A node that no gradient reached
            # passes None on without running.
            if runs and _any_gradient(grads):
                grad_inputs = _call_node(node, grads)
                if node._hooks:
                    grad_inputs = _run_hooks(node, grad_inputs, grads)
            else:
                grad_inputs = (None,) * len(node.next_functions)
            if not keep_graph:
                node.release_saved()

            # 4. Pass each input gradient on; a child whose count reaches zero is ready.
            for (child, nr), g in zip(node.next_functions, grad_inputs):
                if child is None:
                    continue
                if g is not None and (plan is None or child in plan.leading):
                    _add_to_buffer(buffers, child, nr, g)
                dependencies[child] -= 1
                if dependencies[child] == 0:
                    heapq.heappush(ready, (-child.sequence_nr, child))
    return [] if plan is None else plan.captured


# ----------------------------------------------------------------------------------------------
# Gradient buffers
# ----------------------------------------------------------------------------------------------
def _output_count(node: Node) -> int:
    return len(node._output_meta)


def _add_to_buffer(buffers: dict, node: Node, nr: int, grad: Tensor) -> None:
    """Sum the gradients arriving at one output of a node (fan-out in forward = sum here)."""
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * _output_count(node)
    current = buffer[nr]
    if current is None:
        buffer[nr] = grad
    elif grad_mode._state.grad_enabled:  # create_graph: the sum is part of the new graph
        buffer[nr] = current + grad
    else:
        buffer[nr] = _Tensor._make(current._data + grad._data)


def _any_gradient(grads: list) -> bool:
    """True if at least one output of the node received a gradient."""
    for g in grads:
        if g is not None:
            return True
    return False


# ----------------------------------------------------------------------------------------------
# create_graph
# ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _grad_mode_for_backward(create_graph: bool) -> Iterator[None]:
    """Backward formulas are minitorch ops: with `create_graph` they are recorded (so the
    gradients can be differentiated again), otherwise they run in no-grad mode. The previous
    grad mode comes back on exit."""
    previous = grad_mode._state.grad_enabled
    grad_mode._state.grad_enabled = create_graph
    try:
        yield
    finally:
        grad_mode._state.grad_enabled = previous


# ----------------------------------------------------------------------------------------------
# grad() and backward(inputs=...)
# ----------------------------------------------------------------------------------------------
class _TargetPlan:
    """Where `grad()` and `backward(inputs=...)` want gradients, and which part of the graph has
    to run to produce them.

    `runnable`: the nodes that run (the others only pass None on). `leading`: the nodes from
    which a target can be reached; gradients are buffered for them only. `captured[i]`: the
    gradient that arrived at the target edge `targets[i]` (None if none did).
    """

    def __init__(self, root_nodes: list[Node], targets: list[Edge], run_targets: bool) -> None:
        self._capture_at: dict[Edge, list[int]] = {}  # an input may be listed more than once
        for index, edge in enumerate(targets):
            self._capture_at.setdefault(edge, []).append(index)
        goals = {node for node, _ in targets}
        leading = _nodes_leading_to(root_nodes, goals)
        # A target node itself only needs to run if other targets lie behind it, or when asked
        # to (`backward(inputs=...)`, so that leaves among the targets accumulate).
        runnable = {n for n in leading if any(c in leading for c, _ in n.next_functions)}
        if run_targets:
            runnable |= goals
        self.leading = leading
        self.runnable = runnable
        self.captured: list[Tensor | None] = [None] * len(targets)

    def capture(self, node: Node, grads: list) -> None:
        """Keep the gradients of `node`'s outputs that are target edges."""
        for nr, g in enumerate(grads):
            for index in self._capture_at.get((node, nr), ()):
                self.captured[index] = g


def _nodes_leading_to(roots: Iterable[Node], goals: set[Node]) -> set[Node]:
    """The nodes from which some goal node can be reached (goals included), found without
    recursion by visiting every node after all its children (post-order)."""
    leading: set[Node] = set()
    visited: set[Node] = set()
    for root in roots:
        if root in visited:
            continue
        visited.add(root)
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and child not in visited:
                    visited.add(child)
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                stack.pop()
                if node in goals or any(c in leading for c, _ in node.next_functions):
                    leading.add(node)
    return leading


# ----------------------------------------------------------------------------------------------
# Hooks and retain_grad
# ----------------------------------------------------------------------------------------------
def _run_prehooks(node: Node, grads: list, create_graph: bool, node_prehooks: bool) -> list:
    """What sees a node's gradient before the node runs, in PyTorch's order: the hooks of the
    tensors it is the gradient of, retained grads, then (if `node_prehooks`) the node's
    prehooks. A hook that returns a value replaces the gradient."""
    if isinstance(node, AccumulateGrad):
        hooks = node.variable._hooks
        if hooks:
            grads = _apply_tensor_hooks(hooks, grads, 0)
    for nr, hooks in node._tensor_prehooks.items():
        grads = _apply_tensor_hooks(hooks, grads, nr)
    if node._retained:
        _retain_grads(node, grads, create_graph)
    for hook in node._prehooks if node_prehooks else ():
        result = hook(tuple(grads))
        if result is not None:
            grads = list(result)
    return grads


def _apply_tensor_hooks(hooks: list, grads: list, nr: int) -> list:
    """`tensor.register_hook`: each hook sees (and may replace) the gradient of output `nr`."""
    if grads[nr] is None:
        return grads
    grads = list(grads)
    for hook in list(hooks):
        result = hook(grads[nr])
        if result is not None:
            grads[nr] = result
    return grads


def _retain_grads(node: Node, grads: list, create_graph: bool) -> None:
    """`retain_grad()`: each non-leaf output of `node` that asked for it (and is still alive)
    gets its gradient added to its `.grad`, after its tensor hooks ran."""
    for nr, ref in node._retained.items():
        tensor = ref()
        if tensor is not None and grads[nr] is not None:
            _accumulate(tensor, grads[nr], create_graph)


def _run_hooks(node: Node, grad_inputs: tuple, grads: list) -> tuple:
    """`node.register_hook`: each hook sees the node's input and output gradients after it ran;
    one that returns a tuple replaces the input gradients."""
    for hook in node._hooks:
        result = hook(grad_inputs, tuple(grads))
        if result is not None:
            grad_inputs = tuple(result)
    return grad_inputs


# ----------------------------------------------------------------------------------------------
# Leaves
# ----------------------------------------------------------------------------------------------
def _run_accumulate(node: AccumulateGrad, grad: Tensor | None, create: bool) -> None:
    """Run a leaf's `AccumulateGrad` node: add `grad` into the leaf's `.grad`, then call the
    node's hooks. Nothing happens if no gradient reached the leaf."""
    if grad is None:
        return
    _accumulate(node.variable, grad, create)
    for hook in node._hooks:
        hook((), (grad,))


def _accumulate(tensor: Tensor, grad: Tensor, create_graph: bool) -> None:
    """Add `grad` into `tensor.grad`. The first gradient is copied, so that no two tensors ever
    share the storage of their `.grad`; with create_graph the gradient keeps its graph."""
    Tensor = _Tensor
    if grad.dtype != tensor.dtype:
        grad = grad.to(tensor.dtype)
    current = tensor._grad
    if create_graph:
        tensor._grad = grad if current is None else current + grad
    elif current is None:
        tensor._grad = Tensor._make(grad._data.clone(memory_format=torch.contiguous_format))
    elif current._requires_grad:
        tensor._grad = Tensor._make(current._data + grad._data)
    else:
        current._data.add_(grad._data)
        current._version_counter.value += 1


# ----------------------------------------------------------------------------------------------
# Calling a node's backward
# ----------------------------------------------------------------------------------------------
def _call_node(node: Node, grads: list) -> tuple:
    """Call the node's backward on its output gradients (missing ones become zeros unless the
    node turned `materialize_grads` off). Saved tensors are checked against in-place changes
    when the backward unpacks them (function.py), not here."""
    Tensor = _Tensor
    if node.materialize_grads:
        for nr, g in enumerate(grads):
            if g is None:
                shape, dtype, device = node._output_meta[nr]
                grads[nr] = Tensor._make(torch.zeros(shape, dtype=dtype, device=device))
    if grad_mode._state.anomaly:
        return _call_node_detecting_anomalies(node, grads)
    return node.apply_backward(tuple(grads))


def _call_node_detecting_anomalies(node: Node, grads: list) -> tuple:
    """`detect_anomaly()`: fail if the node returns NaN (unless check_nan is off) and, on any
    error in its backward, warn with the traceback of the forward call that recorded it."""
    try:
        grad_inputs = node.apply_backward(tuple(grads))
        for index, g in enumerate(grad_inputs):
            if (
                grad_mode._state.anomaly_check_nan
                and g is not None
                and bool(torch.isnan(g._data).any())
            ):
                raise RuntimeError(
                    f"Function '{node.name()}' returned nan values in its {index}th output."
                )
    except Exception:
        forward_trace = "".join(node.metadata.get("traceback_", ["(not recorded)\n"]))
        warnings.warn(
            f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
            f"{forward_trace}",
            UserWarning,
            stacklevel=3,  # the engine's loop, which called _call_node
        )
        raise
    return grad_inputs
