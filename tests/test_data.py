"""minitorch.utils.data against torch.utils.data, and the offline datasets of minitorch.datasets.

The DataLoader must give exactly torch's batches, in torch's order, for the same seeds (with a
generator, and with the global random state, which must also be left as torch leaves it).
"""

from __future__ import annotations

import functools
from collections import OrderedDict, namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import datasets
from minitorch.utils.data import DataLoader, TensorDataset


def plain(obj):
    """Batches with minitorch tensors replaced by torch tensors (to compare with torch's)."""
    if isinstance(obj, minitorch.Tensor):
        return obj._data
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(plain(v) for v in obj) if not hasattr(obj, "_fields") else obj
    return obj


def assert_same(m_obj, t_obj, where="batch"):
    """Same structure, types, dtypes and values."""
    if isinstance(t_obj, torch.Tensor):
        assert isinstance(m_obj, minitorch.Tensor), f"{where}: {type(m_obj)} is not a Tensor"
        assert m_obj.dtype == t_obj.dtype, f"{where}: dtype {m_obj.dtype} != {t_obj.dtype}"
        assert torch.equal(m_obj._data, t_obj), f"{where}: {m_obj} != {t_obj}"
    elif isinstance(t_obj, dict):
        assert type(m_obj) is type(t_obj) and list(m_obj) == list(t_obj), where
        for key in t_obj:
            assert_same(m_obj[key], t_obj[key], f"{where}[{key!r}]")
    elif isinstance(t_obj, (list, tuple)):
        assert type(m_obj) is type(t_obj) and len(m_obj) == len(t_obj), (
            f"{where}: {type(m_obj).__name__} of {len(m_obj)} != {type(t_obj).__name__}"
        )
        for i, (m, t) in enumerate(zip(m_obj, t_obj)):
            assert_same(m, t, f"{where}[{i}]")
    else:
        assert m_obj == t_obj and type(m_obj) is type(t_obj), f"{where}: {m_obj!r} != {t_obj!r}"


def both_datasets(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=gen)
    y = torch.randint(0, 5, (n,), generator=gen)
    return (
        TensorDataset(minitorch.Tensor(x), minitorch.Tensor(y)),
        tdata.TensorDataset(x, y),
    )


# DataLoader ---------------------------------------------------------------------------------------
@given(
    n=st.integers(1, 23),
    batch_size=st.integers(1, 8),
    shuffle=st.booleans(),
    drop_last=st.booleans(),
    seed=st.integers(0, 100),
)
def test_batches_match_torch_with_a_generator(n, batch_size, shuffle, drop_last, seed):
    m_set, t_set = both_datasets(n)
    options = {"batch_size": batch_size, "shuffle": shuffle, "drop_last": drop_last}
    m_loader = DataLoader(m_set, generator=minitorch.Generator().manual_seed(seed), **options)
    t_loader = tdata.DataLoader(t_set, generator=torch.Generator().manual_seed(seed), **options)
    assert len(m_loader) == len(t_loader)
    for epoch in range(2):  # a new order every epoch, the same as torch's
        m_batches, t_batches = list(m_loader), list(t_loader)
        assert len(m_batches) == len(t_batches) == len(t_loader)
        for i, (m, t) in enumerate(zip(m_batches, t_batches)):
            assert_same(m, t, f"epoch {epoch} batch {i}")


def test_global_random_state_is_used_and_left_like_torch():
    m_set, t_set = both_datasets(10)
    results = []
    for lib, dataset in ((minitorch, m_set), (torch, t_set)):
        lib.manual_seed(7)
        loader = lib.utils.data.DataLoader(dataset, batch_size=4, shuffle=True)
        epochs = [[batch[1].tolist() for batch in loader] for _ in range(2)]
        plain_loader = lib.utils.data.DataLoader(dataset, batch_size=4)
        next(iter(plain_loader))  # even without shuffling, an iterator draws a seed
        results.append((epochs, lib.rand(2).tolist()))
    assert results[0] == results[1]


