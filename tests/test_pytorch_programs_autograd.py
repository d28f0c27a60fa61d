"""Tutorial-style programs for the autograd extras run unchanged on minitorch and print the same.

The harness is tests/test_pytorch_programs.py's (`register`, `run_source` after each library's
imports, `assert_same_output`: same words, numbers equal to float32 rounding), with a table of
programs of this file's own. A program reaches submodules as attributes
(`torch.profiler.profile`): a line `from torch.profiler import ...` would import PyTorch's own
in both runs.

The programs use LBFGS with a closure, module backward hooks, Hessians and Jacobian products,
gradgradcheck, the profiler (names and call counts only, never times) and channel dropout.
"""

from __future__ import annotations

import pytest
from test_pytorch_programs import assert_same_output, register, run_source

PROGRAMS: dict[str, str] = {}


def program(source: str) -> str:
    """Register a program of this file."""
    return register(PROGRAMS, source)


program("""
# fit a curve with LBFGS and a closure
torch.manual_seed(0)
x = torch.linspace(-2, 2, 40).unsqueeze(1)
y = torch.sin(2 * x) + 0.05 * torch.randn(40, 1)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = optim.LBFGS(model.parameters(), lr=1, max_iter=20, history_size=10,
                        line_search_fn="strong_wolfe")
loss_fn = nn.MSELoss()
evaluations = 0

def closure():
    global evaluations
    evaluations += 1
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    return loss

for step in range(5):
    loss = optimizer.step(closure)
    print(f"step {step}: loss {loss.item():.6f}")
state = optimizer.state[next(model.parameters())]
print("closure calls", evaluations, "iterations", state["n_iter"])
with torch.no_grad():
    print(f"final loss {loss_fn(model(x), y).item():.6f}")
""")

program("""
# print gradient norms with module backward hooks
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))

def report(name):
    def hook(module, grad_input, grad_output):
        norms = [None if g is None else round(g.norm().item(), 5) for g in grad_input]
        print(f"{name}: grad_output {grad_output[0].norm().item():.5f} grad_input {norms}")
    return hook

handles = []
for name, layer in model.named_children():
    if isinstance(layer, nn.Linear):
        handles.append(layer.register_full_backward_hook(report(name)))
halve = lambda module, grad_output: (grad_output[0] * 0.5,)
scale = model[2].register_full_backward_pre_hook(halve)
x = torch.randn(3, 4, requires_grad=True)
model(x).pow(2).sum().backward()
print(f"x.grad norm {x.grad.norm().item():.5f}")
for handle in handles + [scale]:
    handle.remove()
x.grad = None
model(x).pow(2).sum().backward()
print(f"without hooks {x.grad.norm().item():.5f}")
""")

program("""
# the Hessian of a small function, and Jacobian products
functional = torch.autograd.functional
hessian, hvp, jacobian, jvp, vjp = (
    functional.hessian, functional.hvp, functional.jacobian, functional.jvp, functional.vjp
)

def rosenbrock(p):
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2

point = torch.tensor([0.5, -0.25], dtype=torch.float64)
H = hessian(rosenbrock, point)
print(H.shape, [[round(v, 4) for v in row] for row in H.tolist()])
grad = jacobian(rosenbrock, point)
print("gradient", [round(v, 4) for v in grad.tolist()])
value, Hv = hvp(rosenbrock, point, torch.tensor([1.0, 0.0], dtype=torch.float64))
print(f"f = {value.item():.4f}", "H @ e0 =", [round(v, 4) for v in Hv.tolist()])

def polar(r, theta):
    return r * torch.cos(theta), r * torch.sin(theta)

inputs = (torch.tensor(2.0, dtype=torch.float64), torch.tensor(0.3, dtype=torch.float64))
J = jacobian(polar, inputs)
print([[round(J[i][j].item(), 5) for j in range(2)] for i in range(2)])
_, tangent = jvp(polar, inputs, (torch.tensor(1.0, dtype=torch.float64),
                                 torch.tensor(0.0, dtype=torch.float64)))
_, cotangent = vjp(polar, inputs, (torch.tensor(1.0, dtype=torch.float64),
                                   torch.tensor(1.0, dtype=torch.float64)))
print([round(t.item(), 5) for t in tangent], [round(c.item(), 5) for c in cotangent])
""")

