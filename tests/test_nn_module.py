"""minitorch.nn.Module, Parameter and the containers against torch.nn.

Most tests build the same model with both libraries (`build(lib)`) and compare what the Module
API reports: names and their order, state_dict keys, reprs, error messages, hook behaviour.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import pytest
import torch
from oracle import assert_close

import minitorch
from minitorch import Tensor


class _Net:
    """A model class written once, for either library (`_Net.make(lib)`): a buffer (persistent
    and not), a Sequential, a ModuleList, a ModuleDict, a bare parameter and a shared layer."""

    @staticmethod
    def make(lib):
        nn = lib.nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("steps", lib.zeros(()))
                self.register_buffer("scratch", lib.zeros(2), persistent=False)
                self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2))
                self.heads = nn.ModuleList(
                    [nn.Linear(8, 2)] + [nn.Linear(2, 2) for _ in range(2)] + [nn.Tanh()]
                )
                self.table = nn.ModuleDict({"emb": nn.Embedding(4, 2, padding_idx=0)})
                self.scale = nn.Parameter(lib.ones(()))
                self.shared = self.heads[1]  # the same module under two names
                self.norm = nn.LayerNorm(2)
                self.drop = nn.Dropout(0.25)

            def forward(self, x):
                h = self.features(x).flatten(1)
                for head in self.heads:
                    h = head(h)
                return self.drop(self.norm(h)) * self.scale

        return Net()


def both(builder=_Net.make):
    """The same model in minitorch and in torch, minitorch's weights copied from torch's."""
    t_model = builder(torch)
    m_model = builder(minitorch)
    m_model.load_state_dict(
        {k: Tensor(v.detach().clone()) for k, v in t_model.state_dict().items()}
    )
    return m_model, t_model


def _names(pairs):
    return [name for name, _ in pairs]


# -------------------------------------------------------------------------------------------------
# Names, order, walking
# -------------------------------------------------------------------------------------------------
def test_names_and_order_equal_torchs():
    m, t = both()
    assert _names(m.named_parameters()) == _names(t.named_parameters())
    assert list(m.state_dict()) == list(t.state_dict())
    assert _names(m.named_buffers()) == _names(t.named_buffers())
    assert _names(m.named_modules()) == _names(t.named_modules())
    assert _names(m.named_children()) == _names(t.named_children())
    assert [type(c).__name__ for c in m.children()] == [type(c).__name__ for c in t.children()]
    assert len(list(m.modules())) == len(list(t.modules()))
    assert len(list(m.parameters())) == len(list(t.parameters()))
    assert _names(m.named_parameters(recurse=False)) == _names(t.named_parameters(recurse=False))
    assert _names(m.named_parameters(prefix="model")) == _names(t.named_parameters(prefix="model"))
    dup_m = _names(m.named_parameters(remove_duplicate=False))
    assert dup_m == _names(t.named_parameters(remove_duplicate=False))
    dup_modules = _names(m.named_modules(remove_duplicate=False))
    assert dup_modules == _names(t.named_modules(remove_duplicate=False))


def test_parameters_are_parameters_and_shared_ones_appear_once():
    m, _ = both()
    params = list(m.parameters())
    assert all(isinstance(p, minitorch.nn.Parameter) for p in params)
    assert all(p.requires_grad and p.is_leaf for p in params)
    assert len({id(p) for p in params}) == len(params)
    assert m.shared.weight is m.heads[1].weight


def test_repr_equals_torchs():
    m, t = both()
    assert repr(m) == repr(t)
    for builder in (
        lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 4, bias=False), lib.nn.Sigmoid()),
        lambda lib: lib.nn.ModuleList(),
        lambda lib: lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.ReLU(), lib.nn.Linear(1, 1)]),
        lambda lib: lib.nn.Sequential(OrderedDict(a=lib.nn.Softmax(dim=1), b=lib.nn.Identity())),
        lambda lib: lib.nn.ModuleList(
            [lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU()) for _ in range(2)]
            + [lib.nn.ModuleDict({"x": lib.nn.ModuleList([lib.nn.Tanh(), lib.nn.Tanh()])})]
        ),
        lambda lib: lib.nn.ModuleDict(lib.nn.ModuleDict({"a": lib.nn.ReLU()})),
    ):
        assert repr(builder(minitorch)) == repr(builder(torch))


def test_parameter_repr_and_construction_like_torch():
    values = torch.randn(2, 3)
    assert repr(minitorch.nn.Parameter(Tensor(values))) == repr(torch.nn.Parameter(values))
    scalar = minitorch.nn.Parameter(minitorch.randn(()))
    assert scalar.shape == () and scalar.requires_grad and scalar.is_leaf
    frozen = minitorch.nn.Parameter(minitorch.randn(2), requires_grad=False)
    assert not frozen.requires_grad
    assert repr(frozen).startswith("Parameter containing:\ntensor(")
    source = minitorch.zeros(3)
    shares = minitorch.nn.Parameter(source)
    with minitorch.no_grad():
        shares[0] = 5.0
    assert source[0].item() == 5.0, "Parameter(t) shares t's storage, as in PyTorch"
    result = shares * 2
    assert type(result) is Tensor, "ops on a parameter give plain tensors"


def test_forward_runs_through_call_and_matches_torch():
    m, t = both()
    m.eval(), t.eval()
    x = torch.randn(2, 1, 6, 6)
    assert_close(m(Tensor(x)), t(x), "model output", rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------------------------------------
# state_dict / load_state_dict
# -------------------------------------------------------------------------------------------------
def test_state_dict_is_detached_and_round_trips():
    m, t = both()
    state = m.state_dict()
    assert isinstance(state, OrderedDict)
    assert all(not v.requires_grad and type(v) is Tensor for v in state.values())
    assert "scratch" not in state and "steps" in state
    fresh = _Net.make(minitorch)
    assert repr(fresh.load_state_dict(state)) == "<All keys matched successfully>"
    for (name, a), b in zip(fresh.state_dict().items(), state.values()):
        assert torch.equal(a._data, b._data), name
    kept = m.state_dict(keep_vars=True)
    assert kept["scale"] is m.scale


def test_load_state_dict_copies_in_place_keeping_parameter_objects():
    m, _ = both()
    weight = m.heads[1].weight
    m.load_state_dict({**m.state_dict(), "heads.1.weight": minitorch.ones(2, 2)})
    assert m.heads[1].weight is weight and weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert weight.requires_grad and weight.is_leaf


def _load_error(model, state, strict=True):
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state, strict=strict)
    return str(info.value)


def test_load_state_dict_errors_equal_torchs():
    m, t = both()

    def broken(lib, state):
        state = OrderedDict(state)
        del state["features.0.bias"]
        del state["steps"]
        state["extra"] = lib.zeros(1)
        state["heads.0.extra"] = lib.zeros(1)
        state["heads.0.weight"] = lib.zeros(3, 2)
        return state

    m_message = _load_error(m, broken(minitorch, m.state_dict()))
    t_message = _load_error(t, broken(torch, t.state_dict()))
    assert m_message == t_message
    assert "Missing key(s) in state_dict" in m_message
    assert "size mismatch for heads.0.weight: copying a param with shape" in m_message
    # A size mismatch is an error even when strict=False, as in PyTorch.
    m_lenient = _load_error(m, broken(minitorch, m.state_dict()), strict=False)
    assert m_lenient == _load_error(t, broken(torch, t.state_dict()), strict=False)


def test_load_state_dict_not_strict_returns_missing_and_unexpected_keys():
    m, t = both()
    m_result = m.load_state_dict({"scale": minitorch.ones(()), "bogus": minitorch.ones(1)}, False)
    t_result = t.load_state_dict({"scale": torch.ones(()), "bogus": torch.ones(1)}, False)
    assert m_result.missing_keys == t_result.missing_keys
    assert m_result.unexpected_keys == t_result.unexpected_keys == ["bogus"]
    assert repr(m_result) == repr(t_result)


def test_load_state_dict_accepts_a_torch_state_dict():
    t_model = torch.nn.Linear(3, 2)
    m_model = minitorch.nn.Linear(3, 2)
    m_model.load_state_dict(t_model.state_dict())
    assert_close(m_model.weight, t_model.weight, "weight loaded from torch tensors")


# -------------------------------------------------------------------------------------------------
# Modes, gradients, moving
# -------------------------------------------------------------------------------------------------
def test_train_and_eval_reach_every_module():
    m, _ = both()
    assert m.training and all(mod.training for mod in m.modules())
    assert m.eval() is m
    assert not any(mod.training for mod in m.modules())
    m.train()
    assert all(mod.training for mod in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


def test_zero_grad_and_requires_grad():
    m, _ = both()
    m.eval()
    m(minitorch.randn(2, 1, 6, 6)).sum().backward()
    grads = {name: p.grad for name, p in m.named_parameters()}
    assert grads["scale"] is not None and grads["table.emb.weight"] is None  # unused: no grad
    m.zero_grad(set_to_none=False)
    assert all(p.grad is None or p.grad.abs().sum().item() == 0 for p in m.parameters())
    kept = m.scale.grad
    m.zero_grad(set_to_none=False)
    assert m.scale.grad is kept, "zeroing in place keeps the same gradient tensor"
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_to_double_and_float_keep_the_same_parameter_objects():
    m, _ = both()
    params = list(m.parameters())
    embedding_index_free = m.table.emb.weight
    assert m.double() is m
    assert all(p.dtype == torch.float64 for p in m.parameters())
    assert all(a is b for a, b in zip(params, m.parameters()))
    assert m.steps.dtype == torch.float64
    m.to(torch.float32)
    assert embedding_index_free.dtype == torch.float32
    m.to("cpu", torch.float64)
    assert m.scale.dtype == torch.float64 and m.scale.device.type == "cpu"
    m.to(minitorch.zeros(1, dtype=torch.float32))
    assert m.scale.dtype == torch.float32
    m.float().cpu()
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex"):
        m.to(torch.int64)


def test_to_keeps_integer_buffers_integer():
    module = minitorch.nn.Module()
    module.register_buffer("counts", minitorch.zeros(3, dtype=minitorch.int64))
    module.double()
    assert module.counts.dtype == torch.int64


def test_apply_visits_children_first():
    m, t = both()
    m_order, t_order = [], []
    m.apply(lambda mod: m_order.append(type(mod).__name__))
    t.apply(lambda mod: t_order.append(type(mod).__name__))
    assert m_order == t_order

    def init_linear(module):
        if isinstance(module, minitorch.nn.Linear):
            minitorch.nn.init.zeros_(module.weight)

    m.apply(init_linear)
    assert m.heads[2].weight.abs().sum().item() == 0


# -------------------------------------------------------------------------------------------------
# Registration rules and their errors
# -------------------------------------------------------------------------------------------------
def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def test_registration_errors_equal_torchs():
    def cases(lib):
        nn = lib.nn
        layer = nn.Linear(2, 2)
        return [
            lambda: setattr(layer, "weight", lib.zeros(2, 2)),
            lambda: layer.register_buffer("weight", lib.zeros(1)),
            lambda: layer.register_buffer("b", 3),
            lambda: layer.register_buffer("a.b", lib.zeros(1)),
            lambda: layer.register_parameter("p", lib.zeros(1)),
            lambda: layer.register_parameter("", None),
            lambda: layer.add_module("m", 3),
            lambda: layer.missing,
            lambda: nn.Module()(1),
            lambda: nn.Sequential()[0],
            lambda: nn.ModuleList([nn.ReLU()])[-2],
        ]

    for m_case, t_case in zip(cases(minitorch), cases(torch)):
        assert _error(m_case) == _error(t_case)


def test_attribute_assignment_registers_and_reassignment_moves():
    module = minitorch.nn.Module()
    module.layer = minitorch.nn.Linear(1, 1)
    module.weight = minitorch.nn.Parameter(minitorch.zeros(1))
    module.plain = minitorch.zeros(1)  # a plain tensor is just an attribute
    assert list(dict(module.named_children())) == ["layer"]
    assert _names(module.named_parameters()) == ["weight", "layer.weight", "layer.bias"]
    module.layer = None
    assert list(module.children()) == [] and module.layer is None
    del module.weight
    assert _names(module.named_parameters()) == []
    module.register_buffer("running", minitorch.zeros(2))
    module.running = minitorch.ones(2)
    assert module.running.tolist() == [1.0, 1.0] and "running" in module.state_dict()
    assert "running" in dir(module)


def test_get_submodule():
    m, _ = both()
    assert m.get_submodule("features.0") is m.features[0]
    assert m.get_submodule("") is m
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("features.nope")


# -------------------------------------------------------------------------------------------------
# Hooks
# -------------------------------------------------------------------------------------------------
def test_forward_hooks_see_and_replace_inputs_and_outputs_like_torch():
    def run(lib):
        layer = lib.nn.Linear(2, 2)
        lib.nn.init.ones_(layer.weight)
        lib.nn.init.zeros_(layer.bias)
        seen = []
        pre = layer.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        post = layer.register_forward_hook(lambda mod, args, out: seen.append(out.sum().item()))
        replace = layer.register_forward_hook(lambda mod, args, out: out + 1)
        x = lib.ones(1, 2)
        first = layer(x).tolist()
        pre.remove()
        post.remove()
        second = layer(x).tolist()
        replace.remove()
        third = layer(x).tolist()
        return first, second, third, seen

    assert run(minitorch) == run(torch)


def test_forward_hooks_with_kwargs_and_prepend():
    layer = minitorch.nn.Identity()
    order = []
    layer.register_forward_hook(lambda m, a, o: order.append("last"))
    layer.register_forward_hook(lambda m, a, o: order.append("first"), prepend=True)
    layer.register_forward_pre_hook(lambda m, a, kw: ((a[0] + 1,), kw), with_kwargs=True)
    assert layer(minitorch.zeros(1)).item() == 1.0
    assert order == ["first", "last"]


# -------------------------------------------------------------------------------------------------
# Containers
# -------------------------------------------------------------------------------------------------
def test_sequential_indexing_slicing_and_editing_like_torch():
    def run(lib):
        nn = lib.nn
        seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1), nn.Sigmoid())
        part = seq[1:3]
        facts = [
            len(seq),
            type(seq[-1]).__name__,
            type(part).__name__,
            list(dict(part.named_children())),
            [type(m).__name__ for m in seq],
        ]
        seq.append(nn.Tanh())
        del seq[0]
        facts += [list(dict(seq.named_children())), len(seq), repr(seq)]
        seq[0] = nn.Identity()
        facts.append(repr(seq))
        return facts

    assert run(minitorch) == run(torch)


def test_sequential_runs_its_modules_in_order():
    m_seq, t_seq = both(
        lambda lib: lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    )
    x = torch.randn(5, 3)
    assert_close(m_seq(Tensor(x)), t_seq(x), "Sequential output", rtol=1e-6, atol=1e-7)


def test_module_list_and_dict_like_torch():
    def run(lib):
        nn = lib.nn
        layers = nn.ModuleList([nn.Linear(1, 1)])
        layers.append(nn.ReLU())
        layers.extend([nn.Tanh(), nn.Tanh()])
        layers.insert(0, nn.Identity())
        layers += [nn.Sigmoid()]
        popped = type(layers.pop(1)).__name__
        facts = [len(layers), popped, repr(layers), repr(layers[1:3])]
        del layers[0]
        facts.append(list(dict(layers.named_children())))
        table = nn.ModuleDict({"b": nn.ReLU()})
        table["a"] = nn.Tanh()
        table.update([("c", nn.Identity())])
        facts += [list(table), list(table.keys()), "a" in table, len(table), repr(table)]
        facts.append(type(table.pop("b")).__name__)
        facts.append(list(table))
        return facts

    assert run(minitorch) == run(torch)


def test_plain_list_of_layers_is_not_registered():
    class Holder(minitorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = [minitorch.nn.Linear(1, 1)]
            self.registered = minitorch.nn.ModuleList([minitorch.nn.Linear(1, 1)])

    assert _names(Holder().named_parameters()) == ["registered.0.weight", "registered.0.bias"]


def test_deepcopy_gives_independent_parameters():
    m, _ = both()
    clone = copy.deepcopy(m)
    assert _names(clone.named_parameters()) == _names(m.named_parameters())
    assert all(a is not b for a, b in zip(clone.parameters(), m.parameters()))
    assert all(isinstance(p, minitorch.nn.Parameter) for p in clone.parameters())
    assert clone.shared is clone.heads[1], "sharing is kept inside the copy"
    with minitorch.no_grad():
        clone.scale.fill_(3.0)
    assert m.scale.item() == 1.0


# -------------------------------------------------------------------------------------------------
# A tutorial-style program, run unchanged on both libraries
# -------------------------------------------------------------------------------------------------
def _tutorial_program(torch):
    """A classic PyTorch training loop with a hand-written SGD step; returns the losses."""
    nn = torch.nn
    F = torch.nn.functional

    class TwoLayerNet(nn.Module):
        def __init__(self, d_in, hidden, d_out):
            super().__init__()
            self.linear1 = nn.Linear(d_in, hidden)
            self.linear2 = nn.Linear(hidden, d_out)

        def forward(self, x):
            return self.linear2(F.relu(self.linear1(x)))

    torch.manual_seed(0)
    x = torch.randn(16, 4, dtype=torch.float64)
    y = torch.randint(0, 3, (16,))
    model = TwoLayerNet(4, 8, 3).double()
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(5):
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with torch.no_grad():
            for param in model.parameters():
                param -= 0.5 * param.grad
    losses.append(model.linear1.weight[:, 0].sum().item())
    return losses


def test_a_pytorch_tutorial_program_runs_unchanged_and_gives_torchs_numbers():
    m_losses = _tutorial_program(minitorch)
    t_losses = _tutorial_program(torch)
    assert m_losses == pytest.approx(t_losses, rel=1e-9, abs=1e-12)
    assert m_losses[4] < m_losses[0]
