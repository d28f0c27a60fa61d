"""Plausible wrong answers to notebook 2's exercises: classic student mistakes the graders must
reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's solution cell (it defines the same names and may use what the
notebook defined before it: the setup imports, `ACCUMULATE_GRAD`, `topological_order`,
`sum_to_shape` and the locked `gradient_shape`).

Dependencies between exercises: exercise 3 calls `topological_order` and `sum_to_shape`, but its
grader replaces them with a table of orders known from how the grader built its graphs
(grade.OrderTable) and the libraries' own reduction (grade.library_sum_to_shape), so a wrong
exercise-1 or exercise-2 answer costs only its own exercise. A wrong answer to exercises 3 to 9
costs only its own exercise (no other graded cell uses their answers; a test checks this).
`RIGHT_ANSWERS` are different but correct answers, which must earn full marks.
"""

from __future__ import annotations

from typing import NamedTuple


class WrongAnswer(NamedTuple):
    name: str
    source: str
    why: str


_RUN_BACKWARD_HEAD = """\
def run_backward(tensor, grad):
    grads = {tensor.grad_fn: grad}
"""

_FIT_LINE_HEAD = """\
def fit_line(lib, x, y, steps, lr):
    w = lib.tensor(0.0, dtype=x.dtype, requires_grad=True)
    b = lib.tensor(0.0, dtype=x.dtype, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((w * x + b - y) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
"""

