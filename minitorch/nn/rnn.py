"""Recurrent layers: `RNN`, `GRU`, `LSTM` and their one-step cells, as in `torch.nn`.

Parameter names, shapes, gate order, initialization and the shapes of inputs and outputs are
PyTorch's. A layer accepts a padded tensor (T, B, input_size) ((B, T, ...) with `batch_first`),
an unbatched (T, input_size) tensor, or a `PackedSequence`.

How a layer runs. Whatever the input, the sequences are handled in the packed layout: `data`
holds the valid steps time step by time step and `batch_sizes[t]` rows belong to step t (a padded
tensor is the special case where every step has all B rows). Per layer and direction:

1. the input's share of the gates for all steps at once: one matrix product `data @ W_ih^T`;
2. a Python loop over the time steps, each step one call of the cell's step function
   (minitorch/ops/rnn.py) on the first `batch_sizes[t]` rows of the state;
3. the output is every step's h, concatenated; `h_n` takes from it each sequence's h at its own
   last step, so padding never leaks into the final state.

The graph therefore grows with the sequence length: a dynamic graph, rebuilt for every batch.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import torch

import minitorch
from minitorch.autograd.grad_mode import no_grad
from minitorch.nn.module import Module
from minitorch.nn.parameter import Parameter
from minitorch.nn.utils.rnn import PackedSequence
from minitorch.ops.rnn import gru_step, lstm_cell, lstm_step, rnn_relu_step, rnn_tanh_step
from minitorch.tensor import Tensor

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _uniform_init(module: Module, hidden_size: int) -> None:
    """PyTorch's init for recurrent layers: every parameter ~ U(-1/sqrt(H), 1/sqrt(H)), drawn
    in registration order from torch's generator (so a seeded model equals PyTorch's)."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    with no_grad():
        for weight in module.parameters():
            weight._data.uniform_(-bound, bound)


def _new_parameter(shape: tuple, factory: dict) -> Parameter:
    return Parameter(torch.empty(shape, **factory))


# -------------------------------------------------------------------------------------------------
# Running one layer in one direction over a packed batch
# -------------------------------------------------------------------------------------------------
def _step_function(mode: str, w_hh: Tensor, b_hh: Tensor | None) -> Any:
    """`step(gates_x, state) -> state` for one cell type; the state is a tuple (h,) or (h, c)."""
    if mode == "LSTM":
        return lambda gates_x, state: lstm_step(gates_x, state[0], state[1], w_hh)
    if mode == "GRU":
        return lambda gates_x, state: (gru_step(gates_x, state[0], w_hh, b_hh),)
    step = rnn_tanh_step if mode == "RNN_TANH" else rnn_relu_step
    return lambda gates_x, state: (step(gates_x, state[0], w_hh),)


def _input_gates(
    mode: str, data: Tensor, w_ih: Tensor, b_ih: Tensor | None, b_hh: Tensor | None
) -> Tensor:
    """The input's share of the gates for every step: data @ W_ih^T + b_ih (+ b_hh, which the
    GRU keeps apart)."""
    gates = data @ w_ih.t()
    if b_ih is not None:
        bias = b_ih if mode == "GRU" else b_ih + b_hh
        gates = gates + bias
    return gates


def _last_step_rows(batch_sizes: list[int]) -> Tensor:
    """For each sequence (in sorted order), the row of its last step in the packed data."""
    sizes = torch.tensor(batch_sizes, dtype=torch.int64)
    offsets = torch.cumsum(sizes, 0) - sizes
    lengths = (sizes.unsqueeze(0) > torch.arange(batch_sizes[0]).unsqueeze(1)).sum(dim=1)
    return Tensor._make(offsets[lengths - 1] + torch.arange(batch_sizes[0]))


def _run_forward_direction(
    step: Any, gates_x: Tensor, batch_sizes: list[int], state0: tuple
) -> tuple:
    """Steps 0, 1, ... T-1. Returns (output data, final state of every sequence)."""
    inputs = gates_x.split(batch_sizes) if len(batch_sizes) > 1 else (gates_x,)
    state, states = state0, []
    for gates_t in inputs:
        state = step(gates_t, state)
        states.append(state)
    output = minitorch.cat([s[0] for s in states]) if len(states) > 1 else state[0]
    if batch_sizes[-1] == batch_sizes[0]:  # every sequence runs to the last step
        return output, state
    # Short sequences ended earlier: pick each one's state at its own last step.
    last = _last_step_rows(batch_sizes).to(output.device)
    final = [output.index_select(0, last)]
    for k in range(1, len(state)):
        final.append(minitorch.cat([s[k] for s in states]).index_select(0, last))
    return output, tuple(final)


