"""One time step of each recurrent cell: RNN (tanh or relu), GRU and LSTM.

Every step function takes `gates_x`, the input's share of the gates for this step (computed by
the caller for all time steps at once, with one matrix product outside the time loop), and the
previous state, of which only the first `gates_x.shape[0]` rows are used: a packed batch shrinks
from one step to the next as short sequences end. Gate orders are PyTorch's.

The RNN steps are written with ordinary minitorch ops. The LSTM and GRU steps are each a single
fused Function (`LSTMStep`, `GRUStep`), explained below for the LSTM. `nn.LSTMCell`, called once
per step by the user's own loop (or once per tree node), has nothing to hoist out of a loop: its
node, `LSTMCellStep`, computes the input's share of the gates inside, so a cell call is one node.

## The fused LSTM step

Written with elementary ops, one LSTM step records a dozen nodes (matmul, add, chunk, three
sigmoids, tanh, products ...), and in Python every node costs time in forward and in backward.
`LSTMStep` records one node per step instead. Its inputs:

- `gates_x` (B, 4H): the input's share of the gates, `x_t @ W_ih^T + b_ih + b_hh`. The caller
  computes it for all time steps at once with one matrix product, outside the loop;
- `h_prev`, `c_prev` (B_prev, H) with B_prev >= B: the previous state. Only the first B rows are
  used, so a packed batch that shrinks from one step to the next needs no slicing node;
- `w_hh` (4H, H): the recurrent weight.

It returns `(h, c)`, each (B, H). Gates are in PyTorch's order i, f, g, o:

    i, f, o = sigmoid(.), g = tanh(.)     of  gates_x + h_prev @ W_hh^T
    c = f * c_prev + i * g,   h = o * tanh(c)

Backward computes the gradients with the formula in `_step_gradients`. When no graph of the
backward pass is wanted (the default), it runs that formula directly on the storage tensors; under
`create_graph=True` it runs the very same formula on minitorch tensors, with the gates recomputed
by differentiable ops, so gradients of gradients come out right.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

import minitorch
from minitorch.autograd.function import Function
from minitorch.ops.fused import plain_backward, storages, wrap_storages
from minitorch.tensor import Tensor


def _gates_and_cell(gates_x: Any, h: Any, c: Any, w_hh: Any) -> tuple[tuple, Any, Any]:
    """The activated gates (i, f, g, o), the new cell state and its tanh. Works on torch tensors
    and on minitorch tensors alike (only operators and methods both have)."""
    gates = gates_x + h @ w_hh.t()
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    c_new = f * c + i * g
    return (i, f, g, o), c_new, c_new.tanh()


def _activation_backwards(lib: Any) -> tuple[Callable, Callable]:
    """`(sigmoid_backward, tanh_backward)` of `lib`: grad * s * (1 - s) and grad * (1 - t^2),
    each one op (one kernel on storage, one differentiable node on minitorch tensors)."""
    if lib is torch:
        return torch.ops.aten.sigmoid_backward, torch.ops.aten.tanh_backward
    return minitorch.ops.sigmoid_backward, minitorch.ops.tanh_backward


def _step_gradients(
    lib: Any, grad_h: Any, grad_c: Any, gates: tuple, tanh_c: Any, h: Any, c: Any, w_hh: Any
) -> tuple:
    """Gradients of one step w.r.t. (gates_x, h rows, c rows, w_hh), given those of (h, c).
    `lib` is torch (storage tensors) or minitorch (tensors that record a graph)."""
    sigmoid_backward, tanh_backward = _activation_backwards(lib)
    i, f, g, o = gates
    grad_c = grad_c + tanh_backward(grad_h * o, tanh_c)  # c feeds h through tanh
    grad_gates = lib.cat(
        [
            sigmoid_backward(grad_c * g, i),
            sigmoid_backward(grad_c * c, f),
            tanh_backward(grad_c * i, g),
            sigmoid_backward(grad_h * tanh_c, o),
        ],
        1,
    )
    return grad_gates, grad_gates @ w_hh, grad_c * f, grad_gates.t() @ h


def _rows(state: torch.Tensor, rows: int) -> torch.Tensor:
    """The first `rows` rows of a state's storage (the storage itself when it has no more)."""
    return state if state.shape[0] == rows else state[:rows]


def _pad_rows(lib: Any, grad: Any, rows: int) -> Any:
    """A gradient for the first rows of a state, extended with zero rows to the state's size."""
    if grad.shape[0] == rows:
        return grad
    return lib.cat([grad, grad.new_zeros(rows - grad.shape[0], grad.shape[1])], 0)


