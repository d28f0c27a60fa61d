"""Datasets and the `DataLoader`, named and behaving like `torch.utils.data` (single process).

    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True,
                        generator=minitorch.Generator().manual_seed(0))
    for xb, yb in loader:
        ...

- A `Dataset` is anything with `__getitem__(index)` and `__len__()`.
- The `DataLoader` draws indices (in order, or a fresh permutation every epoch with `shuffle`),
  fetches `batch_size` samples and merges them with `collate_fn` (`default_collate` stacks
  tensors and numbers, and recurses into tuples, lists and dicts).
- `pad_collate` merges variable-length sequences into one padded tensor plus their lengths, the
  input that `nn.utils.rnn.pack_padded_sequence` wants.

Random numbers come from torch's generators, consumed exactly as torch's DataLoader consumes
them, so a seeded program shuffles identically under `import torch` and `import minitorch as torch`.
"""

from __future__ import annotations

import collections.abc
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

import minitorch
from minitorch.tensor import Tensor


class Dataset:
    """Base class for map-style datasets: subclasses define `__getitem__` and `__len__`."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Sample i is `(t[i] for t in tensors)`; all tensors share their first dimension."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors or any(t.size(0) != tensors[0].size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Any, lengths: Sequence[int | float], generator: torch.Generator | None = None
) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (or fractions summing
    to 1, the remainder going round-robin to the first subsets), like torch's `random_split`."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(len(dataset) * fraction)) for fraction in lengths]
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    generator = generator if generator is not None else torch.default_generator
    order = torch.randperm(sum(lengths), generator=generator).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start : start + length]))
        start += length
    return subsets


class DataLoader:
    """Iterate over `dataset` in batches.

    Args:
        dataset: a map-style dataset (`__getitem__` and `__len__`).
        batch_size: samples per batch; None yields single samples without a batch dimension.
        shuffle: a new random order every epoch (from `generator`, or torch's global one).
        collate_fn: merges a list of samples into a batch (default: `default_collate`).
        drop_last: skip the last batch when it is smaller than `batch_size`.
        generator: a `torch.Generator` (also `minitorch.Generator`) for reproducible shuffling.
        num_workers, pin_memory, ...: accepted for compatibility; loading happens in this
            process, which gives the same batches.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        generator: torch.Generator | None = None,
        **compatibility_options: Any,
    ) -> None:
        if sampler is not None or batch_sampler is not None:
            raise NotImplementedError("minitorch's DataLoader takes shuffle=, not a sampler")
        if batch_size is not None and batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator
        self.num_workers = num_workers
        if collate_fn is None:
            collate_fn = default_collate if batch_size is not None else default_convert
        self.collate_fn = collate_fn

    def __len__(self) -> int:
        if self.batch_size is None:
            return len(self.dataset)
        if self.drop_last:
            return len(self.dataset) // self.batch_size
        return math.ceil(len(self.dataset) / self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        # torch's DataLoader draws a base seed (for worker processes) from the generator every
        # time an iterator is made; drawing it too keeps the random streams identical.
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)
        return self._batches()

    def _batches(self) -> Iterator[Any]:
        if self.batch_size is None:
            for index in self._indices():
                yield self.collate_fn(self.dataset[index])
            return
        indices = []
        for index in self._indices():
            indices.append(index)
            if len(indices) == self.batch_size:
                yield self.collate_fn([self.dataset[i] for i in indices])
                indices = []
        if indices and not self.drop_last:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def _indices(self) -> Iterator[int]:
        """The sample indices of one epoch, drawn lazily like torch's samplers."""
        n = len(self.dataset)
        if not self.shuffle:
            yield from range(n)
            return
        generator = self.generator
        if generator is None:  # as torch's RandomSampler: a fresh generator seeded globally
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            generator = torch.Generator()
            generator.manual_seed(seed)
        yield from torch.randperm(n, generator=generator).tolist()
        # torch's RandomSampler draws one more (empty) slice of a permutation when an epoch
        # ends; so must we, or a shared generator would drift from torch's.
        torch.randperm(n, generator=generator)


