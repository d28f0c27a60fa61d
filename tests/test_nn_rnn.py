"""RNN, GRU, LSTM and their cells against PyTorch in float64, weights copied over: outputs, final
states and the gradients w.r.t. the input, the initial state and every parameter. Padded, packed
(unsorted lengths), batch_first and unbatched inputs; 1-2 layers; both directions. Also the fused
LSTM step Function (gradcheck, second derivatives), initialization, repr and error messages."""

from __future__ import annotations

import pytest
import torch
import torch.nn.utils.rnn as trnn
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, check_gradcheck, check_op, check_second_order, leaves

import minitorch
import minitorch.nn.utils.rnn as mrnn
from minitorch.ops.rnn import gru_step, lstm_cell, lstm_step

F64 = torch.float64
INPUT, HIDDEN = 3, 4

# kind -> (torch class, minitorch class, extra constructor arguments)
LAYERS = {
    "rnn_tanh": (torch.nn.RNN, minitorch.nn.RNN, {"nonlinearity": "tanh"}),
    "rnn_relu": (torch.nn.RNN, minitorch.nn.RNN, {"nonlinearity": "relu"}),
    "gru": (torch.nn.GRU, minitorch.nn.GRU, {}),
    "lstm": (torch.nn.LSTM, minitorch.nn.LSTM, {}),
}
CELLS = {
    "rnn_tanh": (torch.nn.RNNCell, minitorch.nn.RNNCell, {"nonlinearity": "tanh"}),
    "rnn_relu": (torch.nn.RNNCell, minitorch.nn.RNNCell, {"nonlinearity": "relu"}),
    "gru": (torch.nn.GRUCell, minitorch.nn.GRUCell, {}),
    "lstm": (torch.nn.LSTMCell, minitorch.nn.LSTMCell, {}),
}


