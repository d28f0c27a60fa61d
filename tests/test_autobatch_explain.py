"""`autobatch.stats().lost`: what lost batching, per cause, at the line of user code that caused
it, with what to write instead (NOTE [Explaining lost batching] in minitorch/autobatch/explain.py).

Each test writes per-sample code that loses batching one way, and checks the record: its cause,
its count, and that it points at the line of this file marked `# <- marker`.
"""

from __future__ import annotations

import os

import pytest

import minitorch
from minitorch import autobatch
from minitorch.autobatch import explain
from minitorch.autobatch.stats import DEPENDENT_CHAIN, NO_RULE, SHAPES_DIFFER, VALUE_READ
from minitorch.autograd import Function

SAMPLES = 6


def line_of(marker: str) -> int:
    """The line of this file that ends with `# <- marker`."""
    with open(__file__) as source:
        lines = [n for n, text in enumerate(source, 1) if text.rstrip().endswith(f"# <- {marker}")]
    assert len(lines) == 1, f"marker {marker!r} is on lines {lines}"
    return lines[0]


def the_record(cause: str) -> autobatch.LostBatching:
    """The one record of `cause` in the latest block's stats (and no record of another cause)."""
    lost = autobatch.stats().lost
    assert [r.cause for r in lost] == [cause], f"expected one {cause!r} record:\n{lost}"
    return lost[0]


def check_points_at(record: autobatch.LostBatching, marker: str) -> None:
    assert os.path.basename(record.file) == os.path.basename(__file__), record
    assert record.line == line_of(marker), f"{record.where}, expected line {line_of(marker)}"
    assert record.where == f"{os.path.basename(__file__)}:{record.line}"
    assert record.source.endswith(f"# <- {marker}"), record.source
    assert record.advice


@pytest.fixture
def layer() -> minitorch.nn.Linear:
    minitorch.manual_seed(0)
    return minitorch.nn.Linear(4, 4)


@pytest.fixture
def inputs() -> list[minitorch.Tensor]:
    minitorch.manual_seed(1)
    return [minitorch.randn(1, 4) for _ in range(SAMPLES)]


def test_a_fully_batched_block_reports_nothing_lost(layer, inputs):
    with autobatch.batch():
        losses = [layer(x).tanh().sum() for x in inputs]
        total = minitorch.stack(losses).sum()
    total.item()  # read after the block: free
    stats = autobatch.stats()
    assert stats.largest_batch == SAMPLES and stats.lost == [], stats.explain()
    assert "lost batching: nothing" in str(stats)


@pytest.mark.parametrize(
    "read, advice",
    [
        ("item", "read it after the block"),
        ("float", "read it after the block"),
        ("tolist", "read it after the block"),
        ("bool", "minitorch.where"),
        ("format", "print after the block"),
    ],
)
def test_a_value_read_inside_the_block_is_a_forced_flush_at_its_line(layer, inputs, read, advice):
    with autobatch.batch():
        losses = []
        for x in inputs:
            loss = layer(x).tanh().sum()
            if read == "item":
                loss.item()  # <- item
            elif read == "float":
                float(loss)  # <- float
            elif read == "tolist":
                loss.tolist()  # <- tolist
            elif read == "bool":
                bool(loss > 0)  # <- bool
            else:
                _ = f"{loss:.3f}"  # <- format
            losses.append(loss)
        total = minitorch.stack(losses).sum()
    record = the_record(VALUE_READ)
    check_points_at(record, read)
    assert record.count == SAMPLES  # each read cut the next samples off the batch before it
    assert record.what == f"{read}()" and advice in record.advice, record
    assert f"value read, {SAMPLES} flushes: {read}()" in str(autobatch.stats())
    assert total.item() == pytest.approx(sum(layer(x).tanh().sum().item() for x in inputs))


def test_a_read_after_the_last_op_of_the_block_loses_nothing(layer, inputs):
    with autobatch.batch():
        total = minitorch.stack([layer(x).tanh().sum() for x in inputs]).sum()
        total.item()  # forced, but nothing is recorded after it
    stats = autobatch.stats()
    assert stats.forced_flushes == 1 and stats.lost == [], stats.explain()


def test_an_in_place_op_and_backward_inside_the_block_say_what_to_write(layer, inputs):
    with autobatch.batch():
        states = []
        for x in inputs:
            h = layer(x)
            h += 1.0  # <- in-place
            states.append(h.tanh())
        minitorch.stack(states).sum().backward()  # <- backward
        more = [layer(x) for x in inputs]
    lost = {record.cause + " " + record.what: record for record in autobatch.stats().lost}
    in_place = next(r for key, r in lost.items() if "in-place" in key)
    check_points_at(in_place, "in-place")
    assert in_place.count == SAMPLES and "out of place" in in_place.advice
    backward = next(r for key, r in lost.items() if "backward" in key)
    check_points_at(backward, "backward")
    assert backward.count == 1 and "after the block" in backward.advice
    assert len(more) == SAMPLES


def test_a_chain_carried_from_sample_to_sample_is_a_dependent_chain(layer, inputs):
    with autobatch.batch():
        h = minitorch.zeros(1, 4)
        for x in inputs:
            h = (h + layer(x)).tanh()  # <- chain
    record = the_record(DEPENDENT_CHAIN)
    check_points_at(record, "chain")
    # the Add and the Tanh of each sample but the first waited for the previous sample's
    assert record.count == 2 * (SAMPLES - 1) and record.what == "Add, Tanh"
    assert "stack(losses).sum()" in record.advice
    assert autobatch.stats().largest_batch == SAMPLES  # the layer batched, the chain did not


