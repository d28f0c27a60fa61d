"""`torch.autograd.functional`: Jacobians, Hessians and their products with vectors, built on
`autograd.grad` (engine.py).

Each function takes a Python function `func` and the point `inputs` (a tensor or a tuple of
tensors) and differentiates `func` there. The recipe is the same everywhere:

1. Make fresh inputs that require grad: detached copies, or, with `create_graph=True`, views of
   the inputs that keep their graph, so that the result can be differentiated again.
2. Run `func` on them with grad mode on.
3. Ask the engine for vector-Jacobian products: `grad(outputs, inputs, v)` is v^T J.
   A Jacobian is one such product per output element; a Hessian is the Jacobian of the
   gradient (made with `create_graph=True`); a Jacobian-vector product J v uses the "double
   backward trick": g(u) = u^T J is linear in a dummy u, so differentiating g(u) . v with
   respect to u gives J v, with two backward passes and no forward-mode AD.
4. An input on which nothing depends gets zeros (or, with `strict=True`, an error), and results
   are detached unless `create_graph=True`.

Results have PyTorch's structure: a tensor where the argument was a tensor, a tuple where it was
a tuple (for `jacobian` and `hessian`, nested: one entry per output, then one per input).
Only `vectorize=False` is supported (PyTorch's `vectorize=True` batches the products with vmap).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitorch.autograd import engine
from minitorch.autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# ----------------------------------------------------------------------------------------------
# Helpers (PyTorch's, with its error messages)
# ----------------------------------------------------------------------------------------------
def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(was it a tuple?, the value as a tuple of tensors)."""
    from minitorch.tensor import Tensor

    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for index, element in enumerate(values):
        if not isinstance(element, Tensor):
            where = f"the value at index {index}" if is_tuple else f"the given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but {where} has type {type(element)}."
            )
    return is_tuple, values


def _unpack(result: tuple, is_tuple: bool | tuple[bool, bool]) -> Any:
    """Undo `_as_tuple`: one flag for a flat tuple, (outer, inner) for a nested one."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            result = tuple(row[0] for row in result)
        return result if outer else result[0]
    return result if is_tuple else result[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors to differentiate with respect to. With `create_graph`, an input that
    requires grad becomes a view of itself (same values, still connected to its own graph);
    otherwise a detached copy that requires grad if `need_graph`."""
    prepared = []
    for x in inputs:
        if create_graph and x.requires_grad:
            prepared.append(x.view_as(x))
        else:
            prepared.append(x.detach().requires_grad_(need_graph))
    return tuple(prepared)


def _finish(results: tuple, create_graph: bool) -> tuple:
    """Detach the results (recursively) unless the caller wants to differentiate them."""
    if create_graph:
        return results
    return tuple(_finish(r, create_graph) if isinstance(r, tuple) else r.detach() for r in results)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    if len(v) != len(other):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for index, (v_el, other_el) in enumerate(zip(v, other)):
        if v_el.size() != other_el.size():
            prefix = f"Entry {index} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prefix}v has invalid size: should be {other_el.size()} but got {v_el.size()}."
            )


_NOT_DIFFERENTIABLE = {
    "outputs": (
        "Output {i} of the user-provided function does not require gradients. The outputs must "
        "be computed in a differentiable manner from the input when running in strict mode."
    ),
    "grad_inputs": (
        "The gradient with respect to input {i} is independent of the inputs of the "
        "user-provided function. This is not allowed in strict mode."
    ),
    "jacobian": (
        "While computing the hessian, found that the jacobian of the user-provided function "
        "with respect to input {i} is independent of the input. This is not allowed in strict "
        "mode. You should ensure that your function is twice differentiable and that the "
        "jacobian depends on the inputs (this would be violated by a linear function for "
        "example)."
    ),
    "hessian": (
        "The hessian of the user-provided function with respect to input {i} is independent of "
        "the input. This is not allowed in strict mode. You should ensure that your function is "
        "thrice differentiable and that the hessian depends on the inputs."
    ),
}


def _check_requires_grad(tensors: tuple, kind: str, strict: bool) -> None:
    """strict mode: every tensor must exist and be differentiable."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


def _grad(
    outputs: tuple,
    inputs: tuple,
    grad_outputs: tuple | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple:
    """`autograd.grad` that skips outputs which do not require grad (all None if none does)
    and gives None for inputs that nothing depends on."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return engine.grad(
        [o for o, _ in kept],
        list(inputs),
        [g for _, g in kept],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
    )


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(
    grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str
) -> tuple:
    """Zeros shaped like `refs[i]` where no gradient came back (an error under strict)."""
    from minitorch.creation import zeros_like

    filled = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode when create_graph=True."
            )
        filled.append(g)
    return tuple(filled)


def _check_vectorize(vectorize: bool, fn_name: str) -> None:
    if vectorize:
        raise NotImplementedError(
            f"minitorch.autograd.functional.{fn_name}: vectorize=True is not supported (it "
            "needs vmap); use vectorize=False, which computes the same values one "
            "vector-Jacobian product at a time."
        )