# Collate functions --------------------------------------------------------------------------------
def default_collate(batch: list) -> Any:
    """Merge a list of samples into a batch, following the structure of the first sample:
    tensors are stacked along a new first dim, Python floats/ints/bools become float64/int64/
    bool tensors, numpy arrays become tensors, strings stay a sequence, and tuples, lists and
    dicts are merged field by field (tuples give lists, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return minitorch.stack(list(batch), 0)
    if isinstance(elem, torch.Tensor):
        return Tensor._make(torch.stack(list(batch), 0))
    if type(elem).__module__ == "numpy" and type(elem).__name__ == "ndarray":
        return minitorch.stack([minitorch.as_tensor(b) for b in batch], 0)
    if type(elem).__module__ == "numpy" and hasattr(elem, "dtype"):  # numpy scalars
        return minitorch.tensor([b.item() for b in batch], dtype=_numpy_dtype(elem))
    if isinstance(elem, bool):
        return minitorch.tensor(batch, dtype=minitorch.bool)
    if isinstance(elem, float):
        return minitorch.tensor(batch, dtype=minitorch.float64)
    if isinstance(elem, int):
        return minitorch.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return type(elem)({key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        merged = [default_collate(samples) for samples in zip(*batch)]
        return merged if isinstance(elem, tuple) else type(elem)(merged)
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem)}"
    )


def default_convert(sample: Any) -> Any:
    """What `batch_size=None` yields: numpy arrays and scalars become tensors, inside dicts,
    lists and tuples too (tuples become lists, as in PyTorch); everything else stays."""
    if type(sample).__module__ == "numpy" and hasattr(sample, "dtype"):
        return minitorch.as_tensor(sample)
    if isinstance(sample, collections.abc.Mapping):
        return type(sample)({key: default_convert(value) for key, value in sample.items()})
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):  # namedtuple
        return type(sample)(*(default_convert(item) for item in sample))
    if isinstance(sample, tuple):
        return [default_convert(item) for item in sample]
    if isinstance(sample, list):
        return [default_convert(item) for item in sample]
    return sample


def _numpy_dtype(value: Any) -> torch.dtype:
    return torch.from_numpy(value.reshape(1) if hasattr(value, "reshape") else value).dtype


def pad_collate(
    batch: Sequence[tuple[Tensor, Any]], batch_first: bool = True, padding_value: float = 0.0
) -> tuple[Tensor, Tensor, Any]:
    """Merge `(sequence, label)` samples whose sequences differ in length.

    Each sequence has shape `[length, *features]`. Returns `(padded, lengths, labels)`:
    `padded` is `[batch, max_length, *features]` (`[max_length, batch, ...]` with
    `batch_first=False`), filled with `padding_value` past each sequence's end; `lengths` is an
    int64 tensor (on the CPU, as `pack_padded_sequence` wants it); `labels` are merged with
    `default_collate`. Sequences keep the batch's order (pack with `enforce_sorted=False`).
    Use `functools.partial(pad_collate, batch_first=False)` to change the options.
    """
    sequences = [sample[0] for sample in batch]
    lengths = [len(s) for s in sequences]
    first = sequences[0]
    padded = torch.full(
        (len(sequences), max(lengths), *first.shape[1:]),
        padding_value,
        dtype=first.dtype,
        device=first.device,
    )
    for row, sequence in enumerate(sequences):
        padded[row, : len(sequence)] = sequence._data
    if not batch_first:
        padded = padded.transpose(0, 1).contiguous()
    labels = default_collate([sample[1] for sample in batch])
    return Tensor._make(padded), minitorch.tensor(lengths, dtype=minitorch.int64), labels


__all__ = [
    "DataLoader",
    "Dataset",
    "Subset",
    "TensorDataset",
    "default_collate",
    "default_convert",
    "pad_collate",
    "random_split",
]