def _run_reverse_direction(
    step: Any, gates_x: Tensor, batch_sizes: list[int], state0: tuple
) -> tuple:
    """Steps T-1, ... 0 (the reverse direction). A sequence joins, with its initial state, at
    its own last step; the state after step 0 is every sequence's final state."""
    inputs = gates_x.split(batch_sizes) if len(batch_sizes) > 1 else (gates_x,)
    outputs: list[Tensor] = [None] * len(batch_sizes)  # type: ignore[list-item]
    state = tuple(s[: batch_sizes[-1]] for s in state0)
    for t in reversed(range(len(batch_sizes))):
        rows, joining = state[0].shape[0], batch_sizes[t]
        if joining > rows:
            state = tuple(minitorch.cat([s, s0[rows:joining]]) for s, s0 in zip(state, state0))
        state = step(inputs[t], state)
        outputs[t] = state[0]
    output = minitorch.cat(outputs) if len(outputs) > 1 else outputs[0]
    return output, state


# -------------------------------------------------------------------------------------------------
# Layers
# -------------------------------------------------------------------------------------------------
class RNNBase(Module):
    """What RNN, GRU and LSTM share: parameters per layer and direction, argument checks, and
    running the layers. `mode` is "RNN_TANH", "RNN_RELU", "GRU" or "LSTM"."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an "
                "element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size != 0:
            raise NotImplementedError("minitorch's LSTM does not support proj_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        factory = {"device": device, "dtype": dtype or torch.get_default_dtype()}
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = {
                    f"weight_ih{suffix}": (gate_size, layer_input),
                    f"weight_hh{suffix}": (gate_size, hidden_size),
                }
                if bias:
                    shapes[f"bias_ih{suffix}"] = (gate_size,)
                    shapes[f"bias_hh{suffix}"] = (gate_size,)
                for name, shape in shapes.items():
                    setattr(self, name, _new_parameter(shape, factory))
                self._all_weights.append(list(shapes))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_init(self, self.hidden_size)

    @property
    def _flat_weights_names(self) -> list[str]:
        return [name for names in self._all_weights for name in names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """PyTorch packs weights for cuDNN here; minitorch has nothing to do."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # Forward -----------------------------------------------------------------------------------
    @property
    def _state_size(self) -> int:
        return 2 if self.mode == "LSTM" else 1

    def forward(self, input: Any, hx: Any = None) -> tuple:  # noqa: A002 (PyTorch's name)
        """`input`: (T, B, input_size) ((B, T, input_size) with batch_first), (T, input_size)
        unbatched, or a PackedSequence. `hx`: h0 ((h0, c0) for the LSTM), each of shape
        (num_layers * directions, B, hidden_size), zeros when None.

        Returns (output, h_n) ((output, (h_n, c_n)) for the LSTM). `output` holds the last
        layer's h at every step (both directions side by side), a PackedSequence when the input
        is one; `h_n` holds every layer's state after each sequence's own last step, in the
        caller's batch order."""
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = batch_sizes_t.tolist()
            batched = True
        else:
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"{self._get_name()}: Expected input to be 2D or 3D, got {input.dim()}D instead"
                )
            batched = input.dim() == 3
            sequence = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                sequence = sequence.transpose(0, 1)
            steps, batch = sequence.shape[0], sequence.shape[1]
            data = sequence.reshape(steps * batch, sequence.shape[2])
            batch_sizes = [batch] * steps
            sorted_indices = unsorted_indices = None
        if data.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                f"{data.shape[-1]}"
            )
        state = self._initial_state(hx, data, batch_sizes[0], batched)
        if sorted_indices is not None:  # the caller's batch order -> the packed (sorted) order
            state = tuple(s.index_select(1, sorted_indices) for s in state)

        output, final = self._run_layers(data, batch_sizes, state)

        if unsorted_indices is not None:
            final = tuple(s.index_select(1, unsorted_indices) for s in final)
        if packed:
            output = PackedSequence(output, batch_sizes_t, sorted_indices, unsorted_indices)
        else:
            output = output.reshape(steps, batch, output.shape[-1])
            if not batched:
                output = output.squeeze(1)
                final = tuple(s.squeeze(1) for s in final)
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, (final if self.mode == "LSTM" else final[0])

    def _run_layers(self, data: Tensor, batch_sizes: list[int], state: tuple) -> tuple:
        """All layers and directions on packed data; returns (output data, (h_n[, c_n]))."""
        directions = 2 if self.bidirectional else 1
        finals: list[tuple] = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                data = minitorch.nn.functional.dropout(data, self.dropout, training=True)
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                w_ih, w_hh, *biases = self.all_weights[index]
                b_ih, b_hh = biases if biases else (None, None)
                gates_x = _input_gates(self.mode, data, w_ih, b_ih, b_hh)
                step = _step_function(self.mode, w_hh, b_hh)
                run = _run_reverse_direction if direction == 1 else _run_forward_direction
                output, final = run(step, gates_x, batch_sizes, tuple(s[index] for s in state))
                outputs.append(output)
                finals.append(final)
            data = outputs[0] if directions == 1 else minitorch.cat(outputs, 1)
        stacked = tuple(
            minitorch.stack([final[k] for final in finals]) for k in range(self._state_size)
        )
        return data, stacked

    def _initial_state(self, hx: Any, data: Tensor, batch: int, batched: bool) -> tuple:
        """h0 (and c0) as (layers * directions, batch, hidden); zeros when not given."""
        directions = 2 if self.bidirectional else 1
        expected = (self.num_layers * directions, batch, self.hidden_size)
        if hx is None:
            zeros = data.new_zeros(expected)
            return (zeros,) * self._state_size
        states = tuple(hx) if self.mode == "LSTM" else (hx,)
        want = 3 if batched else 2
        if any(s.dim() != want for s in states):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if self.mode == "LSTM":
                got = ", ".join(f"{s.dim()}-D" for s in states)
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got ({got}) tensors"
                )
            raise RuntimeError(
                f"For {kind} input, hx should also be {want}-D but got {states[0].dim()}-D tensor"
            )
        if not batched:
            states = tuple(s.unsqueeze(1) for s in states)
        for k, s in enumerate(states):
            if tuple(s.shape) != expected:
                which = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
                raise RuntimeError(f"Expected {which} size {expected}, got {list(s.shape)}")
        return states


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(
            mode,
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            0,
            device,
            dtype,
        )
        self.nonlinearity = nonlinearity


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gates r, z, n; see ops/rnn.py gru_step)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o); returns (output, (h_n, c_n))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