def _values(shape: tuple, seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _twin_modules(table: dict, kind: str, **kwargs):
    """The same layer in both libraries, float64, minitorch's weights copied from torch's."""
    t_cls, m_cls, extra = table[kind]
    t_module = t_cls(INPUT, HIDDEN, dtype=F64, **extra, **kwargs)
    m_module = m_cls(INPUT, HIDDEN, dtype=F64, **extra, **kwargs)
    t_params, m_params = list(t_module.named_parameters()), list(m_module.named_parameters())
    assert [n for n, _ in m_params] == [n for n, _ in t_params]
    for (name, m), (_, t) in zip(m_params, t_params):
        assert m.shape == t.shape, f"{name}: {list(m.shape)} vs {list(t.shape)}"
        m._data.copy_(t.detach())
    return t_module, m_module


def _flat_outputs(result) -> list:
    """(output, h_n) or (output, (h_n, c_n)) as a flat list; a PackedSequence gives its data."""
    output, state = result
    if isinstance(output, (trnn.PackedSequence, mrnn.PackedSequence)):
        output = output.data
    return [output, *(state if isinstance(state, tuple) else (state,))]


def _compare(t_module, m_module, call, values: list, seed: int = 0) -> None:
    """`call(lib, module, *inputs)` gives equal outputs in both libraries, and equal gradients
    w.r.t. the inputs and all parameters for the same random upstream gradients."""
    t_inputs, m_inputs = leaves(torch, values), leaves(minitorch, values)
    t_outs = _flat_outputs(call(torch, t_module, *t_inputs))
    m_outs = _flat_outputs(call(minitorch, m_module, *m_inputs))
    assert len(m_outs) == len(t_outs)
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        assert_close(m, t, f"output {i}")
    gen = torch.Generator().manual_seed(seed + 1)
    upstream = [torch.randn(t.shape, generator=gen, dtype=F64) for t in t_outs]
    t_wrt = t_inputs + list(t_module.parameters())
    m_wrt = m_inputs + list(m_module.parameters())
    t_grads = torch.autograd.grad(t_outs, t_wrt, upstream, allow_unused=True)
    m_upstream = [minitorch.Tensor(u.clone()) for u in upstream]
    m_grads = minitorch.autograd.grad(m_outs, m_wrt, m_upstream, allow_unused=True)
    names = [f"input {i}" for i in range(len(values))]
    names += [name for name, _ in t_module.named_parameters()]
    for name, m, t in zip(names, m_grads, t_grads):
        assert_close(m, t, f"gradient of {name}", none_is_zero=True)


def _state_args(lib, kind: str, states: list):
    """hx as the layer takes it: None, h0, or (h0, c0) for the LSTM."""
    if not states:
        return None
    return tuple(states) if kind == "lstm" else states[0]


def _state_values(kind: str, shape: tuple, seed: int) -> list:
    return [_values(shape, seed + k) for k in range(2 if kind == "lstm" else 1)]


# -------------------------------------------------------------------------------------------------
# Layers on padded input
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("kind", list(LAYERS))
def test_layer_on_padded_input_matches_torch(
    kind, num_layers, batch_first, initial_state, bidirectional
):
    t_module, m_module = _twin_modules(
        LAYERS, kind, num_layers=num_layers, batch_first=batch_first, bidirectional=bidirectional
    )
    steps, batch = 4, 3
    x = _values((batch, steps, INPUT) if batch_first else (steps, batch, INPUT), 0)
    directions = 2 if bidirectional else 1
    states = _state_values(kind, (num_layers * directions, batch, HIDDEN), 10)
    values = [x] + (states if initial_state else [])

    def call(lib, module, x, *states):
        return module(x, _state_args(lib, kind, list(states)))

    _compare(t_module, m_module, call, values)


@pytest.mark.parametrize("kind", list(LAYERS))
def test_layer_without_bias_matches_torch(kind):
    t_module, m_module = _twin_modules(LAYERS, kind, num_layers=2, bias=False)
    assert not any("bias" in name for name, _ in m_module.named_parameters())
    _compare(t_module, m_module, lambda lib, module, x: module(x), [_values((3, 2, INPUT), 0)])


@pytest.mark.parametrize("batch_first", [False, True])  # ignored for unbatched input
@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("kind", list(LAYERS))
def test_layer_on_unbatched_input_matches_torch(kind, initial_state, batch_first):
    t_module, m_module = _twin_modules(LAYERS, kind, num_layers=2, batch_first=batch_first)
    states = _state_values(kind, (2, HIDDEN), 10) if initial_state else []

    def call(lib, module, x, *states):
        return module(x, _state_args(lib, kind, list(states)))

    _compare(t_module, m_module, call, [_values((5, INPUT), 0)] + states)


# -------------------------------------------------------------------------------------------------
# Layers on packed input with unsorted lengths
# -------------------------------------------------------------------------------------------------
@given(
    kind=st.sampled_from(list(LAYERS)),
    lengths=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=5),
    num_layers=st.integers(min_value=1, max_value=2),
    bidirectional=st.booleans(),
    batch_first=st.booleans(),
    initial_state=st.booleans(),
    bias=st.booleans(),
)
def test_layer_on_packed_unsorted_input_matches_torch(
    kind, lengths, num_layers, bidirectional, batch_first, initial_state, bias
):
    t_module, m_module = _twin_modules(
        LAYERS, kind, num_layers=num_layers, bidirectional=bidirectional, bias=bias
    )
    steps, batch = max(lengths), len(lengths)
    x = _values((batch, steps, INPUT) if batch_first else (steps, batch, INPUT), 0)
    directions = 2 if bidirectional else 1
    states = _state_values(kind, (num_layers * directions, batch, HIDDEN), 10)
    values = [x] + (states if initial_state else [])

    def call(lib, module, x, *states):
        rnn = trnn if lib is torch else mrnn
        packed = rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted=False)
        output, state = module(packed, _state_args(lib, kind, list(states)))
        assert isinstance(output, rnn.PackedSequence)
        for field in ("batch_sizes", "sorted_indices", "unsorted_indices"):
            assert getattr(output, field) is getattr(packed, field)
        return output, state

    _compare(t_module, m_module, call, values)