def _single_element_output(outputs: tuple, is_tuple: bool, fn_name: str) -> None:
    if is_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )


def _default_v_error(v: Any, inputs: tuple) -> None:
    if v is None and (len(inputs) != 1 or inputs[0].numel() != 1):
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element."
        )


# ----------------------------------------------------------------------------------------------
# The six functions
# ----------------------------------------------------------------------------------------------
def vjp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """`(func(*inputs), v^T J)`: the vector-Jacobian product, shaped like `inputs`. `v` is
    shaped like the output(s); it may be omitted when func returns a single element."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            v = _prepare(_as_tuple(v, "v", "vjp")[1], create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (
        _unpack(_finish(outputs, create_graph), is_outputs_tuple),
        _unpack(_finish(result, create_graph), is_inputs_tuple),
    )


def jvp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """`(func(*inputs), J v)`: the Jacobian-vector product, shaped like the output(s). `v` is
    shaped like `inputs`; it may be omitted when the input is a single element.

    Computed with the double backward trick: u -> u^T J is linear in u, and its gradient with
    respect to u, weighted by v, is J v.
    """
    from minitorch.creation import zeros_like

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        if v is not None:
            v = _prepare(_as_tuple(v, "v", "jvp")[1], create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        _default_v_error(v, inputs)
        is_outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict)
        dummies = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, outputs, strict, create_graph, "back_trick")
    return (
        _unpack(_finish(outputs, create_graph), is_outputs_tuple),
        _unpack(_finish(result, create_graph), is_outputs_tuple),
    )


def jacobian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of `func` at `inputs`: entry [i][j] has shape `output_i.shape +
    input_j.shape` (a tensor when func takes and returns one tensor; a tuple over the inputs,
    over the outputs, or a tuple of tuples otherwise). One backward per output element."""
    from minitorch.creation import zeros_like
    from minitorch.ops import stack

    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        raise NotImplementedError(
            'minitorch.autograd.functional.jacobian: strategy="forward-mode" is not supported '
            '(minitorch has no forward-mode AD); use strategy="reverse-mode".'
        )
    _check_vectorize(vectorize, "jacobian")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict)

        jacobians = []
        for i, out in enumerate(outputs):
            rows: list[list] = [[] for _ in inputs]  # rows[j]: d out.flat[k] / d input j
            flat = out.reshape(-1)
            for k in range(out.numel()):
                grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, x) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        g = zeros_like(x)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            "The jacobian of the user-provided function is independent of input "
                            f"{i}. This is not allowed in strict mode when create_graph=True."
                        )
                    rows[j].append(g)
            jacobians.append(
                tuple(
                    stack(rows_j, dim=0).view(tuple(out.shape) + tuple(x.shape))
                    for rows_j, x in zip(rows, inputs)
                )
            )
        return _unpack(_finish(tuple(jacobians), create_graph), (is_outputs_tuple, is_inputs_tuple))


def hessian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a function with a single-element output: the Jacobian of its gradient.
    Entry [i][j] has shape `inputs[i].shape + inputs[j].shape` (a tensor for a tensor input)."""
    from minitorch.tensor import Tensor

    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    _check_vectorize(vectorize, "hessian")

    def single_output(*xs: Any) -> Any:
        out = func(*xs)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if is_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return out.squeeze()

    def gradient(*xs: Any) -> Any:
        jac = jacobian(single_output, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(
        gradient,
        inputs,
        create_graph=create_graph,
        strict=strict,
        strategy=outer_jacobian_strategy,
    )
    return _unpack(result, (is_inputs_tuple, is_inputs_tuple))


def vhp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """`(func(*inputs), v^T H)` for a function with a single-element output: the gradient of
    (gradient . v). `v` is shaped like `inputs`."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(
    func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """`(func(*inputs), H v)` for a function with a single-element output, computed with the
    double backward trick (as PyTorch does). Equal to `vhp` for twice differentiable functions,
    whose Hessian is symmetric."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(
    func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool, fn_name: str
) -> tuple[Any, Any]:
    from minitorch.creation import zeros_like

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
        inputs = _prepare(inputs, create_graph, need_graph=True)
        if v is not None:
            v = _prepare(_as_tuple(v, "v", fn_name)[1], create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        _default_v_error(v, inputs)
        is_outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", fn_name
        )
        _check_requires_grad(outputs, "outputs", strict)
        _single_element_output(outputs, is_outputs_tuple, fn_name)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        if fn_name == "hvp":
            # u -> u^T H is linear in u; its gradient with respect to u, weighted by v, is H v.
            dummies = tuple(zeros_like(x, requires_grad=True) for x in inputs)
            double_back = _grad(jac, inputs, dummies, create_graph=True)
            _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        if fn_name == "hvp":
            grads = _grad(double_back, dummies, v, create_graph=create_graph)
            result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back_trick")
        else:
            grads = _grad(jac, inputs, v, create_graph=create_graph)
            result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    return (
        _unpack(_finish(outputs, create_graph), is_outputs_tuple),
        _unpack(_finish(result, create_graph), is_inputs_tuple),
    )
