"""Programs written for PyTorch run unchanged on minitorch and print the same numbers.

Each program below is tutorial-style PyTorch code, kept as source text. It runs twice: once
after the usual PyTorch imports, once after the same imports of minitorch:

    import torch                              import minitorch as torch
    import torch.nn as nn                     import minitorch.nn as nn
    import torch.nn.functional as F           import minitorch.nn.functional as F
    import torch.optim as optim               import minitorch.optim as optim
    from torch.utils.data import ...          from minitorch.utils.data import ...

The program text is identical; seeds are set inside it, and minitorch draws random numbers from
torch's generator, so both runs see the same data and initial weights. What each run prints
must agree: the words exactly, the numbers to within float32 rounding.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings

import pytest

HEADERS = {
    "torch": """
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
""",
    "minitorch": """
import minitorch as torch
import minitorch.nn as nn
import minitorch.nn.functional as F
import minitorch.optim as optim
from minitorch.utils.data import DataLoader, TensorDataset
""",
}

PROGRAMS: dict[str, str] = {}


def register(programs: dict[str, str], source: str) -> str:
    """Put a program into `programs` under the name in its first comment line (also used by
    the other tests/test_pytorch_programs_*.py files, each with its own table)."""
    name = source.strip().splitlines()[0].lstrip("# ").strip()
    programs[name] = source
    return source


def program(source: str) -> str:
    """Register a program of this file."""
    return register(PROGRAMS, source)


program("""
# fit a line with scalar parameters
torch.manual_seed(0)
x = torch.linspace(-1, 1, 50)
y = 3.0 * x - 0.5 + 0.1 * torch.randn(50)

a = nn.Parameter(torch.randn(()))
b = nn.Parameter(torch.randn(()))
opt = optim.SGD([a, b], lr=0.1)
for step in range(100):
    opt.zero_grad()
    loss = ((a * x + b - y) ** 2).mean()
    loss.backward()
    opt.step()
    if step % 25 == 0:
        print(f"step {step}: loss {loss.item():.6f}")
print(f"a = {a.item():.5f}, b = {b.item():.5f}")
print(a.shape, a.requires_grad, a.is_leaf, a.grad is not None)
""")

program('''
# a custom autograd Function
class ClippedExp(torch.autograd.Function):
    """exp(x) for x <= 1; the gradient is 0 where the input was clipped."""

    @staticmethod
    def forward(ctx, x):
        clipped = x.clamp(max=1.0)
        result = clipped.exp()
        ctx.save_for_backward(result, x <= 1.0)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, inside = ctx.saved_tensors
        return grad_output * result * inside

torch.manual_seed(1)
x = torch.randn(6, dtype=torch.float64, requires_grad=True)
y = ClippedExp.apply(x * 2)
y.sum().backward()
print(y.grad_fn.name())
print([round(v, 6) for v in y.tolist()])
print([round(v, 6) for v in x.grad.tolist()])
small = torch.tensor([-0.3, 0.2], dtype=torch.float64, requires_grad=True)
print(torch.autograd.gradcheck(ClippedExp.apply, (small,)))
''')

program("""
# an MLP classifier with SGD and momentum
torch.manual_seed(0)
n = 200
angle = torch.rand(n) * 6.0
label = (torch.rand(n) > 0.5).long()
radius = 1.0 + label.float()
points = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
points = points + 0.1 * torch.randn(n, 2)

model = nn.Sequential(
    nn.Linear(2, 16),
    nn.ReLU(),
    nn.Linear(16, 16),
    nn.Tanh(),
    nn.Linear(16, 2),
)
loss_fn = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for epoch in range(60):
    optimizer.zero_grad()
    logits = model(points)
    loss = loss_fn(logits, label)
    loss.backward()
    optimizer.step()
    if epoch % 15 == 0:
        print(f"epoch {epoch}: loss {loss.item():.5f}")
