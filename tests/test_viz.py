"""minitorch.viz: the same picture as torchviz, a matplotlib fallback without graphviz, text view.

torchviz (0.0.3) on the PyTorch graph is the oracle: for the same program, `make_dot` on the
minitorch graph must give torchviz's DOT source once node names are normalised (torchviz names
nodes by memory address, minitorch by order of first use).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
import torchviz

import minitorch
from minitorch import viz
from minitorch.viz.matplotlib_fallback import layers
from minitorch.viz.picture import describe

# torchviz 0.0.3 imports distutils, which warns on every make_dot call.
pytestmark = pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning")


def normalised(source: str) -> str:
    """Rename torchviz's address-named nodes n0, n1, ... in order of first appearance."""
    names: dict[str, str] = {}
    return re.sub(r"\b\d{6,}\b", lambda m: names.setdefault(m.group(0), f"n{len(names)}"), source)


def mlp(lib, x, w1, b1, w2):
    hidden = (x @ w1.t() + b1).relu()
    return (hidden @ w2.t()).tanh().sum()


def diamond(lib, x, w1, b1, w2):
    h = x.sigmoid()
    return (h * h + h.exp()).mean() + (w1 * w1).sum() + b1.sum() + w2.sum()


def shared_leaf(lib, x, w1, b1, w2):
    return (w1 * w1).sum() + (w2 - 1).exp().sum() * b1.sum()


PROGRAMS = [mlp, diamond, shared_leaf]


def both_graphs(program, requires_x: bool = False):
    """Run `program` on PyTorch and on minitorch with the same float64 values."""
    gen = torch.Generator().manual_seed(0)
    values = {
        "x": torch.randn(4, 3, generator=gen, dtype=torch.float64),
        "w1": torch.randn(5, 3, generator=gen, dtype=torch.float64),
        "b1": torch.randn(5, generator=gen, dtype=torch.float64),
        "w2": torch.randn(2, 5, generator=gen, dtype=torch.float64),
    }
    result = {}
    for lib in (torch, minitorch):
        params = {}
        for name, value in values.items():
            grad = name != "x" or requires_x
            params[name] = lib.tensor(value.tolist(), dtype=torch.float64, requires_grad=grad)
        result[lib] = (program(lib, **params), params)
    return result


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("show_saved", [False, True])
@pytest.mark.parametrize("requires_x", [False, True])
def test_make_dot_matches_torchviz(program, show_saved, requires_x):
    graphs = both_graphs(program, requires_x)
    torch_out, torch_params = graphs[torch]
    mt_out, mt_params = graphs[minitorch]
    expected = normalised(torchviz.make_dot(torch_out, torch_params, show_saved=show_saved).source)
    got = viz.make_dot(mt_out, mt_params, show_saved=show_saved).source
    assert got == expected
    # The same walker draws PyTorch graphs too, identically.
    assert viz.make_dot(torch_out, torch_params, show_saved=show_saved).source == expected


def test_make_dot_views_and_several_outputs_match_torchviz():
    x = torch.randn(3, 2, requires_grad=True)
    xm = minitorch.tensor(x.tolist(), requires_grad=True)
    for lib_x, lib in ((x, torch), (xm, minitorch)):
        doubled = lib_x * 2
        outputs = (doubled.t(), doubled.sum())
        if lib is torch:
            expected = normalised(torchviz.make_dot(outputs).source)
        else:
            assert viz.make_dot(outputs).source == expected
    assert "darkolivegreen3" in expected and "style=dotted" in expected