class LSTMStep(Function):
    """One LSTM time step: `(h, c) = LSTMStep.apply(gates_x, h_prev, c_prev, w_hh)`."""

    @staticmethod
    def forward(ctx, gates_x, h_prev, c_prev, w_hh):
        batch = gates_x.shape[0]
        h, c = h_prev._data[:batch], c_prev._data[:batch]
        gates, c_new, tanh_c = _gates_and_cell(gates_x._data, h, c, w_hh._data)
        if any(ctx.needs_input_grad):
            activations = Tensor._make(torch.cat(gates, 1))
            ctx.save_for_backward(gates_x, h_prev, c_prev, w_hh, activations, Tensor._make(tanh_c))
        return Tensor._make(gates[3] * tanh_c), Tensor._make(c_new)

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        gates_x, h_prev, c_prev, w_hh, activations, tanh_c = ctx.saved_tensors
        batch = gates_x.shape[0]
        if not plain_backward():  # create_graph=True: recompute with recorded ops
            lib = minitorch
            h, c = h_prev[:batch], c_prev[:batch]
            gates, _, tanh_c = _gates_and_cell(gates_x, h, c, w_hh)
        else:
            lib = torch
            h, c = h_prev._data[:batch], c_prev._data[:batch]
            gates = activations._data.chunk(4, 1)
            tanh_c, w_hh = tanh_c._data, w_hh._data
            grad_h, grad_c = grad_h._data, grad_c._data
        grad_gates, grad_h_prev, grad_c_prev, grad_w_hh = _step_gradients(
            lib, grad_h, grad_c, gates, tanh_c, h, c, w_hh
        )
        grads = (
            grad_gates,
            _pad_rows(lib, grad_h_prev, h_prev.shape[0]),
            _pad_rows(lib, grad_c_prev, c_prev.shape[0]),
            grad_w_hh,
        )
        if lib is torch:
            grads = wrap_storages(*grads)
        return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))

    @staticmethod
    def on_storage(needs, gates_x, h_prev, c_prev, w_hh):  # NOTE [Storage kernels]
        batch = gates_x.shape[0]
        h, c = _rows(h_prev, batch), _rows(c_prev, batch)
        gates, c_new, tanh_c = _gates_and_cell(gates_x, h, c, w_hh)

        def backward(grad_h, grad_c):
            grad_gates, grad_h_prev, grad_c_prev, grad_w_hh = _step_gradients(
                torch, grad_h, grad_c, gates, tanh_c, h, c, w_hh
            )
            grad_h_prev = _pad_rows(torch, grad_h_prev, h_prev.shape[0])
            grad_c_prev = _pad_rows(torch, grad_c_prev, c_prev.shape[0])
            grads = (grad_gates, grad_h_prev, grad_c_prev, grad_w_hh)
            return tuple(g if need else None for g, need in zip(grads, needs))

        return (gates[3] * tanh_c, c_new), backward


def lstm_step(gates_x: Tensor, h_prev: Tensor, c_prev: Tensor, w_hh: Tensor) -> tuple:
    """One LSTM step (see the module docstring); returns `(h, c)` of `gates_x.shape[0]` rows."""
    return LSTMStep.apply(gates_x, h_prev, c_prev, w_hh)