# -------------------------------------------------------------------------------------------------
# Cells: one time step, the state passed in and out by the caller
# -------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Parameters weight_ih (G*H, I), weight_hh (G*H, H), bias_ih, bias_hh (G*H) and the
    argument checks shared by the cells."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        gates: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        factory = {"device": device, "dtype": dtype or torch.get_default_dtype()}
        self.weight_ih = _new_parameter((gates * hidden_size, input_size), factory)
        self.weight_hh = _new_parameter((gates * hidden_size, hidden_size), factory)
        if bias:
            self.bias_ih = _new_parameter((gates * hidden_size,), factory)
            self.bias_hh = _new_parameter((gates * hidden_size,), factory)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_init(self, self.hidden_size)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _prepare(self, input: Tensor, states: tuple) -> tuple:  # noqa: A002
        """Check the arguments; return (batched input, batched states, was the input batched).
        A cell runs once per time step or tree node: checks that pass must cost little, so
        each message is built only when its check fails."""
        rank = input.dim()
        if rank != 2 and rank != 1:
            raise ValueError(
                f"{self._get_name()}: Expected input to be 1D or 2D, got {rank}D instead"
            )
        for s in states:
            if s is not None and s.dim() != 2 and s.dim() != 1:
                raise ValueError(
                    f"{self._get_name()}: Expected hidden to be 1D or 2D, got {s.dim()}D instead"
                )
        batched = rank == 2
        if not batched:
            input = input.unsqueeze(0)
        batch, features = input.shape
        if features != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {features} expected {self.input_size}"
            )
        prepared = []
        for k, s in enumerate(states):
            if s is None:
                s = input.new_zeros(batch, self.hidden_size)
            elif not batched:
                s = s.unsqueeze(0)
            shape = s.shape
            if shape[0] != batch:
                raise RuntimeError(
                    f"Input batch size {batch} doesn't match hidden{k} batch size {shape[0]}"
                )
            if shape[-1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{k} has inconsistent hidden_size: got {shape[-1]}, expected "
                    f"{self.hidden_size}"
                )
            prepared.append(s)
        return input, tuple(prepared), batched

    def _input_gates(self, input: Tensor, keep_b_hh_apart: bool = False) -> Tensor:  # noqa: A002
        gates = input @ self.weight_ih.t()
        if self.bias:
            gates = gates + (self.bias_ih if keep_b_hh_apart else self.bias_ih + self.bias_hh)
        return gates


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        input, (hx,), batched = self._prepare(input, (hx,))
        step = rnn_tanh_step if self.nonlinearity == "tanh" else rnn_relu_step
        h = step(self._input_gates(input), hx, self.weight_hh)
        return h if batched else h.squeeze(0)


class GRUCell(RNNCellBase):
    """One GRU step (gates r, z, n as in PyTorch)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        input, (hx,), batched = self._prepare(input, (hx,))
        h = gru_step(
            self._input_gates(input, keep_b_hh_apart=True), hx, self.weight_hh, self.bias_hh
        )
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (gates i, f, g, o as in PyTorch); returns (h', c')."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:  # noqa: A002
        states = (None, None) if hx is None else tuple(hx)
        input, (h, c), batched = self._prepare(input, states)
        h, c = lstm_cell(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))