def test_packed_final_state_equals_running_each_sequence_alone():
    """The point of packing: h_n of every sequence ignores the padding after its end."""
    minitorch.manual_seed(0)
    gru = minitorch.nn.GRU(INPUT, HIDDEN, batch_first=True, dtype=F64)
    lengths = [2, 5, 3]
    x = minitorch.Tensor(_values((3, 5, INPUT), 0))
    packed = mrnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    _, h_n = gru(packed)
    for b, length in enumerate(lengths):
        _, alone = gru(x[b, :length])
        assert_close(h_n[:, b], alone, f"sequence {b}")
    _, padded_h_n = gru(x)
    assert not torch.allclose(padded_h_n._data[:, 0], h_n._data[:, 0])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_one_fused_node_per_time_step(kind):
    layer = LAYERS[kind][1](INPUT, HIDDEN)
    packed = mrnn.pack_sequence([minitorch.randn(n, INPUT) for n in (6, 4, 1)])
    _, state = layer(packed)
    h_n = state[0] if kind == "lstm" else state
    seen, stack, steps = set(), [h_n.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        steps += node.name() == f"{kind.upper()}StepBackward"
        stack.extend(next_node for next_node, _ in node.next_functions)
    assert steps == 6


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_steps_free_what_they_saved_after_backward(kind):
    layer = LAYERS[kind][1](INPUT, HIDDEN)
    output, _ = layer(minitorch.randn(3, 2, INPUT))
    loss = output.sum()
    loss.backward(retain_graph=True)
    loss.backward()  # retained: a second pass works
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


# -------------------------------------------------------------------------------------------------
# Dropout, modes, initialization, repr
# -------------------------------------------------------------------------------------------------
def test_dropout_between_layers_acts_in_train_mode_only():
    t_module, m_module = _twin_modules(LAYERS, "lstm", num_layers=2, dropout=0.5)
    x = _values((4, 3, INPUT), 0)
    t_module.eval(), m_module.eval()
    _compare(t_module, m_module, lambda lib, module, x: module(x), [x])
    m_module.train()
    minitorch.manual_seed(1)
    first, _ = m_module(minitorch.Tensor(x))
    second, _ = m_module(minitorch.Tensor(x))
    eval_output, _ = m_module.eval()(minitorch.Tensor(x))
    assert not torch.allclose(first._data, eval_output._data)
    assert not torch.allclose(first._data, second._data)


def test_float32_no_grad_forward():
    lstm = minitorch.nn.LSTM(INPUT, HIDDEN, batch_first=True)
    with minitorch.no_grad():
        output, (h_n, c_n) = lstm(minitorch.randn(2, 5, INPUT))
    assert output.shape == (2, 5, HIDDEN) and h_n.shape == c_n.shape == (1, 2, HIDDEN)
    assert output.dtype == torch.float32 and not output.requires_grad


@pytest.mark.parametrize("table", [LAYERS, CELLS], ids=["layers", "cells"])
@pytest.mark.parametrize("kind", list(LAYERS))
def test_seeded_initialization_equals_torch(table, kind):
    t_cls, m_cls, extra = table[kind]
    torch.manual_seed(3)
    t_module = t_cls(INPUT, HIDDEN, **extra)
    minitorch.manual_seed(3)
    m_module = m_cls(INPUT, HIDDEN, **extra)
    for (name, m), (_, t) in zip(m_module.named_parameters(), t_module.named_parameters()):
        assert m.requires_grad and m.is_leaf
        assert_close(m, t, name)


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.LSTM(3, 5, num_layers=2, batch_first=True, dropout=0.1),
        lambda nn: nn.GRU(3, 5, bias=False, bidirectional=True),
        lambda nn: nn.RNN(3, 5, nonlinearity="relu"),
        lambda nn: nn.LSTMCell(3, 5),
        lambda nn: nn.RNNCell(3, 5, bias=False, nonlinearity="relu"),
        lambda nn: nn.GRUCell(3, 5),
    ],
)
def test_repr_matches_torch(make):
    assert repr(make(minitorch.nn)) == repr(make(torch.nn))


def test_all_weights_and_state_dict_keys_match_torch():
    t_module, m_module = _twin_modules(LAYERS, "gru", num_layers=2, bidirectional=True)
    assert list(m_module.state_dict()) == list(t_module.state_dict())
    assert [[w.shape for w in ws] for ws in m_module.all_weights] == [
        [w.shape for w in ws] for ws in t_module.all_weights
    ]
    m_module.flatten_parameters()  # accepted, nothing to do