with torch.no_grad():
    accuracy = (model(points).argmax(dim=1) == label).float().mean()
print(f"accuracy {accuracy.item():.3f}")
print(len(list(model.parameters())), sum(p.numel() for p in model.parameters()))
""")

program("""
# a manual training loop with no_grad updates
import math

torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a, b, c, d = (torch.randn((), requires_grad=True) for _ in range(4))
learning_rate = 1e-5
for t in range(300):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, round(loss.item(), 3))
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
print(f"y = {a.item():.5f} + {b.item():.5f} x + {c.item():.5f} x^2 + {d.item():.5f} x^3")
""")

program("""
# nn.Sequential with a Flatten, inspected by indexing
import math

torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 300)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
loss_fn = nn.MSELoss(reduction="sum")
learning_rate = 1e-6
for t in range(400):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, round(loss.item(), 2))
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad
linear_layer = model[0]
print(
    f"y = {linear_layer.bias.item():.5f} + {linear_layer.weight[:, 0].item():.5f} x"
    f" + {linear_layer.weight[:, 1].item():.5f} x^2 + {model[0].weight[:, 2].item():.5f} x^3"
)
print(xx.shape, y_pred.shape, type(model[1]).__name__)
""")

program("""
# a float64 scalar found by Adam
x = torch.full((), 0.3, dtype=torch.float64, requires_grad=True)
optimizer = optim.Adam([x], lr=0.05)
for step in range(200):
    optimizer.zero_grad()
    loss = (x - 2.0) ** 2 + torch.sin(3.0 * x)
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        print(step, f"{x.item():.10f}", f"{x.grad.item():.10f}")
print(x.dtype, x.shape, f"{loss.item():.10f}")
print(sorted(optimizer.state_dict()["state"][0].keys()))
""")

program("""
# a DataLoader training loop
torch.manual_seed(0)
features = torch.randn(100, 5)
true_w = torch.tensor([[1.0], [-2.0], [0.5], [0.0], [3.0]])
targets = (features @ true_w > 0).float()
loader = DataLoader(TensorDataset(features, targets), batch_size=16, shuffle=True)
model = nn.Linear(5, 1)
optimizer = optim.Adam(model.parameters(), lr=0.05)
loss_fn = nn.BCEWithLogitsLoss()
for epoch in range(5):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
    print(f"epoch {epoch}: {total / len(loader.dataset):.5f}", len(loader))
print(torch.randn(2).tolist())
""")

program("""
# a dynamic network that reuses a layer a random number of times
import random

class DynamicNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.input = nn.Linear(4, 8)
        self.middle = nn.Linear(8, 8)
        self.output = nn.Linear(8, 1)

    def forward(self, x):
        h = self.input(x).clamp(min=0)
        for _ in range(random.randint(0, 3)):
            h = self.middle(h).clamp(min=0)
        return self.output(h)

torch.manual_seed(0)
random.seed(0)
x = torch.randn(32, 4)
y = x.sum(dim=1, keepdim=True)
model = DynamicNet()
optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for t in range(40):
    loss = F.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if t % 10 == 9:
        print(t, f"{loss.item():.5f}", model.middle.weight.grad is None)
print([name for name, _ in model.named_parameters()])
""")

program("""
# save a state_dict and load it into a fresh model
import io

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
optimizer = optim.AdamW(model.parameters(), lr=0.01)
x = torch.randn(8, 3)
model(x).pow(2).mean().backward()
optimizer.step()
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer)
fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
print(fresh.load_state_dict(checkpoint["model"]))
fresh_optimizer = optim.AdamW(fresh.parameters(), lr=0.5)
fresh_optimizer.load_state_dict(checkpoint["optimizer"])
print(list(checkpoint["model"].keys()))
print(torch.equal(fresh(x), model(x)), fresh_optimizer.param_groups[0]["lr"])
print(torch.allclose(fresh(x), model(x) + 1e-6), torch.allclose(fresh(x), model(x) + 1e-3))
""")

program("""
# an LSTM classifier over packed sequences
torch.manual_seed(0)
lengths = torch.randint(2, 9, (12,))
sequences = [torch.randn(int(n), 3) for n in lengths]
labels = torch.tensor([int(s[0, 0] > 0) for s in sequences])

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=3, hidden_size=8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, padded, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(
            padded, lengths, batch_first=True, enforce_sorted=False
        )
        _, (h_n, _) = self.lstm(packed)
        return self.head(h_n[-1])

