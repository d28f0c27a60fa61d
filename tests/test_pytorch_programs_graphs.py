"""Tutorial-style programs that look at the graph: they print `loss.grad_fn`, walk
`next_functions` and print tensors with their `grad_fn=`, and must print the same on minitorch
as on PyTorch. The harness (the two sets of imports, and the comparison of what was printed:
words exactly, numbers to float32 rounding) is tests/test_pytorch_programs.py's.
"""

from __future__ import annotations

import pytest
from test_pytorch_programs import assert_same_output, register, run_source

PROGRAMS: dict[str, str] = {}


def program(source: str) -> str:
    """Register a program of this file."""
    return register(PROGRAMS, source)


program("""
# the official neural networks tutorial
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, input):
        c1 = F.relu(self.conv1(input))
        s2 = F.max_pool2d(c1, (2, 2))
        c3 = F.relu(self.conv2(s2))
        s4 = F.max_pool2d(c3, 2)
        s4 = torch.flatten(s4, 1)
        f5 = F.relu(self.fc1(s4))
        f6 = F.relu(self.fc2(f5))
        output = self.fc3(f6)
        return output

torch.manual_seed(0)
net = Net()
print(net)
params = list(net.parameters())
print(len(params))
print(params[0].size())
input = torch.randn(1, 1, 32, 32)
out = net(input)
print(out)
net.zero_grad()
out.backward(torch.randn(1, 10))

output = net(input)
target = torch.randn(10)
target = target.view(1, -1)
criterion = nn.MSELoss()
loss = criterion(output, target)
print(loss)
print(loss.grad_fn.name())  # MSELoss
print(loss.grad_fn.next_functions[0][0].name())  # Linear
print([None if node is None else node.name() for node, _ in loss.grad_fn.next_functions])
# (one level further, loss.grad_fn.next_functions[0][0].next_functions[0][0], differs: see the
# README's "Graphs that differ from PyTorch's", Linear)

net.zero_grad()
print("conv1.bias.grad before backward")
print(net.conv1.bias.grad)
loss.backward()
print("conv1.bias.grad after backward")
print(net.conv1.bias.grad)

optimizer = optim.SGD(net.parameters(), lr=0.01)
for step in range(3):
    optimizer.zero_grad()
    output = net(input)
    loss = criterion(output, target)
    loss.backward()
    optimizer.step()
    print(step, loss)
""")

program("""
# a Huber regression with outliers
torch.manual_seed(0)
x = torch.linspace(-2, 2, 64).unsqueeze(1)
y = 1.5 * x - 0.3 + 0.05 * torch.randn(64, 1)
y[::8] += 6.0  # every eighth point is an outlier
model = nn.Linear(1, 1)
optimizer = optim.SGD(model.parameters(), lr=0.2)
loss_fn = nn.HuberLoss(delta=0.5)
for step in range(120):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 40 == 0:
        print(step, loss)
print(loss.grad_fn.name(), [n.name() for n, _ in loss.grad_fn.next_functions if n is not None])
print(f"slope {model.weight.item():.4f} intercept {model.bias.item():.4f}")
with torch.no_grad():
    pred = model(x)
    print(F.mse_loss(pred, y).item(), F.l1_loss(pred, y).item())
    print(F.smooth_l1_loss(pred, y, beta=0.5).item() * 0.5, F.huber_loss(pred, y, delta=0.5).item())
per_point = nn.SmoothL1Loss(reduction="none", beta=0.5)(model(x[:3]), y[:3])
print(per_point)
print(F.mse_loss(model(x[:4]), y[:4], reduction="none").squeeze(1) * 2)
""")

program("""
# walking a classifier's loss graph breadth-first
def node_names(tensor):
    names, queue, seen = [], [tensor.grad_fn], set()
    while queue:
        node = queue.pop(0)
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name().split("::")[-1])
        queue.extend(child for child, _ in node.next_functions)
    return names

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 3))
x = torch.randn(5, 4)
labels = torch.tensor([0, 2, 1, 1, 0])
for loss_fn in [
    nn.CrossEntropyLoss(),
    nn.CrossEntropyLoss(label_smoothing=0.1),
    nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]), reduction="sum"),
]:
    loss = loss_fn(model(x), labels)
    print(loss)
    names = node_names(loss)
    print(names[: names.index("AddmmBackward0") + 1])  # the loss's nodes, down to the logits
log_probs = F.log_softmax(model(x), dim=1)
loss = F.nll_loss(log_probs, labels)
print(loss.grad_fn.name(), loss.grad_fn.next_functions[0][0].name())
probabilities = torch.sigmoid(model(x))
targets = (torch.rand(5, 3) > 0.5).float()
bce = nn.BCELoss()(probabilities, targets)
print(bce, node_names(bce)[:3])
print(F.binary_cross_entropy_with_logits(model(x), targets).grad_fn.name())
hidden = model[1](model[0](x))
print(hidden.grad_fn.name(), hidden[0])
bce.backward()
print(model[1].weight.grad)
""")


def test_at_least_three_programs():
    assert len(PROGRAMS) >= 3


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_prints_the_same_graph(name):
    theirs = run_source(PROGRAMS[name], "torch", name)
    ours = run_source(PROGRAMS[name], "minitorch", name)
    assert theirs.strip(), "the program printed nothing"
    assert_same_output(ours, theirs)