class LSTMCellStep(Function):
    """One `nn.LSTMCell` call as one node: `(h, c) = LSTMCellStep.apply(x, h_prev, c_prev,
    w_ih, w_hh, b_ih, b_hh)` (the biases may be None). It is `LSTMStep` with the input's share
    of the gates, `x @ W_ih^T + b_ih + b_hh`, computed inside: a cell is called once per time
    step (or per tree node), so there is no loop to hoist that product out of, and one node
    instead of five (two transposes, a product, two sums) is what makes per-sample cells cheap,
    eagerly and for `autobatch`, which records one lazy op per cell."""

    @staticmethod
    def forward(ctx, x, h_prev, c_prev, w_ih, w_hh, b_ih, b_hh):
        gates_x = _input_share(x._data, w_ih._data, *storages(b_ih, b_hh))
        gates, c_new, tanh_c = _gates_and_cell(gates_x, h_prev._data, c_prev._data, w_hh._data)
        if any(ctx.needs_input_grad):
            activations = Tensor._make(torch.cat(gates, 1))
            ctx.save_for_backward(
                x, h_prev, c_prev, w_ih, w_hh, b_ih, b_hh, activations, Tensor._make(tanh_c)
            )
        return Tensor._make(gates[3] * tanh_c), Tensor._make(c_new)

    @staticmethod
    def backward(ctx, grad_h, grad_c):
        x, h, c, w_ih, w_hh, b_ih, b_hh, activations, tanh_c = ctx.saved_tensors
        if not plain_backward():  # create_graph=True: recompute with recorded ops
            lib = minitorch
            gates, _, tanh_c = _gates_and_cell(_input_share(x, w_ih, b_ih, b_hh), h, c, w_hh)
        else:
            lib = torch
            x, h, c, w_ih, w_hh = storages(x, h, c, w_ih, w_hh)
            gates = activations._data.chunk(4, 1)
            tanh_c, grad_h, grad_c = tanh_c._data, grad_h._data, grad_c._data
        grads = _cell_gradients(lib, grad_h, grad_c, gates, tanh_c, x, h, c, w_ih, w_hh)
        if lib is torch:
            grads = wrap_storages(*grads)
        return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))

    @staticmethod
    def on_storage(needs, x, h, c, w_ih, w_hh, b_ih, b_hh):  # NOTE [Storage kernels]
        gates, c_new, tanh_c = _gates_and_cell(_input_share(x, w_ih, b_ih, b_hh), h, c, w_hh)

        def backward(grad_h, grad_c):
            grads = _cell_gradients(torch, grad_h, grad_c, gates, tanh_c, x, h, c, w_ih, w_hh)
            return tuple(g if need else None for g, need in zip(grads, needs))

        return (gates[3] * tanh_c, c_new), backward


def _input_share(x: Any, w_ih: Any, b_ih: Any, b_hh: Any) -> Any:
    """x @ W_ih^T + b_ih + b_hh (torch or minitorch tensors; a bias may be None)."""
    gates = x @ w_ih.t()
    for bias in (b_ih, b_hh):
        if bias is not None:
            gates = gates + bias
    return gates


def _cell_gradients(lib: Any, grad_h: Any, grad_c: Any, gates: tuple, tanh_c: Any, x: Any,
                    h: Any, c: Any, w_ih: Any, w_hh: Any) -> tuple:  # fmt: skip
    """Gradients of one cell w.r.t. (x, h_prev, c_prev, w_ih, w_hh, b_ih, b_hh)."""
    grad_gates, grad_h_prev, grad_c_prev, grad_w_hh = _step_gradients(
        lib, grad_h, grad_c, gates, tanh_c, h, c, w_hh
    )
    grad_bias = grad_gates.sum(0)
    return (grad_gates @ w_ih, grad_h_prev, grad_c_prev, grad_gates.t() @ x, grad_w_hh,
            grad_bias, grad_bias)  # fmt: skip


def lstm_cell(x: Tensor, h_prev: Tensor, c_prev: Tensor, w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None, b_hh: Tensor | None) -> tuple:  # fmt: skip
    """One `nn.LSTMCell` step on (B, input) and (B, H) states; returns `(h, c)`."""
    return LSTMCellStep.apply(x, h_prev, c_prev, w_ih, w_hh, b_ih, b_hh)


def _first_rows(state: Tensor, rows: int) -> Tensor:
    return state if state.shape[0] == rows else state[:rows]


def rnn_tanh_step(gates_x: Tensor, h_prev: Tensor, w_hh: Tensor) -> Tensor:
    """h = tanh(gates_x + h_prev @ W_hh^T), gates_x = x @ W_ih^T + b_ih + b_hh."""
    return (gates_x + _first_rows(h_prev, gates_x.shape[0]) @ w_hh.t()).tanh()


def rnn_relu_step(gates_x: Tensor, h_prev: Tensor, w_hh: Tensor) -> Tensor:
    """h = relu(gates_x + h_prev @ W_hh^T), gates_x = x @ W_ih^T + b_ih + b_hh."""
    return (gates_x + _first_rows(h_prev, gates_x.shape[0]) @ w_hh.t()).relu()