# -------------------------------------------------------------------------------------------------
# Cells
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("initial_state", [False, True])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("kind", list(CELLS))
def test_cell_matches_torch(kind, batched, initial_state, bias):
    t_module, m_module = _twin_modules(CELLS, kind, bias=bias)
    lead = (3,) if batched else ()
    states = _state_values(kind, (*lead, HIDDEN), 10) if initial_state else []

    def call(lib, module, x, *states):
        result = module(x, _state_args(lib, kind, list(states)))
        # Shape the result like a layer's, (output, state), for the comparison helper.
        return (result[0], result[1]) if kind == "lstm" else (result, ())

    _compare(t_module, m_module, call, [_values((*lead, INPUT), 0)] + states)


def test_cell_unrolled_by_hand_equals_the_layer():
    """A Python loop over LSTMCell is what nn.LSTM computes (shared weights)."""
    cell, lstm = _twin_modules(CELLS, "lstm")[1], minitorch.nn.LSTM(INPUT, HIDDEN, dtype=F64)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(lstm, f"{name}_l0")._data.copy_(getattr(cell, name)._data)
    x = minitorch.Tensor(_values((4, 2, INPUT), 0))
    h = c = minitorch.zeros(2, HIDDEN, dtype=F64)
    outputs = []
    for x_t in x:
        h, c = cell(x_t, (h, c))
        outputs.append(h)
    output, (h_n, c_n) = lstm(x)
    assert_close(minitorch.stack(outputs), output._data, "outputs")
    assert_close(c, c_n[0], "c_n")


# -------------------------------------------------------------------------------------------------
# The fused step Functions (LSTM and GRU)
# -------------------------------------------------------------------------------------------------
def _lstm_step(lib, gates_x, h_prev, c_prev, w_hh):
    """minitorch's fused step, or the same math written with PyTorch's elementary ops."""
    if lib is minitorch:
        return lstm_step(gates_x, h_prev, c_prev, w_hh)
    rows = gates_x.shape[0]
    i, f, g, o = (gates_x + h_prev[:rows] @ w_hh.t()).chunk(4, 1)
    c = f.sigmoid() * c_prev[:rows] + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_step(lib, gates_x, h_prev, w_hh, b_hh):
    if lib is minitorch:
        return gru_step(gates_x, h_prev, w_hh, b_hh)
    h = h_prev[: gates_x.shape[0]]
    x_r, x_z, x_n = gates_x.chunk(3, 1)
    h_r, h_z, h_n = (h @ w_hh.t() + b_hh).chunk(3, 1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h


def _step_values(kind: str, batch: int, previous_batch: int, hidden: int, seed: int = 0):
    """The step function and values for its inputs (gates_x, h_prev, [c_prev], w_hh, [b_hh])."""
    if kind == "lstm":
        fn, gates, shapes = _lstm_step, 4 * hidden, [(previous_batch, hidden)] * 2
    else:
        fn, gates, shapes = _gru_step, 3 * hidden, [(previous_batch, hidden)]
    shapes = [(batch, gates), *shapes, (gates, hidden)] + ([(gates,)] if kind == "gru" else [])
    return fn, [_values(shape, seed + k) for k, shape in enumerate(shapes)]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("batch, previous_batch", [(3, 3), (2, 4)])
def test_fused_step_matches_torch(kind, batch, previous_batch):
    fn, values = _step_values(kind, batch, previous_batch, HIDDEN)
    check_op(fn, values, node_name=f"{kind.upper()}StepBackward")


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("batch, previous_batch", [(2, 3), (3, 3)])
def test_fused_step_gradcheck(kind, batch, previous_batch):
    check_gradcheck(*_step_values(kind, batch, previous_batch, 1))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_fused_step_second_derivatives_match_torch(kind):
    check_second_order(*_step_values(kind, 2, 3, 2))


def _lstm_cell(lib, x, h, c, w_ih, w_hh, b_ih=None, b_hh=None):
    """One nn.LSTMCell call: minitorch's fused node, torch's own lstm_cell."""
    if lib is minitorch:
        return lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)
    return torch._VF.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)


def _cell_values(bias: bool, batch: int = 3, inputs: int = 2, hidden: int = 2, seed: int = 0):
    shapes = [(batch, inputs), (batch, hidden), (batch, hidden), (4 * hidden, inputs),
              (4 * hidden, hidden)] + [(4 * hidden,)] * (2 if bias else 0)  # fmt: skip
    return [_values(shape, seed + k) for k, shape in enumerate(shapes)]


@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_cell_matches_torch(bias):
    check_op(_lstm_cell, _cell_values(bias, hidden=HIDDEN), node_name="LSTMCellStepBackward")


