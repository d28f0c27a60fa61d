"""minitorch.optim against torch.optim: the same parameters, the same losses, several steps.

Each case builds float64 parameters with identical values in both libraries, then repeats
"loss -> backward -> step" and compares every parameter after every step. The loss depends on
the parameters non-linearly, so a wrong update changes later gradients too. One parameter never
receives a gradient and must be left alone (no update, no state).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracle import assert_close, raw, shapes

import minitorch

STEPS = 5

# Hypothesis strategies for each optimizer's options ------------------------------------------
learning_rates = st.sampled_from([0.01, 0.1, 0.3])


@st.composite
def sgd_options(draw):
    nesterov = draw(st.booleans())
    momentum = draw(st.sampled_from([0.5, 0.9] if nesterov else [0.0, 0.5, 0.9]))
    return {
        "lr": draw(learning_rates),
        "momentum": momentum,
        "dampening": 0.0 if nesterov else draw(st.sampled_from([0.0, 0.3])),
        "weight_decay": draw(st.sampled_from([0.0, 0.1])),
        "nesterov": nesterov,
        "maximize": draw(st.booleans()),
    }


adam_options = st.fixed_dictionaries(
    {
        "lr": learning_rates,
        "betas": st.sampled_from([(0.9, 0.999), (0.5, 0.8)]),
        "eps": st.sampled_from([1e-8, 1e-2]),
        "weight_decay": st.sampled_from([0.0, 0.1]),
        "amsgrad": st.booleans(),
        "maximize": st.booleans(),
    }
)

rmsprop_options = st.fixed_dictionaries(
    {
        "lr": learning_rates,
        "alpha": st.sampled_from([0.99, 0.7]),
        "eps": st.sampled_from([1e-8, 1e-2]),
        "weight_decay": st.sampled_from([0.0, 0.1]),
        "momentum": st.sampled_from([0.0, 0.8]),
        "centered": st.booleans(),
        "maximize": st.booleans(),
    }
)


# The training problem, written once for both libraries -----------------------------------------
def make_params(lib, param_shapes, seed):
    """Leaf parameters of `lib` with values from a seeded torch generator (same in both)."""
    gen = torch.Generator().manual_seed(seed)
    values = [torch.randn(shape, generator=gen, dtype=torch.float64) for shape in param_shapes]
    if lib is torch:
        return [v.requires_grad_(True) for v in values]
    return [minitorch.Tensor(v, requires_grad=True) for v in values]


def loss_of(lib, used):
    """A loss whose gradient depends on the parameters' current values."""
    total = 0.0
    for i, p in enumerate(used):
        total = total + (lib.sin(p) * (i + 1.5)).sum() + ((p - 0.3) ** 2 * p).sum()
    return total


def train(lib, make_optimizer, params, steps=STEPS):
    """Run `steps` steps on all but the last parameter; return the values after each step."""
    used = params[:-1]
    optimizer = make_optimizer(lib)
    history = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss_of(lib, used).backward()
        optimizer.step()
        history.append([raw(p).clone() for p in params])
    return optimizer, history


def compare_training(name, options, param_shapes, seed, groups=False):
    """Train with torch.optim.<name> and minitorch.optim.<name>; every step must agree."""

    def make_optimizer_for(params):
        def make(lib):
            cls = getattr(lib.optim, name)
            if groups:  # two groups: the first with its own lr
                return cls([{"params": params[:1], "lr": 0.05}, {"params": params[1:]}], **options)
            return cls(params, **options)

        return make

    t_params = make_params(torch, param_shapes, seed)
    m_params = make_params(minitorch, param_shapes, seed)
    start = [p.detach().clone() for p in t_params]
    t_opt, t_history = train(torch, make_optimizer_for(t_params), t_params)
    m_opt, m_history = train(minitorch, make_optimizer_for(m_params), m_params)
    for step, (m_values, t_values) in enumerate(zip(m_history, t_history), 1):
        for i, (m, t) in enumerate(zip(m_values, t_values)):
            assert_close(m, t, f"{name}({options}) parameter {i} after step {step}", 1e-10, 1e-12)
    assert torch.equal(raw(m_params[-1]), start[-1]), "a parameter without grad was changed"
    assert m_params[-1] not in m_opt.state, "a parameter without grad got optimizer state"
    compare_state_dicts(m_opt.state_dict(), t_opt.state_dict())
    return m_opt, m_params


