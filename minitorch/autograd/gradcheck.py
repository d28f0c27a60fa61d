"""gradcheck: compare the gradients backward computes with central finite differences.

For a function f of tensors, the analytic Jacobian is built row by row from vector-Jacobian
products (one backward per output element); the numerical Jacobian perturbs each input element by
+-eps. They must agree within `atol + rtol * |numerical|`. Use float64 inputs: in float32 the
finite differences are too coarse and the check is unreliable (a warning says so).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minitorch.autograd import engine
from minitorch.autograd.grad_mode import enable_grad, no_grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytic and numerical Jacobians differ."""


def _outputs(fn: Callable, inputs: Sequence[Any]) -> list:
    from minitorch.tensor import Tensor

    out = fn(*inputs)
    outs = [out] if isinstance(out, Tensor) else list(out)
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _numerical_jacobian(fn: Callable, inputs: list, index: int, eps: float) -> list:
    """One Jacobian per output: shape (input numel, output numel)."""
    x = inputs[index]
    flat = x._data.view(-1) if x._data.is_contiguous() else None
    if flat is None:
        raise ValueError("gradcheck needs contiguous inputs")
    columns: list[list[torch.Tensor]] = []
    with no_grad():
        for i in range(flat.numel()):
            original = flat[i].item()
            flat[i] = original + eps
            # clone: an output may be a view of the input, which is restored below
            plus = [o._data.to(torch.float64).flatten().clone() for o in _outputs(fn, inputs)]
            flat[i] = original - eps
            minus = [o._data.to(torch.float64).flatten().clone() for o in _outputs(fn, inputs)]
            flat[i] = original
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
    n_outputs = len(columns[0]) if columns else 0
    return [torch.stack([c[k] for c in columns]) for k in range(n_outputs)]


def _analytical_jacobian(fn: Callable, inputs: list, index: int, check_dtypes: bool) -> list:
    from minitorch.tensor import Tensor

    x = inputs[index]
    jacobians = []
    for out in _outputs(fn, inputs):
        rows = []
        for j in range(out.numel()):
            seed = torch.zeros(out.numel(), dtype=out.dtype, device=out.device)
            seed[j] = 1
            if not out.requires_grad:
                rows.append(torch.zeros(x.numel(), dtype=torch.float64))
                continue
            (g,) = engine.grad(
                out,
                x,
                Tensor._make(seed.view(out.shape)),
                retain_graph=True,
                allow_unused=True,
            )
            if check_dtypes and g is not None and g.dtype != x.dtype:
                raise GradcheckError("Gradient has dtype mismatch")
            rows.append(
                torch.zeros(x.numel(), dtype=torch.float64)
                if g is None
                else g._data.reshape(-1).to(torch.float64).cpu()
            )
        jacobians.append(
            torch.stack(rows, dim=1) if rows else torch.zeros(x.numel(), 0, dtype=torch.float64)
        )
    return jacobians


def gradcheck(
    func: Callable,
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """True when backward's gradients of `func(*inputs)` match finite differences for every
    input that requires grad; otherwise raise GradcheckError (or return False).

    The keywords are PyTorch's. Some have nothing to check in minitorch and are accepted as is:
    `nondet_tol` (backward is not run twice to test that it is deterministic),
    `check_undefined_grad` (the engine always hands backward zeros, never None, unless a
    Function turns materialize_grads off), `fast_mode` (the full Jacobians are always compared,
    which is stricter) and `masked` (there are no sparse tensors). The forward-mode and batched
    checks need forward AD or vmap, which minitorch does not have: asking for them raises
    NotImplementedError. `check_backward_ad=False` skips the comparison.
    """
    from minitorch.tensor import Tensor

    for name, value in (
        ("check_batched_grad", check_batched_grad),
        ("check_batched_forward_grad", check_batched_forward_grad),
        ("check_forward_ad", check_forward_ad),
    ):
        if value:
            raise NotImplementedError(
                f"minitorch's gradcheck does not support {name}=True (it needs forward-mode AD "
                "or vmap, which minitorch does not have)"
            )
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "have requires_grad=True."
        )
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype != torch.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ",
                UserWarning,
                stacklevel=2,
            )
    if not check_backward_ad:
        return True
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        numerical = _numerical_jacobian(func, inputs, i, eps)
        analytical = _analytical_jacobian(func, inputs, i, check_grad_dtypes)
        for k, (num, ana) in enumerate(zip(numerical, analytical)):
            num = num.cpu()
            if not torch.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{ana}\n"
                )
    return True


def gradgradcheck(
    func: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: gradcheck of the function that maps (inputs, grad_outputs) to
    the gradients of `func`'s outputs (weighted by grad_outputs) with respect to the inputs
    that require grad, computed with `create_graph=True`.

    Without `grad_outputs`, random ones are drawn from torch's generator as PyTorch draws them
    (uniform in [-1, 1], requiring grad), so the same seed checks the same point. With
    `gen_non_contig_grad_outputs=True` PyTorch makes them non-contiguous; minitorch keeps the
    same values, stored contiguously. The other keywords are passed on to `gradcheck`
    (`check_fwd_over_rev` as its `check_forward_ad`, `check_rev_over_rev` as
    `check_backward_ad`).
    """
    from minitorch.tensor import Tensor

    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            _random_grad_output(out, gen_non_contig_grad_outputs)
            for out in _differentiable_outputs(func(*inputs))
        )
    else:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    n_outputs = len(grad_outputs)

    def first_derivatives(*args: Any) -> tuple:
        # gradcheck evaluates this with grad mode off; the gradients need a graph.
        with enable_grad():
            args_in, args_grad = args[:-n_outputs], args[-n_outputs:]
            outputs = _differentiable_outputs(func(*args_in))
            wrt = [x for x in args_in if isinstance(x, Tensor) and x.requires_grad]
            grads = engine.grad(outputs, wrt, args_grad, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _differentiable_outputs(out: Any) -> list:
    from minitorch.tensor import Tensor

    outs = [out] if isinstance(out, Tensor) else list(out)
    return [o for o in outs if isinstance(o, Tensor) and o.requires_grad]


def _random_grad_output(out: Any, non_contiguous: bool) -> Any:
    """A gradient for `out` drawn as PyTorch's gradgradcheck draws it."""
    from minitorch.tensor import Tensor

    dtype = out.dtype if out.dtype.is_floating_point else torch.float64
    data = torch.testing.make_tensor(
        tuple(out.shape),
        dtype=dtype,
        device=out.device,
        low=-1,
        high=1,
        noncontiguous=non_contiguous,
    )
    return Tensor._make(data.contiguous()).requires_grad_()
