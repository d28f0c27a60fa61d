"""nn.utils.rnn against torch.nn.utils.rnn: padding, packing and unpacking give the same tensors,
indices and gradients, on hypothesis-made lists of sequence lengths."""

from __future__ import annotations

import pytest
import torch
import torch.nn.utils.rnn as trnn
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, leaves

import minitorch
import minitorch.nn.utils.rnn as mrnn

length_lists = st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=6)


def _values(shape: tuple, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _padded(lengths: list[int], batch_first: bool, features: int = 2) -> torch.Tensor:
    steps, batch = max(lengths), len(lengths)
    return _values((batch, steps, features) if batch_first else (steps, batch, features))


def _assert_same_packed(m: mrnn.PackedSequence, t: trnn.PackedSequence) -> None:
    assert isinstance(m, mrnn.PackedSequence) and isinstance(m, tuple)
    assert_close(m.data, t.data, "data")
    assert_close(m.batch_sizes, t.batch_sizes, "batch_sizes")
    assert m.batch_sizes.device.type == "cpu"
    for field in ("sorted_indices", "unsorted_indices"):
        mine, theirs = getattr(m, field), getattr(t, field)
        assert (mine is None) == (theirs is None), f"{field}: {mine} vs {theirs}"
        if theirs is not None:
            assert_close(mine, theirs, field)


def _assert_same_grads(m_out, t_out, m_inputs, t_inputs, seed: int = 1) -> None:
    """Gradients w.r.t. the inputs for the same random upstream gradient."""
    upstream = _values(tuple(t_out.shape), seed)
    t_grads = torch.autograd.grad(t_out, t_inputs, upstream)
    m_grads = minitorch.autograd.grad(m_out, m_inputs, minitorch.Tensor(upstream.clone()))
    for i, (m, t) in enumerate(zip(m_grads, t_grads)):
        assert_close(m, t, f"gradient of input {i}")


@given(length_lists, st.booleans(), st.booleans())
def test_pack_padded_sequence_matches_torch(lengths, batch_first, enforce_sorted):
    if enforce_sorted:
        lengths = sorted(lengths, reverse=True)
    values = _padded(lengths, batch_first)
    (t_x,), (m_x,) = leaves(torch, [values]), leaves(minitorch, [values])
    t = trnn.pack_padded_sequence(t_x, lengths, batch_first, enforce_sorted)
    m = mrnn.pack_padded_sequence(m_x, lengths, batch_first, enforce_sorted)
    _assert_same_packed(m, t)
    _assert_same_grads(m.data, t.data, [m_x], [t_x])


@given(length_lists, st.booleans(), st.sampled_from([0.0, -1.5]), st.integers(0, 2))
def test_pad_packed_sequence_matches_torch(lengths, batch_first, padding_value, extra):
    values = _padded(lengths, False)
    (t_x,), (m_x,) = leaves(torch, [values]), leaves(minitorch, [values])
    t_packed = trnn.pack_padded_sequence(t_x, lengths, enforce_sorted=False)
    m_packed = mrnn.pack_padded_sequence(m_x, lengths, enforce_sorted=False)
    total = max(lengths) + extra if extra else None
    t_out, t_lengths = trnn.pad_packed_sequence(t_packed, batch_first, padding_value, total)
    m_out, m_lengths = mrnn.pad_packed_sequence(m_packed, batch_first, padding_value, total)
    assert_close(m_out, t_out, "padded output")
    assert_close(m_lengths, t_lengths, "lengths")
    _assert_same_grads(m_out, t_out, [m_x], [t_x])


@given(length_lists, st.booleans())
def test_pad_then_pack_round_trip_gives_back_the_valid_steps(lengths, batch_first):
    values = _padded(lengths, batch_first)
    x = minitorch.Tensor(values)
    packed = mrnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted=False)
    padded, back = mrnn.pad_packed_sequence(packed, batch_first, padding_value=7.0)
    assert back.tolist() == lengths
    for b, length in enumerate(lengths):
        row = padded[b] if batch_first else padded[:, b]
        given_row = values[b] if batch_first else values[:, b]
        assert torch.equal(row._data[:length], given_row[:length])
        assert bool((row._data[length:] == 7.0).all())


@given(length_lists, st.booleans(), st.sampled_from(["right", "left"]))
def test_pad_sequence_matches_torch(lengths, batch_first, padding_side):
    values = [_values((n, 3), seed) for seed, n in enumerate(lengths)]
    t_seqs, m_seqs = leaves(torch, values), leaves(minitorch, values)
    t_out = trnn.pad_sequence(t_seqs, batch_first, -2.0, padding_side)
    m_out = mrnn.pad_sequence(m_seqs, batch_first, -2.0, padding_side)
    assert_close(m_out, t_out, "padded")
    _assert_same_grads(m_out, t_out, m_seqs, t_seqs)


@given(length_lists, st.booleans())
def test_pack_sequence_and_unpack_sequence_match_torch(lengths, enforce_sorted):
    if enforce_sorted:
        lengths = sorted(lengths, reverse=True)
    values = [_values((n, 2), seed) for seed, n in enumerate(lengths)]
    t_seqs, m_seqs = leaves(torch, values), leaves(minitorch, values)
    t_packed = trnn.pack_sequence(t_seqs, enforce_sorted)
    m_packed = mrnn.pack_sequence(m_seqs, enforce_sorted)
    _assert_same_packed(m_packed, t_packed)
    _assert_same_grads(m_packed.data, t_packed.data, m_seqs, t_seqs)
    unpacked = mrnn.unpack_sequence(m_packed)
    assert len(unpacked) == len(values)
    for m, t in zip(unpacked, trnn.unpack_sequence(t_packed)):
        assert_close(m, t, "unpacked sequence")


def test_unpad_sequence_matches_torch():
    lengths = [2, 4, 1]
    values = _padded(lengths, True)
    m_out = mrnn.unpad_sequence(minitorch.Tensor(values), minitorch.tensor(lengths), True)
    t_out = trnn.unpad_sequence(values, torch.tensor(lengths), True)
    for m, t in zip(m_out, t_out):
        assert_close(m, t, "unpadded")


@pytest.mark.parametrize(
    "lengths",
    [[3, 1, 2], torch.tensor([3, 1, 2]), minitorch.tensor([3, 1, 2])],
    ids=["list", "torch-tensor", "minitorch-tensor"],
)
def test_lengths_may_be_a_list_or_a_tensor(lengths):
    packed = mrnn.pack_padded_sequence(minitorch.randn(3, 3, 2), lengths, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1]
    assert packed.batch_sizes.dtype == torch.int64
    assert packed.sorted_indices.tolist() == [0, 2, 1]


def test_packed_sequence_is_a_named_tuple_like_torchs():
    data, sizes = minitorch.randn(4, 2), minitorch.tensor([2, 2])
    packed = mrnn.PackedSequence(data, sizes, minitorch.tensor([1, 0]))
    assert packed._fields == trnn.PackedSequence._fields
    assert packed.unsorted_indices.tolist() == [1, 0]  # computed from sorted_indices
    first, batch_sizes, _, _ = packed
    assert first is data and batch_sizes is sizes
    assert mrnn.PackedSequence((data, sizes)).sorted_indices is None
    converted = packed.to(torch.float64)
    assert converted.data.dtype == torch.float64 and converted.batch_sizes is sizes
    assert isinstance(converted, mrnn.PackedSequence)


def _both_raise(call) -> None:
    """minitorch raises the error PyTorch raises (same type, same message)."""
    with pytest.raises(Exception) as t_error:
        call(trnn, torch)
    with pytest.raises(type(t_error.value)) as m_error:
        call(mrnn, minitorch)
    assert str(m_error.value) == str(t_error.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda rnn, lib: rnn.pack_padded_sequence(lib.zeros(4, 3, 2), [2, 4, 1]),
        lambda rnn, lib: rnn.pack_padded_sequence(lib.zeros(4, 3, 2), [2, 4]),
        lambda rnn, lib: rnn.pack_padded_sequence(
            lib.zeros(4, 3, 2), [4, 0, 1], enforce_sorted=False
        ),
        lambda rnn, lib: rnn.pad_packed_sequence(
            rnn.pack_sequence([lib.zeros(4, 2)]), total_length=2
        ),
        lambda rnn, lib: rnn.pack_sequence([]),
        lambda rnn, lib: rnn.pad_sequence([lib.zeros(2, 3), lib.zeros(3, 4)]),
        lambda rnn, lib: rnn.pad_sequence([lib.zeros(2, 3)], padding_side="middle"),
    ],
    ids=[
        "unsorted",
        "lengths-count",
        "zero-length",
        "total-length",
        "empty-list",
        "trailing-size",
        "padding-side",
    ],
)
def test_errors_match_torch(call):
    _both_raise(call)