def compare_state_dicts(m_state, t_state):
    """Same structure as PyTorch's: the same keys, param indices, options and state tensors."""
    assert m_state.keys() == t_state.keys()
    assert m_state["param_groups"] == t_state["param_groups"]
    assert m_state["state"].keys() == t_state["state"].keys()
    for index, t_entry in t_state["state"].items():
        m_entry = m_state["state"][index]
        assert m_entry.keys() == t_entry.keys(), f"state of param {index}"
        for key, t_value in t_entry.items():
            assert isinstance(m_entry[key], minitorch.Tensor), f"state[{index}][{key!r}]"
            assert_close(m_entry[key], t_value, f"state[{index}][{key!r}]", 1e-10, 1e-12)


param_shapes = st.lists(shapes(0, 2), min_size=3, max_size=3)
seeds = st.integers(0, 1000)


@given(options=sgd_options(), param_shapes=param_shapes, seed=seeds)
def test_sgd_matches_torch(options, param_shapes, seed):
    compare_training("SGD", options, param_shapes, seed)


@given(options=adam_options, param_shapes=param_shapes, seed=seeds)
def test_adam_matches_torch(options, param_shapes, seed):
    compare_training("Adam", options, param_shapes, seed)


@given(options=adam_options, param_shapes=param_shapes, seed=seeds)
def test_adamw_matches_torch(options, param_shapes, seed):
    compare_training("AdamW", options, param_shapes, seed)


@given(options=rmsprop_options, param_shapes=param_shapes, seed=seeds)
def test_rmsprop_matches_torch(options, param_shapes, seed):
    compare_training("RMSprop", options, param_shapes, seed)


@pytest.mark.parametrize(
    "name, options",
    [
        ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
        ("Adam", {"lr": 0.1, "amsgrad": True}),
        ("AdamW", {"lr": 0.1}),
        ("RMSprop", {"momentum": 0.5, "centered": True}),
    ],
)
def test_param_groups_with_their_own_options(name, options):
    compare_training(name, options, [(3,), (2, 2), (2,)], seed=1, groups=True)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_defaults_match_torch(name):
    t_param = torch.zeros(2, requires_grad=True)
    m_param = minitorch.zeros(2, requires_grad=True)
    t_defaults = getattr(torch.optim, name)([t_param]).defaults
    assert getattr(minitorch.optim, name)([m_param]).defaults == t_defaults


# state_dict / load_state_dict -------------------------------------------------------------------
def test_load_state_dict_continues_exactly():
    options = {"lr": 0.1, "betas": (0.8, 0.9), "amsgrad": True}
    m_opt, m_params = compare_training("Adam", options, [(3,), (2,), (1,)], seed=3)
    twins = [minitorch.Tensor(raw(p).clone(), requires_grad=True) for p in m_params]
    twin_opt = minitorch.optim.Adam(twins, lr=0.5)  # the loaded lr must win
    twin_opt.load_state_dict(m_opt.state_dict())
    assert twin_opt.param_groups[0]["lr"] == 0.1
    assert twin_opt.param_groups[0]["params"][0] is twins[0]
    for opt, params in ((m_opt, m_params), (twin_opt, twins)):
        opt.zero_grad()
        loss_of(minitorch, params[:-1]).backward()
        opt.step()
    for p, twin in zip(m_params, twins):
        assert torch.equal(raw(p), raw(twin))
    # The loaded state is a copy: stepping one optimizer does not move the other's buffers.
    assert twin_opt.state[twins[0]]["exp_avg"] is not m_opt.state[m_params[0]]["exp_avg"]


def test_load_state_dict_accepts_torch_optimizer_state():
    """A state dict from torch.optim (torch tensors inside) continues identically here."""
    options = {"lr": 0.1, "momentum": 0.5, "centered": True}
    t_params = make_params(torch, [(3,), (2,)], seed=5)
    t_opt, _ = train(torch, lambda lib: torch.optim.RMSprop(t_params, **options), t_params, 2)
    m_params = [minitorch.Tensor(p.detach().clone(), requires_grad=True) for p in t_params]
    m_opt = minitorch.optim.RMSprop(m_params, **options)
    m_opt.load_state_dict(t_opt.state_dict())
    for lib, opt, params in ((torch, t_opt, t_params), (minitorch, m_opt, m_params)):
        opt.zero_grad()
        loss_of(lib, params[:-1]).backward()
        opt.step()
    for m, t in zip(m_params, t_params):
        assert_close(m, t, "parameter after a step from torch's state", 1e-12, 1e-14)


def test_load_state_dict_rejects_other_group_sizes():
    opt = minitorch.optim.SGD([minitorch.zeros(2, requires_grad=True)], lr=0.1)
    other = minitorch.optim.SGD(
        [minitorch.zeros(2, requires_grad=True), minitorch.zeros(1, requires_grad=True)], lr=0.1
    )
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(other.state_dict())