def test_make_dot_custom_function_saved_tensors_always_shown():
    class TorchSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    class MiniSquare(minitorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = torch.randn(3, requires_grad=True)
    xm = minitorch.tensor(x.tolist(), requires_grad=True)
    expected = normalised(torchviz.make_dot(TorchSquare.apply(x).sum(), {"x": x}).source)
    got = viz.make_dot(MiniSquare.apply(xm).sum(), {"x": xm}).source
    assert got == expected.replace("TorchSquareBackward", "MiniSquareBackward")
    assert "orange" in got


def test_make_dot_is_deterministic_and_has_no_addresses():
    sources = set()
    for _ in range(2):
        out, params = both_graphs(mlp)[minitorch]
        sources.add(viz.make_dot(out, params, show_saved=True).source)
    assert len(sources) == 1
    source = sources.pop()
    assert not re.search(r"0x[0-9a-f]+|\d{6,}", source), source


def test_make_dot_show_attrs_lists_saved_tensors():
    out, params = both_graphs(mlp)[minitorch]
    source = viz.make_dot(out, params, show_attrs=True).source
    assert "result: [saved tensor]" in source  # TanhBackward0 and ReluBackward0 save results
    assert "self: [saved tensor]" in source  # MmBackward0 saves its first input


def test_make_dot_renders_with_graphviz(tmp_path):
    if not viz.has_graphviz():
        pytest.skip("graphviz's dot program is not installed")
    out, params = both_graphs(diamond)[minitorch]
    picture = viz.show(out, params, show_saved=True)
    assert "<svg" in picture._repr_image_svg_xml()  # what JupyterLab displays
    path = viz.draw(out, str(tmp_path / "graph.png"), params)
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


FALLBACK_SCRIPT = textwrap.dedent(
    """
    import sys
    import minitorch
    from minitorch import viz

    x = minitorch.randn(4, 3)
    w = minitorch.randn(5, 3, requires_grad=True)
    loss = (x @ w.t()).relu().sum()
    assert not viz.has_graphviz()
    figure = viz.show(loss, params={"w": w}, show_saved=True)
    figure.savefig(sys.argv[1], format="png")
    viz.draw(loss, sys.argv[2], params={"w": w})
    viz.show(loss)  # the hint is printed once
    import matplotlib.figure
    assert figure._repr_png_()[1:4] == b"PNG"  # what Jupyter displays
    print(isinstance(figure, matplotlib.figure.Figure))
    """
)


def test_fallback_draws_a_png_when_dot_is_missing(tmp_path):
    """Hide `dot` from PATH: show() returns a matplotlib Figure (that Jupyter can display) after
    a one-line hint, draw() writes a PNG, and nothing raises."""
    hidden = [p for p in os.environ.get("PATH", "").split(os.pathsep)]
    hidden = [p for p in hidden if p and not os.path.exists(os.path.join(p, "dot"))]
    env = dict(os.environ, PATH=os.pathsep.join(hidden), MPLBACKEND="Agg")
    shown, drawn = tmp_path / "shown.png", tmp_path / "drawn.png"
    run = subprocess.run(
        [sys.executable, "-c", FALLBACK_SCRIPT, str(shown), str(drawn)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines == [viz.INSTALL_HINT, "True"]
    for path in (shown, drawn):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_fallback_layout_puts_every_arrow_downwards():
    out, params = both_graphs(diamond, requires_x=True)[minitorch]
    picture = describe(out, params, show_saved=True)
    rows = layers(picture)
    rank = {key: i for i, row in enumerate(rows) for key in row}
    assert sorted(rank) == sorted(picture.nodes())
    for edge in picture.edges():
        if edge.attrs.get("dir") != "none":
            assert rank[edge.key] < rank[edge.head], edge
    output_key = picture.statements[0].key
    assert rows[-1] == [output_key]


MLP_TEXT = """\
output () <- SumBackward0
SumBackward0
└─ TanhBackward0  saved: result (4, 2)
   └─ MmBackward0  saved: mat2 (5, 2), self (4, 5)
      ├─ ReluBackward0  saved: result (4, 5)
      │  └─ AddBackward0
      │     ├─ MmBackward0  saved: self (4, 3) = x
      │     │  └─ TBackward0
      │     │     └─ AccumulateGrad  w1 (5, 3)
      │     └─ AccumulateGrad  b1 (5)
      └─ TBackward0
         └─ AccumulateGrad  w2 (2, 5)"""


def test_print_graph_text(capsys):
    graphs = both_graphs(mlp)
    out, params = graphs[minitorch]
    viz.print_graph(out, params)
    assert capsys.readouterr().out == MLP_TEXT + "\n"
    # PyTorch's graph of the same program reads the same.
    torch_out, torch_params = graphs[torch]
    assert viz.format_graph(torch_out, torch_params) == MLP_TEXT
    out.backward()
    after = viz.format_graph(out, params)
    assert after.count("saved tensors freed") == 4 and "saved:" not in after


def test_print_graph_numbers_shared_nodes_and_shows_none_inputs():
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    y = (h * 3 + h).sum()
    text = viz.format_graph(y, {"x": x}, show_none=True)
    assert text == (
        "output () <- SumBackward0\n"
        "SumBackward0\n"
        "└─ AddBackward0\n"
        "   ├─ MulBackward0\n"
        "   │  ├─ ExpBackward0 #1  saved: result (2)\n"
        "   │  │  └─ AccumulateGrad  x (2)\n"
        "   │  └─ (None: no grad needed)\n"
        "   └─ ExpBackward0 #1 (see above)"
    )


def test_deep_graph_needs_no_recursion():
    x = minitorch.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    assert viz.make_dot(y).source.count("MulBackward0") == 5000
    text = viz.format_graph(y)
    assert text.count("MulBackward0") == 5001  # and once in the first line
    assert max(len(line) for line in text.splitlines()) < 100


def test_program_dot_draws_every_step_and_guard_in_running_order() -> None:
    from minitorch.autograd.record import record_call

    minitorch.manual_seed(0)
    layer = minitorch.nn.Linear(3, 2).double()

    def clipped(x):
        y = layer(x).tanh()
        return y * 2 if y.sum() > 0 else y - 1

    x = minitorch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    program, _ = record_call(clipped, x)
    dot = minitorch.viz.program_dot(program, guards="tensor 'x': [1, 3]", title="clipped")
    source = dot.source
    assert source == minitorch.viz.program_dot(program, "tensor 'x': [1, 3]", "clipped").source
    for text in ("%0 input", "%1 captured", "= Linear", "= Tanh", "guard: bool(%", "output 0"):
        assert text in source, text
    assert "guards checked before a replay" in source
    assert source.index("= Linear") < source.index("= Tanh") < source.index("guard: bool")