model = Classifier()
optimizer = optim.Adam(model.parameters(), lr=0.05)
padded = nn.utils.rnn.pad_sequence(sequences, batch_first=True)
for step in range(30):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(padded, lengths), labels)
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(step, f"{loss.item():.5f}")
print(padded.shape, [tuple(p.shape) for p in model.lstm.parameters()])
""")


program("""
# a custom optimizer with its own state, and a learning-rate schedule
class HeavyBall(optim.Optimizer):
    def __init__(self, params, lr=0.01, beta=0.9):
        super().__init__(params, dict(lr=lr, beta=beta))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "velocity" not in state:
                    state["velocity"] = torch.zeros_like(p)
                velocity = state["velocity"]
                velocity.mul_(group["beta"]).add_(p.grad)
                p.add_(velocity, alpha=-group["lr"])

torch.manual_seed(3)
target = torch.randn(4)
w = torch.zeros(4, requires_grad=True)
unused = torch.zeros(2, requires_grad=True)
optimizer = HeavyBall([w, unused], lr=0.05)
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
for epoch in range(30):
    optimizer.zero_grad()
    loss = ((w - target) ** 2).sum()
    loss.backward()
    optimizer.step()
    scheduler.step()
    if epoch % 10 == 9:
        print(epoch, f"{loss.item():.6f}", scheduler.get_last_lr())
print(len(optimizer.state), unused.grad, w._version > 0)
""")

program("""
# a quickstart-style classifier with a random split, dropout and an evaluation loop
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
images = torch.rand(256, 1, 6, 6)
classes = (images.mean(dim=(1, 2, 3)) * 8 - 2).long().clamp(0, 3)
dataset = TensorDataset(images, classes)
train_data, test_data = torch.utils.data.random_split(dataset, [0.75, 0.25])
train_loader = DataLoader(train_data, batch_size=32, shuffle=True)
test_loader = DataLoader(test_data, batch_size=64)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(36, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 4)
        )

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


model = NeuralNetwork().to(device)
print(model)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-1, weight_decay=1e-4)
nn.init.xavier_uniform_(model.linear_relu_stack[0].weight)
for epoch in range(3):
    model.train()
    for batch, (X, y) in enumerate(train_loader):
        X, y = X.to(device), y.to(device)
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 3 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{len(train_loader.dataset):>5d}]")
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in test_loader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    accuracy = 100 * correct / len(test_loader.dataset)
    print(f"Accuracy: {accuracy:>0.1f}%, Avg loss: {test_loss / len(test_loader):>8f}")
