"""Real models train on minitorch: an MLP on the digits and an LSTM over packed sequences.

Both use only minitorch (nn, optim, datasets) and fixed seeds, so each run is the same. The tests
check test-set accuracy only (never time); each trains in seconds on 2 CPU cores.
"""

from __future__ import annotations

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch import datasets


def accuracy(logits: minitorch.Tensor, labels: minitorch.Tensor) -> float:
    return (logits.argmax(dim=1) == labels).float().mean().item()


def test_mlp_reaches_95_percent_on_digits():
    minitorch.manual_seed(0)
    digits = datasets.load_digits()
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = minitorch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.3)
    loader = datasets.DataLoader(
        datasets.TensorDataset(digits.x_train, digits.y_train),
        batch_size=64,
        shuffle=True,
        generator=minitorch.Generator().manual_seed(0),
    )
    for _ in range(8):
        model.train()
        for inputs, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
        scheduler.step()
    model.eval()
    with minitorch.no_grad():
        test_accuracy = accuracy(model(digits.x_test), digits.y_test)
    assert test_accuracy >= 0.95, f"test accuracy {test_accuracy:.3f}"


class SequenceClassifier(nn.Module):
    """An LSTM reads each sequence to its own end; its last hidden state is classified."""

    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, padded: minitorch.Tensor, lengths: minitorch.Tensor) -> minitorch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(
            padded, lengths, batch_first=True, enforce_sorted=False
        )
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])


def test_lstm_reaches_95_percent_on_variable_length_sequences():
    minitorch.manual_seed(0)
    train_sequences, train_labels = datasets.make_sequences(
        n=800, min_length=5, max_length=20, seed=0
    )
    test_sequences, test_labels = datasets.make_sequences(
        n=400, min_length=5, max_length=20, seed=1
    )
    model = SequenceClassifier(features=train_sequences[0].shape[1], hidden=16, classes=2)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.05)
    loader = datasets.DataLoader(
        list(zip(train_sequences, train_labels)),
        batch_size=32,
        shuffle=True,
        collate_fn=datasets.pad_collate,
        generator=minitorch.Generator().manual_seed(0),
    )
    for _ in range(4):
        for padded, lengths, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(padded, lengths), labels).backward()
            optimizer.step()
    padded, lengths, labels = datasets.pad_collate(list(zip(test_sequences, test_labels)))
    with minitorch.no_grad():
        test_accuracy = accuracy(model(padded, lengths), labels)
    assert test_accuracy >= 0.95, f"test accuracy {test_accuracy:.3f}"
    # The task needs memory: the label is decided near the start of each sequence.
    assert min(len(s) for s in test_sequences) == 5 and max(len(s) for s in test_sequences) == 20