def test_state_dict_survives_save_and_load(tmp_path):
    m_opt, _ = compare_training("SGD", {"lr": 0.1, "momentum": 0.9}, [(2,), (3,), (1,)], seed=4)
    minitorch.save(m_opt.state_dict(), tmp_path / "opt.pt")
    loaded = minitorch.load(tmp_path / "opt.pt")
    assert loaded["param_groups"] == m_opt.state_dict()["param_groups"]
    assert torch.equal(
        raw(loaded["state"][1]["momentum_buffer"]),
        raw(m_opt.state_dict()["state"][1]["momentum_buffer"]),
    )


# zero_grad, versions, closures ------------------------------------------------------------------
def test_zero_grad_sets_none_or_zeroes_in_place():
    p = minitorch.ones(3, requires_grad=True)
    opt = minitorch.optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_step_bumps_the_version_so_stale_graphs_fail(name):
    """A graph that saved a parameter cannot be backpropagated after the parameter was stepped,
    in both libraries."""
    for lib in (torch, minitorch):
        w = lib.ones(3, requires_grad=True)
        x = lib.ones(3, requires_grad=True)
        opt = getattr(lib.optim, name)([w], lr=0.1)
        (w * w).sum().backward()
        y = (w * x).sum()  # MulBackward0 saves w
        version = w._version
        opt.step()
        assert w._version > version
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_step_runs_the_closure_with_grad_enabled_and_returns_its_loss():
    p = minitorch.tensor([1.0, -2.0], requires_grad=True)
    opt = minitorch.optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with minitorch.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    assert p.tolist() == [0.5, -1.0]


def test_float32_parameters_stay_float32():
    p = minitorch.ones(2, requires_grad=True)
    opt = minitorch.optim.Adam([p], lr=0.1)
    p.sum().backward()
    opt.step()
    assert p.dtype == minitorch.float32
    assert opt.state[p]["exp_avg"].dtype == minitorch.float32


# Groups and errors ------------------------------------------------------------------------------
def test_add_param_group_takes_the_defaults():
    a, b = minitorch.zeros(1, requires_grad=True), minitorch.zeros(1, requires_grad=True)
    opt = minitorch.optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[1]["lr"] == 0.01 and opt.param_groups[1]["momentum"] == 0.9


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda p: minitorch.optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
        (lambda p: minitorch.optim.SGD(p, lr=0.1), TypeError, "iterable of Tensors or dicts"),
        (lambda p: minitorch.optim.SGD([p * 2], lr=0.1), ValueError, "non-leaf Tensor"),
        (lambda p: minitorch.optim.SGD([3.0], lr=0.1), TypeError, "can only optimize Tensors"),
        (
            lambda p: minitorch.optim.SGD([{"params": {p}}], lr=0.1),
            TypeError,
            "ordered collections",
        ),
        (lambda p: minitorch.optim.SGD([p], lr=-1.0), ValueError, "Invalid learning rate: -1.0"),
        (lambda p: minitorch.optim.SGD([p], nesterov=True), ValueError, "Nesterov momentum"),
        (lambda p: minitorch.optim.Adam([p], betas=(1.0, 0.9)), ValueError, "beta parameter at"),
        (lambda p: minitorch.optim.Adam([p], fused=True), ValueError, "fused=True"),
        (
            lambda p: minitorch.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1),
            ValueError,
            "more than one parameter group",
        ),
    ],
)
def test_errors_say_what_pytorch_says(make, error, message):
    p = minitorch.zeros(2, requires_grad=True)
    with pytest.raises(error, match=message):
        make(p)


def test_repr_lists_each_group_like_pytorch():
    t_opt = torch.optim.RMSprop([torch.zeros(1, requires_grad=True)], lr=0.5)
    m_opt = minitorch.optim.RMSprop([minitorch.zeros(1, requires_grad=True)], lr=0.5)
    assert repr(m_opt) == repr(t_opt)


def test_step_lr_matches_torch():
    def lrs(lib):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.3)
        scheduler = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        seen = []
        for _ in range(8):
            opt.step()
            scheduler.step()
            seen.append((opt.param_groups[0]["lr"], scheduler.get_last_lr()))
        return seen, opt.param_groups[0]["initial_lr"]

    assert lrs(minitorch) == lrs(torch)


@pytest.mark.cuda
def test_sgd_on_cuda_matches_cpu():
    cpu = minitorch.tensor([1.0, -2.0, 0.5], dtype=minitorch.float64, requires_grad=True)
    gpu = minitorch.tensor([1.0, -2.0, 0.5], dtype=minitorch.float64, device="cuda")
    gpu.requires_grad_(True)
    for p in (cpu, gpu):
        opt = minitorch.optim.Adam([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss_of(minitorch, [p]).backward()
            opt.step()
    assert gpu.device.type == "cuda"
    assert torch.allclose(raw(gpu).cpu(), raw(cpu))