program('''
# check a custom Function's second derivative with gradgradcheck
class Softplus(torch.autograd.Function):
    """log(1 + exp(x)), whose backward is written with differentiable ops."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(1 + torch.exp(x))

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)


class FrozenSoftplus(Softplus):
    """The same values, but backward treats sigmoid(x) as a constant."""

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.sigmoid(x).detach()


torch.manual_seed(0)
x = torch.randn(5, dtype=torch.float64, requires_grad=True)
print(torch.autograd.gradcheck(Softplus.apply, (x,)))
print(torch.autograd.gradgradcheck(Softplus.apply, (x,)))
print(torch.autograd.gradcheck(FrozenSoftplus.apply, (x,)))
print(torch.autograd.gradgradcheck(FrozenSoftplus.apply, (x,), raise_exception=False))
(g,) = torch.autograd.grad(Softplus.apply(x).sum(), x, create_graph=True)
(gg,) = torch.autograd.grad(g.sum(), x)
print([round(v, 6) for v in gg.tolist()])
''')

program("""
# profile a training step and count the labelled blocks
profile, record_function = torch.profiler.profile, torch.profiler.record_function
ProfilerActivity = torch.profiler.ProfilerActivity

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randn(32, 1)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for step in range(4):
        with record_function("forward"):
            loss = F.mse_loss(model(x), y)
        with record_function("backward"):
            optimizer.zero_grad()
            loss.backward()
        with record_function("update"):
            optimizer.step()
averages = prof.key_averages()
counts = {event.key: event.count for event in averages}
print({name: counts[name] for name in ("forward", "backward", "update")})
forward = next(event for event in averages if event.key == "forward")
print(forward.cpu_time_total >= forward.self_cpu_time_total >= 0)
table = averages.table(sort_by="cpu_time_total", row_limit=5)
lines = table.splitlines()
print(len(lines), lines[1].split())
print(lines[-1].split(":")[0])
print(f"final loss {loss.item():.5f}")
""")

program("""
# channel dropout on feature maps
torch.manual_seed(0)
features = torch.randn(2, 4, 3, 3)
drop2d = nn.Dropout2d(p=0.5)
print(drop2d)
out = drop2d(features)
kept = (out.abs().sum(dim=(2, 3)) > 0).int()
print("kept channels", kept.tolist())
print(torch.allclose(out[kept.bool()], 2 * features[kept.bool()]))
drop2d.eval()
print(torch.equal(drop2d(features), features))
signal = torch.randn(3, 5, 7)
drop1d = nn.Dropout1d(p=0.25)
masked = drop1d(signal)
print("kept", (masked.abs().sum(dim=2) > 0).int().tolist())
model = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(), nn.Dropout2d(0.3), nn.Flatten(),
                      nn.Linear(54, 1))
loss = model(features).pow(2).mean()
loss.backward()
print(f"{loss.item():.5f}", f"{model[0].weight.grad.norm().item():.5f}")
""")

program("""
# the deprecated register_backward_hook on a single-op module
torch.manual_seed(0)


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([2.0, -1.0, 0.5]))

    def forward(self, x):
        return x * self.weight


layer = Scale()
seen = []
handle = layer.register_backward_hook(
    lambda module, grad_input, grad_output: seen.append((grad_input, grad_output))
)
x = torch.randn(4, 3, requires_grad=True)
layer(x).sum().backward()
grad_input, grad_output = seen[0]
print(len(grad_input), [tuple(g.shape) for g in grad_input], tuple(grad_output[0].shape))
print([round(v, 4) for v in grad_input[1].tolist()])
handle.remove()
layer(x).sum().backward()
print(len(seen), [round(v, 4) for v in layer.weight.grad.tolist()])
try:
    layer.register_full_backward_hook(lambda *args: None)
except RuntimeError as error:
    print("RuntimeError:", error)
""")


def test_at_least_five_programs():
    assert len(PROGRAMS) >= 5


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_autograd_program_runs_unchanged_and_prints_the_same(name):
    theirs = run_source(PROGRAMS[name], "torch", name)
    ours = run_source(PROGRAMS[name], "minitorch", name)
    assert theirs.strip(), "the program printed nothing"
    assert_same_output(ours, theirs)