@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_cell_gradcheck_and_second_derivatives(bias):
    check_gradcheck(_lstm_cell, _cell_values(bias, batch=1, inputs=1, hidden=1))
    check_second_order(_lstm_cell, _cell_values(bias, batch=2))


def test_lstm_second_derivative_through_a_whole_layer():
    """create_graph=True through nn.LSTM on a packed batch (double backward of every step)."""
    t_module, m_module = _twin_modules(LAYERS, "lstm")
    lengths, x = [3, 1, 2], _values((3, 3, INPUT), 0)
    results = []
    for lib, module, rnn in ((torch, t_module, trnn), (minitorch, m_module, mrnn)):
        (leaf,) = leaves(lib, [x])
        _, (h_n, _) = module(rnn.pack_padded_sequence(leaf, lengths, enforce_sorted=False))
        (grad_x,) = lib.autograd.grad((h_n**2).sum(), leaf, create_graph=True)
        weight = module.weight_hh_l0
        results.append(lib.autograd.grad((grad_x**2).sum(), [leaf, weight]))
    for name, m, t in zip(["input", "weight_hh_l0"], results[1], results[0]):
        assert_close(m, t, f"second derivative w.r.t. {name}", rtol=1e-6, atol=1e-8)


# -------------------------------------------------------------------------------------------------
# Errors
# -------------------------------------------------------------------------------------------------
def _both_raise(call) -> None:
    """minitorch raises the error PyTorch raises (same type, same message)."""
    with pytest.raises(Exception) as t_error:
        call(torch)
    with pytest.raises(type(t_error.value)) as m_error:
        call(minitorch)
    assert str(m_error.value) == str(t_error.value)


ERRORS = {
    "input-size": lambda lib: lib.nn.LSTM(3, 5)(lib.zeros(2, 4, 4)),
    "input-dim": lambda lib: lib.nn.LSTM(3, 5)(lib.zeros(2, 2, 4, 3)),
    "lstm-h0-size": lambda lib: lib.nn.LSTM(3, 5)(
        lib.zeros(2, 4, 3), (lib.zeros(1, 2, 5), lib.zeros(1, 4, 5))
    ),
    "lstm-c0-size": lambda lib: lib.nn.LSTM(3, 5)(
        lib.zeros(2, 4, 3), (lib.zeros(1, 4, 5), lib.zeros(1, 4, 6))
    ),
    "gru-h0-size": lambda lib: lib.nn.GRU(3, 5)(lib.zeros(2, 4, 3), lib.zeros(1, 2, 5)),
    "batched-h0-dim": lambda lib: lib.nn.GRU(3, 5)(lib.zeros(2, 4, 3), lib.zeros(2, 5)),
    "unbatched-h0-dim": lambda lib: lib.nn.RNN(3, 5)(lib.zeros(4, 3), lib.zeros(1, 2, 5)),
    "lstm-batched-dims": lambda lib: lib.nn.LSTM(3, 5)(
        lib.zeros(2, 4, 3), (lib.zeros(4, 5), lib.zeros(4, 5))
    ),
    "lstm-unbatched-dims": lambda lib: lib.nn.LSTM(3, 5)(
        lib.zeros(4, 3), (lib.zeros(1, 4, 5), lib.zeros(1, 4, 5))
    ),
    "packed-h0-size": lambda lib: lib.nn.GRU(3, 5)(
        lib.nn.utils.rnn.pack_sequence([lib.zeros(2, 3)]), lib.zeros(1, 2, 5)
    ),
    "nonlinearity": lambda lib: lib.nn.RNN(3, 5, nonlinearity="foo"),
    "dropout-range": lambda lib: lib.nn.LSTM(3, 5, dropout=1.5),
    "cell-input-size": lambda lib: lib.nn.LSTMCell(3, 5)(lib.zeros(2, 4)),
    "cell-input-dim": lambda lib: lib.nn.LSTMCell(3, 5)(lib.zeros(2, 3, 3)),
    "cell-batch": lambda lib: lib.nn.RNNCell(3, 5)(lib.zeros(2, 3), lib.zeros(3, 5)),
    "cell-hidden-size": lambda lib: lib.nn.GRUCell(3, 5)(lib.zeros(2, 3), lib.zeros(2, 6)),
    "cell-c0-size": lambda lib: lib.nn.LSTMCell(3, 5)(
        lib.zeros(2, 3), (lib.zeros(2, 5), lib.zeros(2, 6))
    ),
    "cell-hidden-dim": lambda lib: lib.nn.RNNCell(3, 5)(lib.zeros(2, 3), lib.zeros(1, 2, 5)),
}


