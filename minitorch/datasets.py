"""Data for the course, all offline: scikit-learn's bundled digits and three synthetic tasks.

- `load_digits()`: 8x8 images of handwritten digits, a fixed train/test split.
- `make_spirals(n, classes, noise, seed)`: 2-D points on interleaved spiral arms.
- `make_sequences(n, ...)`: variable-length sequences whose class is given by a marker seen near
  the start, so a model must carry it in memory to the end of the sequence.
- `make_expression_trees(n, ...)`: random arithmetic expressions as trees, with their values,
  for models whose graph follows each sample's structure.

Every generator takes a `seed` and uses its own random number generator, so the data does not
depend on (or change) the global random state. The names of `minitorch.utils.data` (`Dataset`,
`DataLoader`, `pad_collate`, ...) are available here too.

This module used to be `minitorch.data`; that name still works (see `minitorch/data.py`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import NamedTuple

import torch

from minitorch.tensor import Tensor
from minitorch.utils.data import (
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    default_convert,
    pad_collate,
    random_split,
)


class Split(NamedTuple):
    """Training and test data: inputs `x_*` and integer class labels `y_*`."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor


def load_digits(test_size: int = 360, images: bool = False, seed: int = 0) -> Split:
    """scikit-learn's 1,797 handwritten digits (bundled with it, no download), as float32
    inputs scaled to [0, 1] and int64 labels 0-9, split at random into train and test.

    Inputs are flat vectors of 64 pixels, or `[1, 8, 8]` images with `images=True`. The split
    is fixed by `seed`: 1,437 training and 360 test samples by default.
    """
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as error:
        raise ImportError(
            "minitorch.datasets.load_digits reads the digits that scikit-learn ships, and "
            "scikit-learn is not installed: pip install scikit-learn (it comes with the "
            "course's [student] and [course] extras)"
        ) from error
    digits = sklearn_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    if images:
        x = x.reshape(-1, 1, 8, 8)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    test, train = order[:test_size], order[test_size:]
    return Split(*(Tensor._make(t) for t in (x[train], y[train], x[test], y[test])))


def make_spirals(
    n: int = 300, classes: int = 3, noise: float = 0.2, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """`n` points in the plane on `classes` spiral arms that wind around each other.

    Point i belongs to class `i % classes`; its radius grows from 0 to 1 along the arm and
    `noise` is the standard deviation of the random jitter of its angle. Returns `(x, y)`:
    float32 inputs `[n, 2]` and int64 labels `[n]`. No straight line separates the classes.
    """
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    radius = torch.rand(n, generator=gen)
    angle = 2 * math.pi * y / classes + 4.0 * radius + noise * torch.randn(n, generator=gen)
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    return Tensor._make(x.to(torch.float32)), Tensor._make(y)


def make_sequences(
    n: int = 1000,
    min_length: int = 5,
    max_length: int = 20,
    marker_window: int = 3,
    noise_features: int = 1,
    seed: int = 0,
) -> tuple[list[Tensor], Tensor]:
    """`n` sequences of random lengths in `[min_length, max_length]`, labelled 0 or 1.

    Each step has `2 + noise_features` float32 features: a marker flag, a value of +1 or -1,
    and Gaussian noise. The marker is 1 at exactly one step among the first `marker_window`
    steps and 0 elsewhere. The label is 1 if the value at the marked step is +1, else 0. Every
    other step carries a random +-1 value too, so the model must notice the marker, remember
    its value, and ignore everything after it until the (variable) end of the sequence.

    Returns `(sequences, labels)`: a list of `[length, features]` tensors and an int64 tensor.
    Batch them with `DataLoader(list(zip(sequences, labels)), collate_fn=pad_collate)`.
    """
    if not 1 <= marker_window <= min_length <= max_length:
        raise ValueError(
            "make_sequences needs 1 <= marker_window <= min_length <= max_length, got "
            f"{marker_window}, {min_length}, {max_length}"
        )
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_length, max_length + 1, (n,), generator=gen).tolist()
    marks = torch.randint(0, marker_window, (n,), generator=gen).tolist()
    sequences = []
    labels = []
    for length, mark in zip(lengths, marks):
        steps = torch.zeros(length, 2 + noise_features)
        steps[:, 1] = torch.randint(0, 2, (length,), generator=gen) * 2.0 - 1.0
        steps[:, 2:] = torch.randn(length, noise_features, generator=gen)
        steps[mark, 0] = 1.0
        labels.append(int(steps[mark, 1] > 0))
        sequences.append(Tensor._make(steps))
    return sequences, Tensor._make(torch.tensor(labels, dtype=torch.int64))


@dataclass
class ExprTree:
    """A node of an arithmetic expression: a leaf holding a number (`op` is None), or an
    operator `op` in "+", "-", "*" applied to the `left` and `right` subtrees."""

    op: str | None = None
    value: float | None = None
    left: ExprTree | None = None
    right: ExprTree | None = None

    @property
    def is_leaf(self) -> bool:
        return self.op is None

    def evaluate(self) -> float:
        """The number this expression stands for."""
        if self.is_leaf:
            return self.value
        a, b = self.left.evaluate(), self.right.evaluate()
        return a + b if self.op == "+" else a - b if self.op == "-" else a * b

    def depth(self) -> int:
        """0 for a leaf, else 1 + the depth of the deeper subtree."""
        return 0 if self.is_leaf else 1 + max(self.left.depth(), self.right.depth())

    def size(self) -> int:
        """The number of nodes (leaves and operators)."""
        return 1 if self.is_leaf else 1 + self.left.size() + self.right.size()

    def __str__(self) -> str:
        if self.is_leaf:
            return f"{self.value:g}"
        return f"({self.left} {self.op} {self.right})"


def make_expression_trees(
    n: int = 200,
    max_depth: int = 4,
    leaf_probability: float = 0.4,
    ops: str = "+-*",
    seed: int = 0,
) -> tuple[list[ExprTree], Tensor]:
    """`n` random expression trees and their values.

    Each tree's root is an operator (when `max_depth` >= 1); below it, a node becomes a leaf with
    probability `leaf_probability`, and always at depth `max_depth`. Leaves hold numbers in
    [-1, 1] with two decimals; operators are drawn from `ops`. Trees differ in shape, so a model
    that recurses over them builds a different graph for every sample.

    Returns `(trees, targets)`: a list of `ExprTree` and a float32 tensor of their values.
    """
    rng = random.Random(seed)

    def grow(depth: int) -> ExprTree:
        at_root = depth == 0 and max_depth > 0
        if depth >= max_depth or (not at_root and rng.random() < leaf_probability):
            return ExprTree(value=round(rng.uniform(-1.0, 1.0), 2))
        return ExprTree(op=rng.choice(ops), left=grow(depth + 1), right=grow(depth + 1))

    trees = [grow(0) for _ in range(n)]
    targets = torch.tensor([tree.evaluate() for tree in trees], dtype=torch.float32)
    return trees, Tensor._make(targets)


__all__ = [
    "DataLoader",
    "Dataset",
    "ExprTree",
    "Split",
    "Subset",
    "TensorDataset",
    "default_collate",
    "default_convert",
    "load_digits",
    "make_expression_trees",
    "make_sequences",
    "make_spirals",
    "pad_collate",
    "random_split",
]