# -------------------------------------------------------------------------------------------------
# The fused GRU step (same pattern as the LSTM's)
# -------------------------------------------------------------------------------------------------
def _gru_gates(gates_x: Any, h: Any, w_hh: Any, b_hh: Any) -> tuple:
    """r, z, n and the recurrent part of n's pre-activation (h W_hn^T + b_hn). Works on torch
    tensors and on minitorch tensors alike.

    r = sigmoid(x_r + h W_hr^T + b_hr),  z = sigmoid(x_z + h W_hz^T + b_hz)
    n = tanh(x_n + r * (h W_hn^T + b_hn)),  h' = (1 - z) * n + z * h
    """
    gates_h = h @ w_hh.t()
    if b_hh is not None:
        gates_h = gates_h + b_hh
    x_r, x_z, x_n = gates_x.chunk(3, 1)
    h_r, h_z, h_n = gates_h.chunk(3, 1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    return r, z, (x_n + r * h_n).tanh(), h_n


def _gru_step_gradients(
    lib: Any, grad: Any, r: Any, z: Any, n: Any, h_n: Any, h: Any, w_hh: Any
) -> tuple:
    """Gradients of one GRU step w.r.t. (gates_x, h rows, w_hh, b_hh), given that of h'."""
    sigmoid_backward, tanh_backward = _activation_backwards(lib)
    grad_n = tanh_backward(grad - grad * z, n)  # through h' = n + z (h - n), then tanh
    grad_r = sigmoid_backward(grad_n * h_n, r)
    grad_z = sigmoid_backward(grad * (h - n), z)
    grad_gates_h = lib.cat([grad_r, grad_z, grad_n * r], 1)  # the reset gate scales h_n
    grad_h = grad * z + grad_gates_h @ w_hh
    return lib.cat([grad_r, grad_z, grad_n], 1), grad_h, grad_gates_h.t() @ h, grad_gates_h.sum(0)


class GRUStep(Function):
    """One GRU time step: `h = GRUStep.apply(gates_x, h_prev, w_hh, b_hh)`, where
    gates_x = x @ W_ih^T + b_ih (B, 3H) and b_hh (3H,) or None; uses the first B rows of h_prev."""

    @staticmethod
    def forward(ctx, gates_x, h_prev, w_hh, b_hh):
        h = h_prev._data[: gates_x.shape[0]]
        bias = None if b_hh is None else b_hh._data
        r, z, n, h_n = _gru_gates(gates_x._data, h, w_hh._data, bias)
        if any(ctx.needs_input_grad):
            activations = Tensor._make(torch.cat([r, z, n, h_n], 1))
            ctx.save_for_backward(gates_x, h_prev, w_hh, b_hh, activations)
        return Tensor._make(n + z * (h - n))

    @staticmethod
    def backward(ctx, grad):
        gates_x, h_prev, w_hh, b_hh, activations = ctx.saved_tensors
        batch = gates_x.shape[0]
        if not plain_backward():  # create_graph=True: recompute with recorded ops
            lib = minitorch
            h = h_prev[:batch]
            r, z, n, h_n = _gru_gates(gates_x, h, w_hh, b_hh)
        else:
            lib = torch
            h = h_prev._data[:batch]
            r, z, n, h_n = activations._data.chunk(4, 1)
            grad, w_hh = grad._data, w_hh._data
        grad_gates_x, grad_h, grad_w_hh, grad_b_hh = _gru_step_gradients(
            lib, grad, r, z, n, h_n, h, w_hh
        )
        grads = (grad_gates_x, _pad_rows(lib, grad_h, h_prev.shape[0]), grad_w_hh, grad_b_hh)
        if lib is torch:
            grads = wrap_storages(*grads)
        return tuple(g if need else None for g, need in zip(grads, ctx.needs_input_grad))

    @staticmethod
    def on_storage(needs, gates_x, h_prev, w_hh, b_hh):  # NOTE [Storage kernels]
        h = _rows(h_prev, gates_x.shape[0])
        r, z, n, h_n = _gru_gates(gates_x, h, w_hh, b_hh)

        def backward(grad):
            grad_gates_x, grad_h, grad_w_hh, grad_b_hh = _gru_step_gradients(
                torch, grad, r, z, n, h_n, h, w_hh
            )
            grads = (grad_gates_x, _pad_rows(torch, grad_h, h_prev.shape[0]), grad_w_hh, grad_b_hh)
            return tuple(g if need else None for g, need in zip(grads, needs))

        return n + z * (h - n), backward


def gru_step(gates_x: Tensor, h_prev: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """One GRU step; gates_x = x @ W_ih^T + b_ih (b_hh stays apart: the reset gate scales it).
    Returns h' of `gates_x.shape[0]` rows."""
    return GRUStep.apply(gates_x, h_prev, w_hh, b_hh)
