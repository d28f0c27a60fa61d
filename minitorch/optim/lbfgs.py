"""L-BFGS: a quasi-Newton method that needs the loss several times per step (`step(closure)`).

    optimizer = minitorch.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    optimizer.step(closure)

One `step` runs up to `max_iter` iterations. Each one builds a search direction from the
gradient and the last `history_size` pairs (s, y) = (change of the parameters, change of the
gradient): the two-loop recursion multiplies the gradient by an approximation of the inverse
Hessian. It then moves along that direction, by `lr` (by a smaller first step on the very first
iteration), or by a step that `line_search_fn="strong_wolfe"` chooses so that the loss falls
enough and the slope flattens enough (the strong Wolfe conditions).

This is torch.optim.LBFGS step for step, on storage: all the parameters are seen as one flat
vector (gradients concatenated in parameter order), every number is computed by the same torch
kernels in the same order, so both libraries follow the same path. As in PyTorch, the state is
global but kept under the first parameter (`state[params[0]]`), and parameter groups are not
supported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from minitorch.autograd.grad_mode import enable_grad
from minitorch.autograd.record import unrecorded
from minitorch.optim.optimizer import Optimizer
from minitorch.tensor import Tensor

_STATE_KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


class LBFGS(Optimizer):
    """`torch.optim.LBFGS`: same options, same defaults, same numbers.

    `max_eval` defaults to `max_iter * 5 // 4`. The iterations of one step stop early when the
    largest gradient entry is at most `tolerance_grad`, or when the step or the change of the
    loss is below `tolerance_change`. `step(closure)` requires the closure (it re-evaluates
    the model) and returns the loss of its first evaluation.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    # The parameters as one flat vector ------------------------------------------------------------
    def _gather_flat_grad(self) -> torch.Tensor:
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(torch.zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                views.append(p.grad._data.reshape(-1))
        return torch.cat(views, 0)

    def _add_grad(self, step_size: Any, update: torch.Tensor) -> None:
        """Move the parameters by `step_size * update` (in place, like every optimizer)."""
        offset = 0
        for p in self._params:
            numel = p.numel()
            p._data.add_(update[offset : offset + numel].view_as(p._data), alpha=step_size)
            p._version_counter.value += 1
            offset += numel

    def _clone_param(self) -> list[torch.Tensor]:
        return [p._data.clone(memory_format=torch.contiguous_format) for p in self._params]

    def _set_param(self, params_data: list[torch.Tensor]) -> None:
        for p, data in zip(self._params, params_data):
            p._data.copy_(data)
            p._version_counter.value += 1

    def _directional_evaluate(self, closure: Callable, x: list, t: Any, d: torch.Tensor) -> tuple:
        """The loss and flat gradient at `x + t * d`; the parameters are put back to `x`."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # One step -------------------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to `max_iter` L-BFGS iterations; `closure()` recomputes the loss and its
        gradients (it runs with grad mode on). Returns the loss of the first evaluation."""
        with unrecorded("LBFGS.step()"):
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        def evaluate() -> Any:
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr = group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        # Evaluate the loss and the gradient at the starting point.
        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss  # already optimal

        # What the previous step left (None on the first step).
        d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss = (
            _from_state(state.get(key)) for key in _STATE_KEYS
        )
        al = _from_state(state.get("al"))  # the two-loop recursion's coefficients

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # The search direction d.
            if state["n_iter"] == 1:
                d = flat_grad.neg()  # steepest descent
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                # Remember the latest pair (y, s) if it keeps the approximation positive.
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)  # scale of the initial inverse Hessian

                # Two-loop recursion: d = -(approximate inverse Hessian) @ gradient.
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                q = flat_grad.neg()
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q.add_(old_dirs[i], alpha=-al[i])
                d = r = torch.mul(q, H_diag)
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r.add_(old_stps[i], alpha=al[i] - be_i)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone(memory_format=torch.contiguous_format)
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # The step length t: a cautious first step, then lr.
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)  # the slope along d
            if gtd > -tolerance_change:
                break  # d does not go downhill any more

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x: list, t: Any, d: torch.Tensor) -> tuple:
                    return self._directional_evaluate(evaluate, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)  # a fixed step
                opt_cond = False
                if n_iter != max_iter:  # no need to evaluate after the last iteration
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # Stop at the budget, at an optimum, or when nothing moves any more.
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        values = (d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss)
        for key, value in zip(_STATE_KEYS, values):
            state[key] = _to_state(value)
        if al is not None:
            state["al"] = _to_state(al)
        return orig_loss


def _to_state(value: Any) -> Any:
    """Storage kept between steps becomes minitorch tensors in `state`, as in every optimizer."""
    if isinstance(value, torch.Tensor):
        return Tensor._make(value)
    if isinstance(value, list):
        return [_to_state(v) for v in value]
    return value


def _from_state(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, list):
        return [_from_state(v) for v in value]
    return value


# ----------------------------------------------------------------------------------------------
# The strong Wolfe line search (torch/optim/lbfgs.py, itself ported from Lua torch's optim)
# ----------------------------------------------------------------------------------------------
def _cubic_interpolate(
    x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any, bounds: tuple | None = None
) -> Any:
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped
    to `bounds` (default: between x1 and x2); the middle if the cubic has no minimum."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(
    obj_func: Callable,
    x: list,
    t: Any,
    d: torch.Tensor,
    f: float,
    g: torch.Tensor,
    gtd: torch.Tensor,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple:
    """Find a step t along d with f(x + t d) <= f + c1 t gtd (enough decrease) and
    |slope at t| <= c2 |gtd| (flat enough). First bracket such a t, growing the step by cubic
    extrapolation; then zoom into the bracket by cubic interpolation. Returns (loss, flat
    gradient, t, number of evaluations)."""
    d_norm = d.abs().max()
    g = g.clone(memory_format=torch.contiguous_format)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    # Bracketing phase.
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g = [g_prev, g_new.clone(memory_format=torch.contiguous_format)]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g = [g_prev, g_new.clone(memory_format=torch.contiguous_format)]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # Extrapolate to a longer step.
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev = tmp
        f_prev = f_new
        g_prev = g_new.clone(memory_format=torch.contiguous_format)
        gtd_prev = gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # Zoom phase: shrink the bracket until a point satisfies both conditions.
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break  # the bracket is too small
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # Too close to an end of the bracket (twice in a row, or outside it): move to 10% of
        # its length away from the nearer end.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Not enough decrease: t becomes the high end.
            bracket[high_pos] = t
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.clone(memory_format=torch.contiguous_format)
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True  # both Wolfe conditions hold
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # The old high end becomes the new low end.
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.clone(memory_format=torch.contiguous_format)
            bracket_gtd[low_pos] = gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals
