"""Variable-length sequences: padding and packing, as in `torch.nn.utils.rnn`.

A batch of sequences of different lengths can be stored two ways:

- **padded**: one tensor of shape (T, B, *) (or (B, T, *) with `batch_first`), where T is the
  longest length and the short sequences are filled up with `padding_value`;
- **packed**: a `PackedSequence` whose `data` holds only the valid steps, time step by time step:
  first step 0 of every sequence, then step 1 of every sequence still running, and so on.
  `batch_sizes[t]` says how many sequences are still running at step t. Inside a packed sequence
  the batch is sorted by decreasing length; `sorted_indices` / `unsorted_indices` map between
  that order and the caller's order.

Packing lets a recurrent network skip the padding altogether: at step t it only processes the
first `batch_sizes[t]` rows. Every function here moves rows with a single `index_select` on the
data, so gradients flow back through packing and unpacking.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

import minitorch
from minitorch.tensor import Tensor


class PackedSequence_(NamedTuple):  # noqa: N801 (PyTorch's name)
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """A packed batch of variable-length sequences (a named tuple, as PyTorch's).

    Fields: `data` (sum of lengths, *), `batch_sizes` (int64 CPU tensor, one entry per time step),
    `sorted_indices` (sorted position -> original batch index, or None when the batch was given
    sorted) and `unsorted_indices` (its inverse). Build one with `pack_padded_sequence` or
    `pack_sequence` rather than by hand.
    """

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)) as PyTorch allows
            data, batch_sizes = data
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """Move or convert `data` (and the indices, to data's device); batch_sizes stay on CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        device = data.device
        indices = [i if i is None else i.to(device) for i in self[2:]]
        return type(self)(data, self.batch_sizes, *indices)

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to("cuda")

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=torch.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=torch.float32)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


# -------------------------------------------------------------------------------------------------
# Index bookkeeping (plain torch int64 tensors on the CPU)
# -------------------------------------------------------------------------------------------------
def _invert_permutation(permutation: Tensor) -> Tensor:
    raw = permutation._data
    inverse = torch.empty_like(raw)
    inverse[raw] = torch.arange(raw.numel(), device=raw.device)
    return Tensor._make(inverse)


def _lengths_tensor(lengths: Any) -> torch.Tensor:
    """`lengths` (list, torch or minitorch tensor) as a CPU int64 torch tensor."""
    if isinstance(lengths, Tensor):
        lengths = torch.as_tensor(lengths.tolist())  # a value read: NOTE [Forward record]
    if isinstance(lengths, torch.Tensor):
        return lengths.detach().to("cpu", torch.int64).reshape(-1)
    return torch.as_tensor(list(lengths), dtype=torch.int64)


def _batch_sizes(sorted_lengths: torch.Tensor) -> torch.Tensor:
    """batch_sizes[t] = how many sequences are longer than t (lengths sorted decreasing)."""
    steps = torch.arange(int(sorted_lengths[0]))
    return (sorted_lengths.unsqueeze(0) > steps.unsqueeze(1)).sum(dim=1)


def _select_rows(source: Tensor, rows: torch.Tensor) -> Tensor:
    """`source[rows]` along dim 0, differentiable (one IndexSelect node)."""
    return source.index_select(0, Tensor._make(rows.to(source.device)))


def _with_padding_row(data: Tensor, padding_value: float) -> Tensor:
    """`data` with one extra row of `padding_value` at the end: padded slots point at it."""
    pad = Tensor._make(
        torch.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    )
    return minitorch.cat([data, pad], 0)


# -------------------------------------------------------------------------------------------------
# Public functions
# -------------------------------------------------------------------------------------------------
def pad_sequence(
    sequences: Tensor | Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of shape (L_i, *) into one (T, B, *) tensor (B, T, * with batch_first),
    filling up the short ones with `padding_value` on the right (or on the left)."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = sequences[0].shape[1:]
    for seq in sequences[1:]:
        _check_trailing(seq.shape[1:], trailing)
    lengths = torch.tensor([seq.shape[0] for seq in sequences], dtype=torch.int64)
    total, longest = int(lengths.sum()), int(lengths.max())
    starts = torch.cumsum(lengths, 0) - lengths
    # rows[t, b]: the row of the concatenated sequences that goes to slot (t, b); `total` = pad.
    steps = torch.arange(longest).unsqueeze(1)
    if padding_side == "left":
        steps = steps - (longest - lengths).unsqueeze(0)
    valid = (steps >= 0) & (steps < lengths.unsqueeze(0))
    rows = torch.where(valid, starts.unsqueeze(0) + steps, total)
    if batch_first:
        rows = rows.t()
    data = _with_padding_row(minitorch.cat(sequences, 0), padding_value)
    return _select_rows(data, rows.reshape(-1)).reshape(*rows.shape, *trailing)


def _check_trailing(shape: torch.Size, expected: torch.Size) -> None:
    """PyTorch's broadcasting error when two sequences' trailing sizes differ."""
    if len(shape) != len(expected):
        raise RuntimeError(
            f"The expanded size of the tensor ({len(shape)}) must match the existing size "
            f"({len(expected)}) of trailing dimensions"
        )
    for dim, (a, b) in enumerate(zip(expected, shape)):
        if a != b:
            raise RuntimeError(
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {dim + 1}"
            )


def pack_padded_sequence(
    input: Tensor,  # noqa: A002 (PyTorch's name)
    lengths: Any,
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with `batch_first`) whose sequence b has
    `lengths[b]` valid steps. With `enforce_sorted=True` the lengths must already decrease;
    with False the batch is sorted here and the PackedSequence remembers how to undo it."""
    lengths = _lengths_tensor(lengths)
    batch_dim = 0 if batch_first else 1
    batch = input.shape[batch_dim]
    if lengths.numel() != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.numel()} "
            f"(batch_size={batch})"
        )
    if enforce_sorted:
        if bool((lengths[1:] > lengths[:-1]).any()):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        order = torch.arange(batch)
        sorted_indices = None
    else:
        lengths, order = torch.sort(lengths, descending=True)
        sorted_indices = Tensor._make(order.to(input.device))
    if bool((lengths <= 0).any()):
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    steps = input.shape[1 - batch_dim]
    if int(lengths.max()) > steps:
        raise ValueError(
            f"pack_padded_sequence: a length ({int(lengths.max())}) exceeds the padded "
            f"sequence length ({steps})"
        )
    batch_sizes = _batch_sizes(lengths)
    # Slot (t, b) of the packed layout is step t of the b-th longest sequence, `order[b]` in the
    # input. Taking the valid slots row by row (time-major) gives the packed order.
    time = torch.arange(len(batch_sizes)).unsqueeze(1)
    rank = torch.arange(batch).unsqueeze(0)
    column = order.unsqueeze(0)
    positions = column * steps + time if batch_first else time * batch + column
    flat = positions[rank < batch_sizes.unsqueeze(1)]
    data = _select_rows(input.reshape(-1, *input.shape[2:]), flat)
    return PackedSequence(data, Tensor._make(batch_sizes), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Undo packing: return the padded batch (T, B, *) (B, T, * with `batch_first`) in the
    original batch order, and each sequence's length (int64 CPU tensor). `total_length` pads T
    up to a fixed size."""
    data, batch_sizes_t, _, unsorted_indices = sequence
    batch_sizes = batch_sizes_t._data.to("cpu", torch.int64)
    longest = len(batch_sizes)
    if total_length is not None:
        if total_length < longest:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{longest}"
            )
        longest = total_length
    batch = int(batch_sizes[0])
    # rank[b]: where the caller's sequence b sits in the sorted (packed) order.
    if unsorted_indices is None:
        rank = torch.arange(batch)
    else:
        rank = unsorted_indices._data.to("cpu", torch.int64)
    sizes = torch.zeros(longest, dtype=torch.int64)
    sizes[: len(batch_sizes)] = batch_sizes
    offsets = torch.cumsum(sizes, 0) - sizes
    valid = rank.unsqueeze(0) < sizes.unsqueeze(1)  # (T, B)
    rows = torch.where(valid, offsets.unsqueeze(1) + rank.unsqueeze(0), data.shape[0])
    if batch_first:
        rows = rows.t()
    padded = _select_rows(_with_padding_row(data, padding_value), rows.reshape(-1))
    sorted_lengths = (batch_sizes.unsqueeze(0) > torch.arange(batch).unsqueeze(1)).sum(dim=1)
    lengths = Tensor._make(sorted_lengths[rank])
    return padded.reshape(*rows.shape, *data.shape[1:]), lengths


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors: `pack_padded_sequence(pad_sequence(sequences), lengths)`."""
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lengths = [seq.shape[0] for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Any, batch_first: bool = False
) -> list[Tensor]:
    """Split a padded batch back into a list of sequences of their own lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lengths = _lengths_tensor(lengths).tolist()
    return [padded_sequences[b, :length] for b, length in enumerate(lengths)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Split a PackedSequence back into the list of sequences, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence",
    "pad_sequence",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pack_sequence",
    "unpad_sequence",
    "unpack_sequence",
]
