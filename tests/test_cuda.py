"""minitorch on a CUDA device: storage moves to the GPU, and results and gradients equal the CPU
ones. Every test is marked `cuda` and skipped (tests/conftest.py) when no CUDA device exists.
"""

import pytest
import torch

import minitorch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available"),
]
DEVICE = "cuda"


def _on(t, device_type):
    return t.device.type == device_type and t._data.device.type == device_type


def test_cuda_module_mirrors_torch():
    assert minitorch.cuda.is_available() == torch.cuda.is_available()
    assert minitorch.cuda.device_count() == torch.cuda.device_count()


@pytest.mark.parametrize(
    "make",
    [
        lambda: minitorch.tensor([1.0, 2.0], device=DEVICE),
        lambda: minitorch.zeros(2, 3, device=DEVICE),
        lambda: minitorch.ones(2, device=DEVICE, requires_grad=True),
        lambda: minitorch.randn(3, device=DEVICE),
        lambda: minitorch.full((2,), 3.0, device=DEVICE),
        lambda: minitorch.arange(4, device=DEVICE),
        lambda: minitorch.eye(2, device=DEVICE),
        lambda: minitorch.zeros_like(minitorch.ones(2, device=DEVICE)),
    ],
    ids=["tensor", "zeros", "ones", "randn", "full", "arange", "eye", "zeros_like"],
)
def test_creation_on_the_device(make):
    t = make()
    assert _on(t, "cuda"), f"storage on {t._data.device}"
    assert t.is_cuda


@pytest.mark.parametrize("move", ["cuda()", "to(str)", "to(device)", "to(tensor)"])
def test_moving_storage_and_back(move):
    x = minitorch.tensor([1.0, 2.0, 3.0])
    if move == "cuda()":
        y = x.cuda()
    elif move == "to(str)":
        y = x.to(DEVICE)
    elif move == "to(device)":
        y = x.to(minitorch.device(DEVICE))
    else:
        y = x.to(minitorch.ones(1, device=DEVICE))
    assert _on(y, "cuda") and _on(x, "cpu")
    assert y.tolist() == [1.0, 2.0, 3.0]
    back = y.cpu()
    assert _on(back, "cpu") and back.tolist() == [1.0, 2.0, 3.0]
    assert "device='cuda:0'" in repr(y)


def test_gradient_flows_back_across_devices():
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(DEVICE)
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    assert _on(x.grad, "cpu") and x.grad.tolist() == [2.0, 4.0]


def _mlp(device):
    """An MLP-like expression in float64; returns the loss value and every gradient."""
    gen = torch.Generator().manual_seed(0)

    def make(*shape, grad=True):
        values = torch.randn(*shape, generator=gen, dtype=torch.float64).tolist()
        return minitorch.tensor(values, dtype=minitorch.float64, device=device, requires_grad=grad)

    w1, b1, w2, b2 = make(4, 8), make(8), make(8, 3), make(3)
    x = make(6, 4, grad=False)
    target = minitorch.tensor([0, 2, 1, 1, 0, 2], device=device)
    hidden = (x @ w1 + b1).tanh()
    logits = hidden @ w2 + b2
    loss = -logits.log_softmax(dim=1).gather(1, target.unsqueeze(1)).mean()
    loss = loss + 0.1 * (w1 * w1).sum().sqrt() + logits.relu().max()
    loss.backward()
    params = (w1, b1, w2, b2)
    for p in params:
        assert p.grad.device.type == torch.device(device).type, "gradients live with the params"
    return loss.item(), [p.grad._data.cpu() for p in params]


def test_mlp_results_and_gradients_equal_cpu():
    loss_cpu, grads_cpu = _mlp("cpu")
    loss_gpu, grads_gpu = _mlp(DEVICE)
    assert loss_gpu == pytest.approx(loss_cpu, rel=1e-10)
    for i, (g_gpu, g_cpu) in enumerate(zip(grads_gpu, grads_cpu)):
        torch.testing.assert_close(
            g_gpu, g_cpu, rtol=1e-9, atol=1e-12, msg=lambda m, i=i: f"parameter {i}: {m}"
        )


OPS = {
    "exp_sum": lambda x: x.exp().sum(),
    "broadcast_mul": lambda x: (x * x[0]).mean(),
    "softmax": lambda x: (x.softmax(dim=1) * x).sum(),
    "max_dim": lambda x: x.max(dim=0)[0].sum(),
    "index": lambda x: x[1:, [0, 2]].pow(2).sum(),
    "matmul_t": lambda x: (x @ x.t()).sigmoid().sum(),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_ops_equal_cpu(op):
    values = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.1, 0.2, 0.3]]
    results = []
    for device in ("cpu", DEVICE):
        x = minitorch.tensor(values, dtype=minitorch.float64, device=device, requires_grad=True)
        out = OPS[op](x)
        out.backward()
        assert _on(out, torch.device(device).type) and _on(x.grad, torch.device(device).type)
        results.append((out.item(), x.grad._data.cpu()))
    (out_cpu, grad_cpu), (out_gpu, grad_gpu) = results
    assert out_gpu == pytest.approx(out_cpu, rel=1e-10), op
    torch.testing.assert_close(grad_gpu, grad_cpu, rtol=1e-9, atol=1e-12)


def test_second_order_on_the_device():
    x = minitorch.tensor(2.0, dtype=minitorch.float64, device=DEVICE, requires_grad=True)
    (g,) = minitorch.autograd.grad(x**3, x, create_graph=True)
    (gg,) = minitorch.autograd.grad(g, x)
    assert (g.item(), gg.item()) == (12.0, 12.0) and _on(gg, "cuda")


def test_device_mismatch_error():
    a = minitorch.ones(2, 2, device=DEVICE, requires_grad=True)
    b = minitorch.ones(2, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device") as info:
        a + b
    assert "add" in str(info.value) and "cpu" in str(info.value)


def test_storage_on_the_device_never_requires_grad():
    loss_value, _ = _mlp(DEVICE)
    x = minitorch.ones(3, device=DEVICE, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    for t in (x, y, x.grad):
        assert not t._data.requires_grad and t._data.grad_fn is None