@pytest.mark.parametrize("call", list(ERRORS.values()), ids=list(ERRORS))
def test_errors_match_torch(call):
    _both_raise(call)


def test_dropout_with_one_layer_warns_like_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        minitorch.nn.LSTM(3, 5, dropout=0.5)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_lstm_on_packed_input_on_cuda_equals_cpu():
    lengths, x = [2, 4, 3], _values((4, 3, INPUT), 0)
    results = []
    for device in ("cpu", "cuda"):
        minitorch.manual_seed(0)
        lstm = minitorch.nn.LSTM(INPUT, HIDDEN, num_layers=2, dtype=F64).to(device)
        leaf = minitorch.Tensor(x.to(device), requires_grad=True)
        packed = mrnn.pack_padded_sequence(leaf, lengths, enforce_sorted=False)
        output, (h_n, c_n) = lstm(packed)
        assert output.data.device.type == device and h_n.device.type == device
        (output.data.sum() + (h_n * c_n).sum()).backward()
        results.append([output.data, h_n, c_n, leaf.grad, lstm.weight_hh_l0.grad])
    for i, (cpu, cuda) in enumerate(zip(*results)):
        assert_close(cuda.cpu(), cpu, f"result {i}")


def _train_lstm_classifier(torch, weights: dict, x, lengths, labels, steps: int = 3) -> list:
    """A PyTorch-style program: run unchanged with `torch` = the torch or the minitorch module."""
    nn = torch.nn
    model = nn.ModuleDict(
        {"lstm": nn.LSTM(INPUT, HIDDEN, batch_first=True), "head": nn.Linear(HIDDEN, 2)}
    )
    model.double()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(torch.tensor(weights[name].tolist(), dtype=torch.float64))
    losses = []
    for _ in range(steps):
        packed = nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=True, enforce_sorted=False
        )
        _, (h_n, _) = model["lstm"](packed)
        logits = model["head"](h_n[-1])
        loss = -logits.log_softmax(dim=1).gather(1, labels.unsqueeze(1)).mean()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= 0.5 * param.grad
                param.grad = None
        losses.append(loss.item())
    return losses


def test_training_program_runs_unchanged_and_matches_torch():
    reference = torch.nn.ModuleDict(
        {"lstm": torch.nn.LSTM(INPUT, HIDDEN, batch_first=True), "head": torch.nn.Linear(HIDDEN, 2)}
    ).double()
    weights = {name: p.detach().clone() for name, p in reference.named_parameters()}
    x, lengths, labels = _values((4, 5, INPUT), 0), [5, 2, 4, 1], torch.tensor([0, 1, 1, 0])
    expected = _train_lstm_classifier(torch, weights, x, lengths, labels)
    m_x, m_labels = minitorch.Tensor(x.clone()), minitorch.Tensor(labels.clone())
    actual = _train_lstm_classifier(minitorch, weights, m_x, lengths, m_labels)
    assert actual == pytest.approx(expected, rel=1e-9)
    assert expected[-1] < expected[0]


@pytest.mark.parametrize("kind", list(LAYERS))
def test_torch_autograd_never_does_the_work(kind):
    """The fused steps compute on storage: torch's autograd records and saves nothing."""
    packed_by_torch = []

    def pack(t):
        packed_by_torch.append(t)
        return t

    layer = LAYERS[kind][1](INPUT, HIDDEN, num_layers=2, bidirectional=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        x = minitorch.randn(5, 3, INPUT, requires_grad=True)
        packed = mrnn.pack_padded_sequence(x, [5, 2, 3], enforce_sorted=False)
        output, state = layer(packed)
        (output.data.sum() + sum(s.sum() for s in _flat_outputs((output, state))[1:])).backward()
    assert packed_by_torch == []
    for t in [output.data, x.grad, *layer.parameters(), *(p.grad for p in layer.parameters())]:
        assert not t._data.requires_grad and t._data.grad_fn is None