def test_batch_size_none_yields_single_samples():
    m_set, t_set = both_datasets(3)
    m_items = list(DataLoader(m_set, batch_size=None))
    t_items = list(tdata.DataLoader(t_set, batch_size=None))
    for m, t in zip(m_items, t_items):
        assert_same(m, t)


def test_custom_collate_fn_receives_the_list_of_samples():
    m_set, _ = both_datasets(5)
    loader = DataLoader(m_set, batch_size=2, collate_fn=lambda samples: len(samples))
    assert list(loader) == [2, 2, 1]


def test_minitorch_datasets_offers_the_utils_data_names():
    for name in ("Dataset", "TensorDataset", "DataLoader", "default_collate", "random_split"):
        assert getattr(datasets, name) is getattr(minitorch.utils.data, name)


def test_minitorch_data_is_the_old_name_of_datasets():
    """Existing code and the course notebooks import `minitorch.data`: it offers the same
    objects, by every import form."""
    import minitorch.data
    from minitorch.data import ExprTree, make_spirals

    assert minitorch.data.__all__ == datasets.__all__
    for name in datasets.__all__:
        assert getattr(minitorch.data, name) is getattr(datasets, name), name
    assert ExprTree is datasets.ExprTree and make_spirals is datasets.make_spirals


def test_loader_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader([1, 2], batch_size=0)
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(minitorch.zeros(3), minitorch.zeros(4))


# Collate ------------------------------------------------------------------------------------------
Point = namedtuple("Point", ["x", "y"])