WRONG_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_topological_order": [
        WrongAnswer(
            "recursive_post_order",
            """\
def topological_order(tensor):
    order, seen = [], set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        for child, _ in node.next_functions:
            visit(child)
        order.append(node)

    visit(tensor.grad_fn)
    return order[::-1]
""",
            "correct order, but recursion: a chain of 10,000 ops exceeds the recursion limit",
        ),
        WrongAnswer(
            "breadth_first",
            """\
def topological_order(tensor):
    if tensor.grad_fn is None:
        return []
    order = [tensor.grad_fn]
    seen = {tensor.grad_fn}
    to_visit = deque(order)
    while to_visit:
        node = to_visit.popleft()
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                order.append(child)
                to_visit.append(child)
    return order
""",
            "breadth-first discovery order: a node reused deeper in the graph comes too early",
        ),
        WrongAnswer(
            "stack_pre_order",
            """\
def topological_order(tensor):
    if tensor.grad_fn is None:
        return []
    order, seen, stack = [], set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        for child, _ in reversed(node.next_functions):
            if child is not None:
                stack.append(child)
    return order
""",
            "depth-first pre-order: a node is listed before all of its consumers are",
        ),
        WrongAnswer(
            "counts_paths_not_edges",
            """\
def topological_order(tensor):
    root = tensor.grad_fn
    if root is None:
        return []
    pending = {root: 0}
    to_visit = [root]
    while to_visit:
        node = to_visit.pop()
        for child, _ in node.next_functions:
            if child is not None:
                pending[child] = pending.get(child, 0) + 1
                to_visit.append(child)  # no check: a shared node is walked once per path
    order, ready = [], deque([root])
    while ready:
        node = ready.popleft()
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None:
                pending[child] -= 1
                if pending[child] == 0:
                    ready.append(child)
    return order
""",
            "no visited check in the counting walk: exponential on a chain of diamonds",
        ),
    ],
    "ex2_sum_to_shape": [
        WrongAnswer(
            "leading_dims_only",
            """\
def sum_to_shape(grad, shape):
    added = grad.dim() - len(shape)
    if added > 0:
        grad = grad.sum(dim=tuple(range(added)))
    return grad
""",
            "forgets the dimensions stretched from size 1",
        ),
        WrongAnswer(
            "no_keepdim",
            """\
def sum_to_shape(grad, shape):
    shape = tuple(shape)
    added = grad.dim() - len(shape)
    if added > 0:
        grad = grad.sum(dim=tuple(range(added)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(dim=stretched)
    return grad
""",
            "sums the stretched dimensions away instead of keeping them as size 1",
        ),
        WrongAnswer(
            "trailing_dims",
            """\
def sum_to_shape(grad, shape):
    shape = tuple(shape)
    added = grad.dim() - len(shape)
    if added > 0:
        grad = grad.sum(dim=tuple(range(len(shape), grad.dim())))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(dim=stretched, keepdim=True)
    return grad
""",
            "sums over the trailing dimensions: broadcasting adds dimensions on the left",
        ),
        WrongAnswer(
            "mean_instead_of_sum",
            """\
def sum_to_shape(grad, shape):
    shape = tuple(shape)
    added = grad.dim() - len(shape)
    if added > 0:
        grad = grad.mean(dim=tuple(range(added)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.mean(dim=stretched, keepdim=True)
    return grad
""",
            "averages the copies' gradients instead of summing them",
        ),
    ],
    "ex3_run_backward": [
        WrongAnswer(
            "no_reduction",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, _), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "never reduces: right on minitorch, whose nodes reduce, but PyTorch's nodes return "
            "broadcast-shaped gradients and a (3,) leaf gets a (4, 3) .grad",
        ),
        WrongAnswer(
            "reduce_at_leaves_only",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            node_grad = sum_to_shape(node_grad, leaf.shape)
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, _), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "reduces only into .grad: an op node upstream of a broadcast (W.sum(dim=0)) "
            "receives a gradient of the wrong shape",
        ),
        WrongAnswer(
            "reduce_when_node_runs",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        node_grad = sum_to_shape(node_grad, gradient_shape(node, 0))
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, _), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "reduces the sum of a node's gradients: a (3,) and a (4, 3) gradient added first "
            "broadcast, so the (3,) one is counted four times",
        ),
        WrongAnswer(
            "overwrite_fan_in",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                grads[child] = child_grad
""",
            "a gradient arriving along a second path replaces the first instead of adding to it",
        ),
        WrongAnswer(
            "overwrite_leaf_grad",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            node.variable.grad = node_grad.clone()
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "sets .grad instead of adding to it: gradients already in .grad are lost",
        ),
        WrongAnswer(
            "breadth_first_walk",
            _RUN_BACKWARD_HEAD
            + """\
    order, seen = [tensor.grad_fn], {tensor.grad_fn}
    for node in order:  # breadth-first: the list grows while we walk it
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                order.append(child)
    for node in order:
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "breadth-first order: a reused node runs before all its gradients arrived",
        ),
        WrongAnswer(
            "grad_mode_on",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "calls the nodes with grad mode on: the gradients record a graph of their own",
        ),
        WrongAnswer(
            "no_clone",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                grads[child] = grads[child] + child_grad if child in grads else child_grad
""",
            "stores the incoming gradient itself: x + y gives x and y the same .grad tensor",
        ),
        WrongAnswer(
            "in_place_sum_of_paths",
            _RUN_BACKWARD_HEAD
            + """\
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is None or child_grad is None:
                continue
            child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
            if child in grads:
                grads[child] += child_grad  # writes into a tensor that may flow elsewhere
            else:
                grads[child] = child_grad
""",
            "adds the paths' gradients in place: a gradient a node passed to two inputs changes",
        ),
        WrongAnswer(
            "propagate_every_path",
            """\
def run_backward(tensor, grad):
    stack = [(tensor.grad_fn, grad)]
    while stack:
        node, node_grad = stack.pop()
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
        if not isinstance(input_grads, tuple):
            input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is not None and child_grad is not None:
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                stack.append((child, child_grad))
""",
            "right gradients (a sum over paths), but one walk per path: exponential on diamonds",
        ),
    ],
    "ex4_jacobian": [
        WrongAnswer(
            "no_retain_graph",
            """\
def jacobian(lib, f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    units = lib.eye(y.shape[0], dtype=y.dtype)
    return lib.stack([lib.autograd.grad(y, x, grad_outputs=u)[0] for u in units])
""",
            "the first grad() frees the graph, so the second row raises",
        ),
        WrongAnswer(
            "grad_accumulates_between_rows",
            """\
def jacobian(lib, f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    units = lib.eye(y.shape[0], dtype=y.dtype)
    rows = []
    for i in range(y.shape[0]):
        y.backward(units[i], retain_graph=True)
        rows.append(x.grad.clone())
    return lib.stack(rows)
""",
            "uses backward without resetting x.grad: row i holds the sum of rows 0..i",
        ),
        WrongAnswer(
            "transposed",
            """\
def jacobian(lib, f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    units = lib.eye(y.shape[0], dtype=y.dtype)
    rows = [lib.autograd.grad(y, x, grad_outputs=u, retain_graph=True)[0] for u in units]
    return lib.stack(rows, dim=1)
""",
            "stacks the vector-Jacobian products as columns: the transpose",
        ),
        WrongAnswer(
            "f_once_per_row",
            """\
def jacobian(lib, f, x):
    rows = []
    for i in range(f(x).shape[0]):
        leaf = x.detach().requires_grad_()
        (row,) = lib.autograd.grad(f(leaf)[i], leaf)
        rows.append(row)
    return lib.stack(rows)
""",
            "runs f again for every row (m + 1 forward passes) where one is asked",
        ),
        WrongAnswer(
            "float32_result",
            """\
def jacobian(lib, f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    J = lib.zeros(y.shape[0], x.shape[0])
    for i in range(y.shape[0]):
        (row,) = lib.autograd.grad(y[i], x, retain_graph=True)
        with lib.no_grad():
            J[i] = row
    return J
""",
            "fills a matrix made with the default dtype: float32 where x is float64",
        ),
        WrongAnswer(
            "x_requires_grad_in_place",
            """\
def jacobian(lib, f, x):
    x.requires_grad_()
    y = f(x)
    units = lib.eye(y.shape[0], dtype=y.dtype)
    rows = [lib.autograd.grad(y, x, grad_outputs=u, retain_graph=True)[0] for u in units]
    return lib.stack(rows)
""",
            "sets requires_grad on the caller's x instead of a leaf of its own",
        ),
    ],
    "ex5_hessian_vector_product": [
        WrongAnswer(
            "no_create_graph",
            """\
def hessian_vector_product(lib, f, x, v):
    x = x.detach().requires_grad_()
    (gradient,) = lib.autograd.grad(f(x), x)
    (product,) = lib.autograd.grad((gradient * v).sum(), x)
    return product
""",
            "without create_graph the gradient has no graph and cannot be differentiated",
        ),
        WrongAnswer(
            "gradient_times_v",
            """\
def hessian_vector_product(lib, f, x, v):
    x = x.detach().requires_grad_()
    (gradient,) = lib.autograd.grad(f(x), x)
    return gradient * v
""",
            "returns the gradient scaled by v, a first derivative",
        ),
        WrongAnswer(
            "hessian_row_sums_times_v",
            """\
def hessian_vector_product(lib, f, x, v):
    x = x.detach().requires_grad_()
    (gradient,) = lib.autograd.grad(f(x), x, create_graph=True)
    (row_sums,) = lib.autograd.grad(gradient.sum(), x)
    return row_sums * v
""",
            "H @ ones times v elementwise instead of H @ v",
        ),
        WrongAnswer(
            "x_requires_grad_in_place",
            """\
def hessian_vector_product(lib, f, x, v):
    x.requires_grad_()
    (gradient,) = lib.autograd.grad(f(x), x, create_graph=True)
    (product,) = lib.autograd.grad((gradient * v).sum(), x)
    return product
""",
            "sets requires_grad on the caller's x instead of a leaf of its own",
        ),
    ],
    "ex6_scale_gradient": [
        WrongAnswer(
            "hook_on_x",
            """\
def scale_gradient(x, factor):
    x.register_hook(lambda grad: grad * factor)
    return x
""",
            "hooks x itself: the gradients of all of x's uses are scaled, now and later",
        ),
        WrongAnswer(
            "hook_returns_nothing",
            """\
def scale_gradient(x, factor):
    y = x * 1.0

    def hook(grad):
        grad = grad * factor  # a new tensor, bound to a local name, never returned

    y.register_hook(hook)
    return y
""",
            "the hook computes the scaled gradient but returns None: nothing changes",
        ),
        WrongAnswer(
            "scales_in_place",
            """\
def scale_gradient(x, factor):
    y = x * 1.0
    y.register_hook(lambda grad: grad.mul_(factor))
    return y
""",
            "scales the incoming gradient in place: (y + x) passes that tensor to x as well",
        ),
        WrongAnswer(
            "scales_the_value",
            """\
def scale_gradient(x, factor):
    return x * factor
""",
            "the right gradient, but y holds x times the factor instead of x",
        ),
    ],
    "ex7_accumulated_gradients": [
        WrongAnswer(
            "missing_divide_by_k",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    model.zero_grad()
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        loss_fn(model(x), y).backward()
    return [p.grad for p in model.parameters()]
""",
            "sums k micro-batch means: k times the full-batch gradient",
        ),
        WrongAnswer(
            "no_zero_grad",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        loss = loss_fn(model(x), y) / k
        loss.backward()
    return [p.grad for p in model.parameters()]
""",
            "keeps the gradients the model already held",
        ),
        WrongAnswer(
            "zero_grad_every_micro_batch",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        model.zero_grad()
        loss = loss_fn(model(x), y) / k
        loss.backward()
    return [p.grad for p in model.parameters()]
""",
            "zeroes inside the loop: only the last micro-batch survives",
        ),
        WrongAnswer(
            "divide_by_k",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    model.zero_grad()
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        loss = loss_fn(model(x), y) / k
        loss.backward()
    return [p.grad for p in model.parameters()]
""",
            "right for equal micro-batches only: a smaller last one counts as much as the others",
        ),
        WrongAnswer(
            "full_batch_once",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    model.zero_grad()
    loss_fn(model(inputs), targets).backward()
    return [p.grad for p in model.parameters()]
""",
            "the right gradient from one forward over the whole batch: no micro-batches at all",
        ),
        WrongAnswer(
            "one_backward_of_summed_losses",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    model.zero_grad()
    total = 0
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        total = total + loss_fn(model(x), y) * (len(x) / len(inputs))
    total.backward()
    return [p.grad for p in model.parameters()]
""",
            "one backward of the summed losses: every micro-batch's graph is alive at once",
        ),
    ],
    "ex8_fit_line": [
        WrongAnswer(
            "update_without_no_grad",
            _FIT_LINE_HEAD
            + """\
        w -= lr * w.grad
        b -= lr * b.grad
        w.grad = None
        b.grad = None
    return w.item(), b.item(), losses
""",
            "an in-place update of a leaf that requires grad, recorded: PyTorch refuses it",
        ),
        WrongAnswer(
            "no_zero_grad",
            _FIT_LINE_HEAD
            + """\
        with lib.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
    return w.item(), b.item(), losses
""",
            "never resets the gradients: each step uses the sum of all gradients so far",
        ),
        WrongAnswer(
            "rebinds_instead_of_updating",
            _FIT_LINE_HEAD
            + """\
        w = w - lr * w.grad
        b = b - lr * b.grad
    return w.item(), b.item(), losses
""",
            "w - lr * w.grad is a new non-leaf tensor: the next backward leaves its .grad None",
        ),
        WrongAnswer(
            "rebinds_under_no_grad",
            _FIT_LINE_HEAD
            + """\
        with lib.no_grad():
            w = w - lr * w.grad
            b = b - lr * b.grad
    return w.item(), b.item(), losses
""",
            "under no_grad, w - lr * w.grad is a new leaf that does not require grad",
        ),
        WrongAnswer(
            "float32_parameters",
            """\
def fit_line(lib, x, y, steps, lr):
    w = lib.tensor(0.0, requires_grad=True)
    b = lib.tensor(0.0, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((w * x + b - y) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad = None
        b.grad = None
    return w.item(), b.item(), losses
""",
            "w and b in the default float32 while the data are float64",
        ),
        WrongAnswer(
            "losses_are_tensors",
            """\
def fit_line(lib, x, y, steps, lr):
    w = lib.tensor(0.0, dtype=x.dtype, requires_grad=True)
    b = lib.tensor(0.0, dtype=x.dtype, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((w * x + b - y) ** 2).mean()
        losses.append(loss)
        loss.backward()
        with lib.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad = None
        b.grad = None
    return w.item(), b.item(), losses
""",
            "records the loss tensors, not Python floats: every step's graph stays alive",
        ),
    ],
    "ex9_predict_second_backward": [
        WrongAnswer(
            "numbers_are_not_saved",
            """\
def predict_second_backward():
    return {
        "a": (True, "freed"),
        "b": (False, "nothing_saved"),
        "c": (False, "nothing_saved"),
        "d": (False, "retain_graph"),
        "e": (False, "fresh_graph"),
        "f": (True, "freed"),
        "g": (False, "fresh_graph"),
        "h": (True, "freed"),
        "i": (False, "nothing_saved"),
        "j": (True, "freed"),
    }
""",
            "believes x * 2 saves nothing (the 2 is saved, so the second backward raises)",
        ),
        WrongAnswer(
            "new_root_means_new_graph",
            """\
def predict_second_backward():
    return {
        "a": (True, "freed"),
        "b": (False, "nothing_saved"),
        "c": (True, "freed"),
        "d": (False, "retain_graph"),
        "e": (False, "fresh_graph"),
        "f": (False, "fresh_graph"),
        "g": (False, "fresh_graph"),
        "h": (False, "fresh_graph"),
        "j": (False, "retain_graph"),
        "i": (False, "nothing_saved"),
    }
""",
            "believes a new output or grad() starts a new graph, and retain_graph lasts forever",
        ),
        WrongAnswer(
            "works_for_the_wrong_reason",
            """\
def predict_second_backward():
    return {
        "a": (True, "freed"),
        "b": (False, "fresh_graph"),
        "c": (True, "freed"),
        "d": (False, "retain_graph"),
        "e": (False, "nothing_saved"),
        "f": (True, "freed"),
        "g": (False, "nothing_saved"),
        "h": (True, "freed"),
        "i": (False, "fresh_graph"),
        "j": (True, "freed"),
    }
""",
            "right about which raise, wrong about why the others work",
        ),
    ],
}


# Different but correct answers: each must earn full marks (tests/test_graders_common.py).
RIGHT_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_topological_order": [
        WrongAnswer(
            "reverse_post_order_with_a_stack",
            """\
def topological_order(tensor):
    if tensor.grad_fn is None:
        return []
    post_order, seen = [], {tensor.grad_fn}
    stack = [(tensor.grad_fn, iter(tensor.grad_fn.next_functions))]
    while stack:
        node, children = stack[-1]
        for child, _ in children:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append((child, iter(child.next_functions)))
                break
        else:
            stack.pop()
            post_order.append(node)
    return post_order[::-1]
""",
            "depth-first post-order, reversed, without recursion: another valid order",
        ),
    ],
    "ex2_sum_to_shape": [
        WrongAnswer(
            "one_dimension_at_a_time",
            """\
def sum_to_shape(grad, shape):
    while grad.dim() > len(shape):
        grad = grad.sum(dim=0)
    for i, size in enumerate(shape):
        if size == 1 and grad.shape[i] != 1:
            grad = grad.sum(dim=i, keepdim=True)
    return grad
""",
            "a loop that sums one dimension per step",
        ),
    ],
    "ex3_run_backward": [
        WrongAnswer(
            "own_walk_and_in_place_leaf_accumulation",
            """\
def run_backward(tensor, grad):
    consumers, stack = {tensor.grad_fn: 0}, [tensor.grad_fn]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                if child not in consumers:
                    consumers[child] = 0
                    stack.append(child)
                consumers[child] += 1
    grads, ready = {tensor.grad_fn: grad}, [tensor.grad_fn]
    while ready:
        node = ready.pop()
        node_grad = grads.pop(node, None)
        if node.name() == ACCUMULATE_GRAD:
            if node_grad is not None:
                leaf = node.variable
                if leaf.grad is None:
                    leaf.grad = node_grad.clone()
                else:
                    with torch.no_grad(), minitorch.no_grad():
                        leaf.grad.add_(node_grad)
            continue
        input_grads = (None,) * len(node.next_functions)
        if node_grad is not None:
            with torch.no_grad(), minitorch.no_grad():
                input_grads = node(node_grad)
            if not isinstance(input_grads, tuple):
                input_grads = (input_grads,)
        for (child, nr), child_grad in zip(node.next_functions, input_grads):
            if child is None:
                continue
            if child_grad is not None:
                shape = gradient_shape(child, nr)
                if tuple(child_grad.shape) != shape:  # a PyTorch node's broadcast gradient
                    child_grad = sum_to_shape(child_grad, shape)
                grads[child] = grads[child] + child_grad if child in grads else child_grad
            consumers[child] -= 1
            if consumers[child] == 0:
                ready.append(child)
""",
            "its own Kahn walk (a stack, not topological_order); adds into .grad in place",
        ),
    ],
    "ex4_jacobian": [
        WrongAnswer(
            "backward_and_reset",
            """\
def jacobian(lib, f, x):
    x = x.detach().requires_grad_()
    y = f(x)
    rows = []
    for i in range(y.shape[0]):
        unit = lib.zeros_like(y)
        unit[i] = 1.0
        y.backward(unit, retain_graph=True)
        rows.append(x.grad.clone())
        x.grad = None
    return lib.stack(rows)
""",
            "backward with gradient=, resetting x.grad between rows",
        ),
    ],
    "ex5_hessian_vector_product": [
        WrongAnswer(
            "dot_product",
            """\
def hessian_vector_product(lib, f, x, v):
    leaf = x.clone().requires_grad_(True)
    gradient = lib.autograd.grad(f(leaf), [leaf], create_graph=True)[0]
    return lib.autograd.grad(gradient @ v, [leaf])[0]
""",
            "a clone as the leaf, and the dot product written with @",
        ),
    ],
    "ex6_scale_gradient": [
        WrongAnswer(
            "clone_and_named_hook",
            """\
def scale_gradient(x, factor):
    def scaled(grad):
        return factor * grad

    y = x.clone()
    y.register_hook(scaled)
    return y
""",
            "a clone as the new tensor and a named hook",
        ),
        WrongAnswer(
            "detach_trick",
            """\
def scale_gradient(x, factor):
    return x * factor + (x - x * factor).detach()
""",
            "no hook: the value of x, a gradient through x * factor only",
        ),
    ],
    "ex7_accumulated_gradients": [
        WrongAnswer(
            "sum_losses_over_batch_size",
            """\
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    for p in model.parameters():
        p.grad = None
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        (loss_fn(model(x), y) * x.shape[0] / inputs.shape[0]).backward()
    return [p.grad for p in model.parameters()]
""",
            "grads set to None instead of zeroed; the weight written as shape[0] ratios",
        ),
    ],
    "ex8_fit_line": [
        WrongAnswer(
            "float_and_in_place_methods",
            """\
def fit_line(lib, x, y, steps, lr):
    w = lib.zeros((), dtype=x.dtype, requires_grad=True)
    b = lib.zeros((), dtype=x.dtype, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((y - b - x * w) ** 2).sum() / len(x)
        losses.append(float(loss))
        loss.backward()
        with lib.no_grad():
            w.sub_(lr * w.grad)
            b.sub_(lr * b.grad)
            w.grad.zero_()
            b.grad.zero_()
    return float(w), float(b), losses
""",
            "float() of tensors that require grad (a UserWarning, never a lost point); sub_",
        ),
    ],
    "ex9_predict_second_backward": [
        WrongAnswer(
            "raises_derived_from_the_reason",
            """\
def predict_second_backward():
    reasons = dict(
        a="freed", b="nothing_saved", c="freed", d="retain_graph", e="fresh_graph",
        f="freed", g="fresh_graph", h="freed", i="nothing_saved", j="freed",
    )
    return {key: (why == "freed", why) for key, why in reasons.items()}
""",
            "the dict built from the reasons alone: only 'freed' raises",
        ),
    ],
}