probs = F.softmax(model(images[:2]), dim=1)
print(probs.detach().numpy().round(4).tolist(), torch.max(probs, 1).indices)
""")

program("""
# manual minibatches from randperm, with functional layers
torch.manual_seed(2)
x = torch.randn(90, 4)
y = (x[:, 0] * x[:, 1] > 0).long()
w1 = (torch.randn(4, 12) * 0.5).requires_grad_()
b1 = torch.zeros(12, requires_grad=True)
w2 = (torch.randn(12, 2) * 0.5).requires_grad_()
optimizer = optim.SGD([w1, b1, w2], lr=0.2, momentum=0.9, nesterov=True)
for epoch in range(20):
    perm = torch.randperm(len(x))
    for start in range(0, len(x), 30):
        idx = perm[start : start + 30]
        logits = F.relu(x[idx] @ w1 + b1) @ w2
        loss = F.cross_entropy(logits, y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if epoch % 5 == 4:
        print(epoch, f"{loss.item():.5f}", perm[:5].tolist())
""")

# Programs for the APIs of issue 15 (legacy Variable and typed tensors, sort, multinomial, normal,
# default dtype and device, out=, PyTorch's keyword names).
program("""
# an old-style (PyTorch 0.3) two-layer net with Variable and FloatTensor
Variable = torch.autograd.Variable
dtype = torch.FloatTensor
torch.manual_seed(0)
x = Variable(torch.randn(64, 10).type(dtype), requires_grad=False)
y = Variable(torch.randn(64, 2).type(dtype), requires_grad=False)
w1 = Variable(torch.randn(10, 16).type(dtype), requires_grad=True)
w2 = Variable(torch.randn(16, 2).type(dtype), requires_grad=True)
learning_rate = 1e-3
for t in range(50):
    y_pred = x.mm(w1).clamp(min=0).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    if t % 10 == 9:
        print(t, f"{loss.item():.4f}")
    loss.backward()
    w1.data -= learning_rate * w1.grad.data
    w2.data -= learning_rate * w2.grad.data
    w1.grad.data.zero_()
    w2.grad.data.zero_()
print(w1.type(), isinstance(w1, Variable), isinstance(w1, torch.FloatTensor), w1.is_leaf)
raw = torch.ones(3)
wrapped = Variable(raw, requires_grad=True)
(wrapped * 2).sum().backward()
print(raw.requires_grad, wrapped.requires_grad, raw.grad, wrapped.grad)
""")

program("""
# sampling characters from a bigram model with multinomial
torch.manual_seed(0)
vocab = list("abcdefgh ")
logits = torch.randn(len(vocab), len(vocab))
index = 0
text = []
for _ in range(40):
    probs = F.softmax(logits[index] / 0.8, dim=0)
    index = torch.multinomial(probs, num_samples=1).item()
    text.append(vocab[index])
print("".join(text))
batch = torch.multinomial(F.softmax(logits, dim=1), 4, replacement=True)
print(batch.shape, batch.dtype, batch[:3].tolist())
print(torch.multinomial(torch.tensor([0.1, 0.0, 0.9]), 2).tolist())
counts = torch.zeros(3)
for i in torch.tensor([0.2, 0.3, 0.5]).multinomial(1000, replacement=True).tolist():
    counts[i] += 1
print(counts.tolist())
""")

program("""
# ranking scores with sort, and its gradient
torch.manual_seed(1)
scores = torch.randn(6, 5, requires_grad=True)
values, indices = torch.sort(scores, dim=1, descending=True)
print(indices[:, :3].tolist())
top2 = values[:, :2].sum()
top2.backward()
print(scores.grad.tolist())
labels = torch.tensor([0, 1, 2, 3, 4, 0])
ranks = (indices == labels.unsqueeze(1)).float().argmax(dim=1)
print(ranks.tolist(), (ranks < 3).float().mean().item())
result = scores.detach().sort(dim=0, stable=True)
print(type(result).__name__, result.values[:, 0].tolist(), result.indices[:, 0].tolist())
print(torch.argsort(scores.detach()[0]).tolist(), values.grad_fn.name())
median = scores.detach().sort(dim=1).values[:, 2]
print([round(v, 5) for v in median.tolist()])
""")

program("""
# a Gaussian fitted by sampling with torch.normal
torch.manual_seed(0)
mu = torch.zeros(4, requires_grad=True)
log_std = torch.zeros(4, requires_grad=True)
optimizer = optim.Adam([mu, log_std], lr=0.05)
target = torch.tensor([1.0, -2.0, 0.5, 3.0])
for step in range(100):
    eps = torch.normal(0.0, 1.0, size=(32, 4))
    z = mu + log_std.exp() * eps
    loss = ((z - target) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 25 == 0:
        print(step, f"{loss.item():.5f}")
print([round(v, 4) for v in mu.tolist()], [round(v, 4) for v in log_std.tolist()])
noise = torch.normal(mean=torch.zeros(3), std=torch.tensor([1.0, 0.1, 0.01]))
print([round(v, 6) for v in noise.tolist()])
generator = torch.Generator().manual_seed(3)
print(torch.normal(2.0, 0.5, (2, 2), generator=generator).tolist())
x = torch.ones(3, requires_grad=True)
y = torch.normal(x, 1.0)
y.sum().backward()
print(y.grad_fn.name(), x.grad.tolist(), torch.normal(x.detach()).shape)
""")

program("""
# float64 everywhere with set_default_dtype, then back
previous = torch.get_default_dtype()
torch.set_default_dtype(torch.float64)
torch.set_default_device("cpu")
try:
    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 20)
    w = torch.randn(3, requires_grad=True)
    for step in range(200):
        y = w[0] + w[1] * x + w[2] * x**2
        loss = ((y - torch.sin(3 * x)) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            w.grad.zero_()
    print(x.dtype, w.dtype, torch.tensor([1.5]).dtype, torch.zeros(2).dtype, torch.Tensor(2).dtype)
    print(f"{loss.item():.12f}", [f"{v:.10f}" for v in w.tolist()])
    print(torch.get_default_device(), torch.arange(3).device, torch.arange(0.0, 1.0, 0.5).dtype)
finally:
    torch.set_default_dtype(previous)
    torch.set_default_device(None)
print(torch.get_default_dtype(), torch.ones(1).dtype, torch.FloatTensor([1]).dtype)
""")

program("""
# reusing buffers with out= in an evaluation loop
torch.manual_seed(0)
W = torch.randn(4, 3)
b = torch.randn(3)
buffer = torch.empty(0)
total = torch.zeros(3)
for i in range(5):
    x = torch.randn(2, 4)
    torch.matmul(x, W, out=buffer)
    torch.add(buffer, b, out=buffer)
    torch.add(total, buffer.sum(dim=0), alpha=0.5, out=total)
print(buffer.shape, [round(v, 5) for v in total.tolist()], total._version)
steps = torch.arange(0, 1, 0.25, out=torch.empty(0, dtype=torch.float64))
print(steps.tolist(), steps.dtype)
parts = torch.cat([torch.ones(2), torch.zeros(2)], out=torch.empty(4))
stacked = torch.stack([parts, parts * 2], dim=1, out=torch.zeros(4, 2))
print(stacked.tolist(), torch.mm(stacked.t(), stacked, out=torch.empty(2, 2)).tolist())
w = torch.zeros(3, requires_grad=True)
try:
    torch.mul(w, 2, out=torch.empty(3))
except RuntimeError as error:
    print(error)
with torch.no_grad():
    torch.mul(torch.ones(3), 2, out=w)
print(w.tolist(), w.requires_grad, w.is_leaf)
print(torch.zeros(2, 2, out=torch.empty(0, dtype=torch.int64)).tolist())
print(torch.div(torch.tensor([7.0, -7.0]), 2, rounding_mode="floor").tolist())
print(torch.sub(torch.ones(2), 3, out=torch.empty(2)).tolist())
print(torch.ones(3, out=torch.empty(3, dtype=torch.float64)).dtype)
""")

program("""
# legacy typed tensors and type() conversions
torch.manual_seed(0)
x = torch.FloatTensor([[1, 2], [3, 4]])
index = torch.LongTensor([1, 0])
mask = torch.BoolTensor([True, False])
print(x.type(), index.type(), mask.type(), torch.DoubleTensor(2).type())
print(x[index].tolist(), x[mask].tolist())
buffer = torch.FloatTensor(2, 3).zero_()
print(buffer.shape, buffer.type(), buffer.sum().item())
d = x.type(torch.DoubleTensor)
print(d.dtype, d.type(), x.type("torch.LongTensor").tolist(), x.type(torch.FloatTensor) is x)
print(isinstance(x, torch.FloatTensor), isinstance(d, torch.FloatTensor))
print(isinstance(index, torch.LongTensor), isinstance(index, torch.FloatTensor))
w = torch.randn(2, 2, requires_grad=True)
loss = (w.type(torch.DoubleTensor) * d).sum()
loss.backward()
print(loss.dtype, w.grad.dtype, w.grad.tolist())
labels = torch.LongTensor([0, 2, 1])
print(F.one_hot(labels).type(torch.FloatTensor).tolist())
try:
    torch.LongTensor(torch.ones(2))
except TypeError as error:
    print(type(error).__name__, str(error)[:40])
""")

program("""
# logistic regression written with PyTorch's keyword names
torch.manual_seed(0)
X = torch.randn(40, 3)
y = (X.sum(dim=1) > 0).long()
W = torch.zeros(3, 2, requires_grad=True)
bias = torch.zeros(2, requires_grad=True)
for step in range(30):
    logits = torch.add(input=torch.matmul(input=X, other=W), other=bias)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    with torch.no_grad():
        torch.sub(W, W.grad, alpha=0.5, out=W)
        torch.sub(input=bias, other=bias.grad, alpha=0.5, out=bias)
    W.grad = None
    bias.grad = None
    if step % 10 == 0:
        print(step, f"{loss.item():.5f}")
probs = torch.softmax(input=logits, dim=1)
print(torch.sum(input=probs, dim=1, keepdim=True).shape)
print(f"{torch.where(condition=probs > 0.5, input=probs, other=torch.zeros_like(probs)).sum():.5f}")
print([t.shape for t in torch.split(tensor=X, split_size_or_sections=[10, 30], dim=0)])
print(torch.clamp(input=W, min=-0.1, max=0.1).tolist())
print(torch.gather(input=probs, dim=1, index=y.unsqueeze(1))[:3].tolist())
print(torch.mean(input=X, dim=0, dtype=torch.float64).dtype, X.mm(mat2=W).shape)
""")

# The runner ---------------------------------------------------------------------------------------
NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def run_source(source: str, library: str, name: str = "program") -> str:
    """Execute a program's `source` after the imports of `library`; return what it printed.
    Warnings go to stderr, which is not compared, so they are silenced."""
    code = compile(HEADERS[library] + source, f"<{name} on {library}>", "exec")
    output = io.StringIO()
    with contextlib.redirect_stdout(output), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(code, {"__name__": f"program_on_{library}"})
    return output.getvalue()


def run(name: str, library: str) -> str:
    """Execute this file's program `name` after the imports of `library`."""
    return run_source(PROGRAMS[name], library, name)


def assert_same_output(ours: str, theirs: str, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """The same text, with numbers equal up to float32 rounding."""
    ours_parts, theirs_parts = NUMBER.split(ours), NUMBER.split(theirs)
    context = f"\n--- minitorch printed:\n{ours}\n--- torch printed:\n{theirs}"
    assert len(ours_parts) == len(theirs_parts), "different output" + context
    for i, (m, t) in enumerate(zip(ours_parts, theirs_parts)):
        if i % 2 == 0:
            assert m == t, f"text differs: {m!r} != {t!r}" + context
        else:
            assert abs(float(m) - float(t)) <= atol + rtol * abs(float(t)), (
                f"number differs: {m} != {t}" + context
            )


def test_at_least_six_programs():
    assert len(PROGRAMS) >= 6


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_runs_unchanged_and_prints_the_same(name):
    theirs = run(name, "torch")
    ours = run(name, "minitorch")
    assert theirs.strip(), "the program printed nothing"
    assert_same_output(ours, theirs)