@pytest.mark.parametrize(
    "make_samples",
    [
        lambda lib: [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
        lambda lib: [(lib.tensor(1), 2.5, 3, True, "a"), (lib.tensor(4), 5.5, 6, False, "b")],
        lambda lib: [{"x": lib.ones(2), "n": 1}, {"x": lib.zeros(2), "n": 2}],
        lambda lib: [OrderedDict(b=[1, 2], a=lib.ones(1)), OrderedDict(b=[3, 4], a=lib.ones(1))],
        lambda lib: [[lib.ones(1), 2], [lib.zeros(1), 3]],
        lambda lib: [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
        lambda lib: [np.float32(1.5), np.float32(2.5)],
        lambda lib: [Point(1, 2.0), Point(3, 4.0)],
    ],
)
def test_default_collate_matches_torch(make_samples):
    m_batch = minitorch.utils.data.default_collate(make_samples(minitorch))
    t_batch = tdata.default_collate(make_samples(torch))
    assert_same(m_batch, t_batch)


def test_default_collate_rejects_ragged_lists_and_unknown_types():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        minitorch.utils.data.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        minitorch.utils.data.default_collate([object(), object()])


@pytest.mark.parametrize("batch_first", [True, False])
def test_pad_collate_pads_like_pad_sequence(batch_first):
    gen = torch.Generator().manual_seed(0)
    lengths = [3, 5, 1, 4]
    sequences = [torch.randn(n, 2, generator=gen) for n in lengths]
    batch = [(minitorch.Tensor(s), label) for s, label in zip(sequences, [0, 1, 1, 0])]
    collate = functools.partial(datasets.pad_collate, batch_first=batch_first, padding_value=-9.0)
    padded, m_lengths, labels = (
        DataLoader(batch, batch_size=4, collate_fn=collate).__iter__().__next__()
    )
    expected = torch.nn.utils.rnn.pad_sequence(sequences, batch_first, padding_value=-9.0)
    assert torch.equal(padded._data, expected)
    assert m_lengths.tolist() == lengths and m_lengths.dtype == minitorch.int64
    assert m_lengths.device.type == "cpu"
    assert labels.tolist() == [0, 1, 1, 0]
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        padded._data, m_lengths._data, batch_first=batch_first, enforce_sorted=False
    )
    assert packed.data.shape == (sum(lengths), 2)


def test_random_split_matches_torch():
    for lengths in ([3, 7], [0.25, 0.75], [0.3, 0.3, 0.4]):
        m_parts = datasets.random_split(range(10), lengths, minitorch.Generator().manual_seed(1))
        t_parts = tdata.random_split(range(10), lengths, torch.Generator().manual_seed(1))
        assert [list(p) for p in m_parts] == [list(p) for p in t_parts]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        datasets.random_split(range(10), [3, 3])


# Offline datasets ---------------------------------------------------------------------------------
def test_load_digits_gives_a_fixed_split():
    split = datasets.load_digits()
    assert [t.shape for t in split] == [(1437, 64), (1437,), (360, 64), (360,)]
    assert split.x_train.dtype == minitorch.float32 and split.y_train.dtype == minitorch.int64
    assert 0.0 <= split.x_train.min().item() and split.x_train.max().item() <= 1.0
    assert set(split.y_test.tolist()) == set(range(10))
    again = datasets.load_digits(images=True)
    assert again.x_train.shape == (1437, 1, 8, 8)
    assert torch.equal(again.x_train._data.reshape(1437, 64), split.x_train._data)
    from sklearn.datasets import load_digits

    all_rows = torch.tensor(load_digits().data, dtype=torch.float32) / 16
    ours = torch.cat([split.x_train._data, split.x_test._data])
    assert torch.equal(ours.sum(0), all_rows.sum(0)), "train + test must be the whole set"


def test_spirals_are_seeded_and_not_linearly_separable():
    from sklearn.linear_model import LogisticRegression

    x, y = datasets.make_spirals(n=600, classes=3, noise=0.1, seed=5)
    assert x.shape == (600, 2) and x.dtype == minitorch.float32 and y.dtype == minitorch.int64
    assert torch.bincount(y._data).tolist() == [200, 200, 200]
    assert torch.equal(datasets.make_spirals(600, 3, 0.1, seed=5)[0]._data, x._data)
    assert not torch.equal(datasets.make_spirals(600, 3, 0.1, seed=6)[0]._data, x._data)
    linear = LogisticRegression(max_iter=500).fit(x.numpy(), y.numpy())
    assert linear.score(x.numpy(), y.numpy()) < 0.7


def test_sequences_follow_their_contract():
    before = torch.get_rng_state()
    sequences, labels = datasets.make_sequences(
        n=300, min_length=4, max_length=9, marker_window=2, noise_features=2, seed=1
    )
    assert torch.equal(torch.get_rng_state(), before), "the global random state must not change"
    assert len(sequences) == 300 and labels.shape == (300,) and labels.dtype == minitorch.int64
    assert {len(s) for s in sequences} == set(range(4, 10))
    assert 0.35 < labels.float().mean().item() < 0.65
    for steps, label in zip(sequences, labels.tolist()):
        steps = steps._data
        assert steps.shape[1] == 4 and steps.dtype == torch.float32
        marked = steps[:, 0].nonzero().flatten().tolist()
        assert len(marked) == 1 and marked[0] < 2
        assert set(steps[:, 1].tolist()) <= {-1.0, 1.0}
        assert label == int(steps[marked[0], 1] > 0)
    with pytest.raises(ValueError, match="marker_window <= min_length"):
        datasets.make_sequences(n=2, min_length=2, marker_window=3)


def test_expression_trees_evaluate_to_their_targets():
    trees, targets = datasets.make_expression_trees(n=100, max_depth=4, ops="+-*", seed=3)
    assert targets.shape == (100,) and targets.dtype == minitorch.float32
    for tree, target in zip(trees, targets.tolist()):
        assert not tree.is_leaf and 1 <= tree.depth() <= 4
        assert tree.evaluate() == pytest.approx(target, rel=1e-6, abs=1e-6)
        assert eval(str(tree)) == pytest.approx(tree.evaluate()), str(tree)  # printed = Python
    assert len({tree.size() for tree in trees}) > 5, "trees should differ in shape"
    additions, _ = datasets.make_expression_trees(n=20, ops="+", seed=3)

    def ops_in(tree):
        return set() if tree.is_leaf else {tree.op} | ops_in(tree.left) | ops_in(tree.right)

    assert set().union(*(ops_in(t) for t in additions)) == {"+"}
    assert str(datasets.make_expression_trees(n=5, seed=3)[0][0]) == str(trees[0])