def test_a_chain_read_at_the_end_of_the_block_is_still_a_chain(layer, inputs):
    with autobatch.batch():
        h = minitorch.zeros(1, 4)
        for x in inputs:
            h = (h + layer(x)).tanh()  # <- chain read at the end
        h.sum().item()  # forces the flush, but nothing is recorded after it
    record = the_record(DEPENDENT_CHAIN)
    check_points_at(record, "chain read at the end")
    assert record.count == 2 * (SAMPLES - 1)


def test_a_chain_cut_by_reads_reports_the_reads_only(layer, inputs):
    with autobatch.batch():
        for x in inputs:
            h = layer(x).tanh().tanh()  # alone in its flush: a chain of Tanh, the read's doing
            h.sum().item()  # <- the read
    record = the_record(VALUE_READ)
    check_points_at(record, "the read")
    assert record.count == SAMPLES - 1  # nothing is recorded after the last read


class Cube(Function):
    """x ** 3, an op of the student's own: it has no batching rule."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return minitorch.Tensor._make(x._data**3)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


def test_an_op_without_a_batching_rule_runs_one_sample_at_a_time(layer, inputs):
    with autobatch.batch():
        cubes = [Cube.apply(layer(x)) for x in inputs]  # <- no rule
        total = minitorch.stack(cubes).sum()
    record = the_record(NO_RULE)
    check_points_at(record, "no rule")
    assert record.count == SAMPLES and record.what == "Cube: no batching rule"
    expected = sum(Cube.apply(layer(x)).sum().item() for x in inputs)
    assert total.item() == pytest.approx(expected)


def test_an_op_without_a_rule_run_once_on_the_whole_batch_loses_nothing(layer, inputs):
    with autobatch.batch():
        ys = [layer(x) for x in inputs]
        total = Cube.apply(minitorch.cat(ys)).sum()  # one call either way
    assert autobatch.stats().lost == [], autobatch.stats().explain()
    assert total.shape == ()


def test_arguments_a_rule_cannot_batch_are_reported_with_the_rules_reason():
    minitorch.manual_seed(2)
    xs = [minitorch.randn(3, 2, 4) for _ in range(3)]
    ys = [minitorch.randn(4, 5) for _ in range(3)]
    with autobatch.batch():
        out = [x @ y for x, y in zip(xs, ys)]  # <- matmul
    record = the_record(NO_RULE)
    check_points_at(record, "matmul")
    assert record.count == 3 and record.what.startswith("MatMul: per-sample operands")
    assert len(out) == 3


def test_shapes_that_differ_from_one_line_are_reported_with_the_calls_they_cost():
    minitorch.manual_seed(3)
    vectors = [minitorch.randn(n) for n in (3, 3, 5, 5, 7, 7)]
    with autobatch.batch():
        out = [v.tanh() for v in vectors]  # <- shapes
    record = the_record(SHAPES_DIFFER)
    check_points_at(record, "shapes")
    assert record.count == 2  # 3 calls where one length would need 1
    assert record.what == "Tanh with 3 signatures: [3]; [5]; [7]"
    assert "pad" in record.advice and "bucket" in record.advice
    assert len(out) == 6


def test_the_same_op_on_other_lines_or_other_parameters_is_not_a_shape_that_differs(layer):
    minitorch.manual_seed(4)
    other = minitorch.nn.Linear(4, 4)
    xs = [minitorch.randn(1, 4) for _ in range(4)]
    with autobatch.batch():
        small = [layer(x).tanh() for x in xs]  # Tanh on [1, 4] here ...
        large = [minitorch.cat([x, x], dim=1).tanh() for x in xs]  # ... on [1, 8] here
        mixed = [(layer if i % 2 else other)(x) for i, x in enumerate(xs)]  # two weights
    assert autobatch.stats().lost == [], autobatch.stats().explain()
    assert len(small) == len(large) == len(mixed) == 4


def test_each_cause_prints_its_count_line_and_advice(layer, inputs):
    with autobatch.batch():
        losses = []
        for x in inputs:
            losses.append(layer(x).sum())
            losses[-1].item()
        minitorch.stack(losses).sum()
    text = str(autobatch.stats())
    section = text[text.index("\n  lost batching") + 1 :]
    assert section.splitlines()[1].startswith("  - value read, 6 flushes: item()")
    assert f"at {os.path.basename(__file__)}:" in section and "losses[-1].item()" in section
    assert "instead: keep it a tensor and read it after the block" in section


def test_recording_walks_the_stack_once_per_signature_not_per_op(layer, inputs, monkeypatch):
    walks = []
    walk = explain.user_line
    monkeypatch.setattr(explain, "user_line", lambda: walks.append(1) or walk())
    with autobatch.batch():
        total = minitorch.stack([layer(x).tanh().sum() for x in inputs]).sum()
    stats = autobatch.stats()
    assert stats.ops_recorded >= 3 * SAMPLES
    assert len(walks) <= 5, f"{len(walks)} stack walks for {stats.ops_recorded} ops"
    assert total.shape == ()
