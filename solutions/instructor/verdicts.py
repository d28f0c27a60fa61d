"""Autograde in the grading process: run the notebook in a sandbox, then judge its observations.

`SandboxedAutograde` is the execute step of nbgrader's autograde (course/nbgrader_config.py). It
gets the submission with nbgrader's test cells restored and
1. moves each test cell's hidden block into a cell of its own right after it (`prepare`), so that
   the hidden test runs even when the visible tests above it fail, and its outputs are never shown;
2. runs that notebook in the sandbox (solutions/instructor/sandbox.py), or takes the result a
   parallel run already left in the cache for exactly this notebook;
3. copies each cell's outputs back, and gives every test cell the outputs that decide its score,
   written here from the parent's verdict (solutions/judging.py): an error for no points, a
   number for partial credit, nothing more for full marks. Whatever the student's code printed in
   a test cell is kept as text above it, errors of visible tests included: they help the student
   and decide nothing. nbgrader's SaveAutoGrades then records these scores.
A report per submission (time, memory peak, flags) goes next to nbgrader's log for `report`.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Float, Integer, Unicode

from solutions.grading import HiddenTest
from solutions.instructor.admission import unreadable_reason
from solutions.instructor.integrity import is_test_cell
from solutions.instructor.sandbox import Execution, Limits, kernel_bytes, run_submission
from solutions.judging import Verdict, verdict

HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS\n?", re.DOTALL)
HIDDEN_CALL = re.compile(r"^grade\.(\w+)\(", re.MULTILINE)
NOT_JUDGED = "test not judged"


@dataclass(frozen=True)
class Plan:
    """Where each cell of a notebook went in its prepared copy: `positions[i]` is the prepared
    index of cell i, and `probes[i]` that of the hidden test split off test cell i. Computed
    from the cells' roles, which admission and nbgrader's OverwriteCells took from the release;
    never read back from the prepared notebook, whose metadata a student could imitate."""

    positions: tuple[int, ...]
    probes: dict[int, int]


def plan(nb: NotebookNode) -> Plan:
    """The `Plan` of `prepare(nb)`."""
    positions, probes, where = [], {}, 0
    for index, cell in enumerate(nb.cells):
        positions.append(where)
        where += 1
        if is_test_cell(cell) and cell.cell_type == "code" and HIDDEN_BLOCK.search(cell.source):
            probes[index] = where
            where += 1
    return Plan(tuple(positions), probes)


def prepare(nb: NotebookNode) -> NotebookNode:
    """A copy of `nb` with each test cell's hidden block moved into its own cell after it
    (see `plan`), outputs cleared."""
    prepared = copy.deepcopy(nb)
    cells = []
    probes = plan(nb).probes
    for index, cell in enumerate(prepared.cells):
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
        if index in probes:
            hidden = HIDDEN_BLOCK.search(cell.source)
            cell.source = HIDDEN_BLOCK.sub("", cell.source)
            probe = nbformat.v4.new_code_cell(hidden.group(1))
            probe.id = f"hidden-test-{index}"  # the same notebook always has the same digest
            cells.append(probe)
    prepared.cells = cells
    return prepared


def digest(
    nb: NotebookNode,
    assignment: str,
    limits: Limits,
    sandboxed: bool,
    files: dict[str, bytes] | None = None,
) -> str:
    """The key of one execution's result: the prepared notebook, every file its sandbox holds
    (`files`, default `kernel_bytes(assignment)`: a changed grader or library runs it again),
    the limits and whether it was sandboxed."""
    key = hashlib.sha256(nbformat.writes(nb).encode("utf-8", "surrogatepass"))
    files = kernel_bytes(assignment) if files is None else files
    for relative, content in files.items():
        key.update(f"\0{relative}\0".encode() + content)
    key.update(repr((asdict(limits), sandboxed)).encode())
    return key.hexdigest()


def hidden_tests(assignment: str, source: str) -> list[HiddenTest] | None:
    """The hidden tests a test cell calls (`grade.<name>(...)` lines of its hidden block), or
    None when its verdict can only be read from the kernel: plain asserts, not calls."""
    block = HIDDEN_BLOCK.search(source)
    names = HIDDEN_CALL.findall(block.group(1)) if block else []
    if not names:
        return None
    grade = importlib.import_module(f"solutions.{assignment}.grade")
    tests = [getattr(grade, name, None) for name in names]
    return tests if all(isinstance(t, HiddenTest) for t in tests) else None


def read_observations(text: str) -> dict[str, list]:
    """{test name: [data of each observation]}, from the JSON lines the hidden tests appended."""
    found: dict[str, list] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict) or not isinstance(record.get("test"), str):
            continue
        if _depth(record) <= MAX_OBSERVATION_DEPTH:  # the judges recurse into what they compare
            found.setdefault(record["test"], []).append(record.get("data"))
    return found


MAX_OBSERVATION_DEPTH = 64  # far deeper than any grader's data; a deeper line is not read


def _depth(data: object) -> int:
    """How deeply lists and dicts nest in `data` (walked without recursion)."""
    deepest, todo = 0, [(data, 0)]
    while todo:
        value, depth = todo.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_OBSERVATION_DEPTH and isinstance(value, (list, dict)):
            children = value.values() if isinstance(value, dict) else value
            todo.extend((child, depth + 1) for child in children)
    return deepest


def _why_not_observed(outputs: list) -> str:
    for output in outputs:
        if output.get("output_type") == "error":
            return f"the hidden test stopped with {output.get('ename')}: {output.get('evalue')}"
    return "the hidden test did not run (the kernel died or the time budget ran out)"


def _kernel_verdict(outputs: list) -> Verdict:
    """The verdict of a hidden block of plain asserts, read from its cell's outputs."""
    for output in outputs:
        if output.get("output_type") == "error":
            return Verdict(True, None, f"{output.get('ename')}: {output.get('evalue')}")
    for output in outputs:
        if output.get("output_type") == "execute_result":
            try:
                return Verdict(False, float(output["data"]["text/plain"]))
            except (KeyError, ValueError):
                pass
    return Verdict(False)


def judge_cell(test: HiddenTest, observations: dict, probe_outputs: list) -> Verdict:
    """The verdict of one hidden test from what the sandbox observed."""
    data = observations.get(test.test, [])
    if len(data) > 1:
        return Verdict(True, None, f"{test.name}: the grader's observations were written "
                       f"{len(data)} times; the notebook must not write them itself.")  # fmt: skip
    if not data:
        return Verdict(True, None, f"{test.name}: {_why_not_observed(probe_outputs)}")
    return verdict(test, data[0])


def verdict_outputs(verdicts: list[Verdict], points: float) -> list[NotebookNode]:
    """The outputs that make nbgrader record the verdicts of one test cell worth `points`."""
    failed = [v for v in verdicts if v.failed]
    notes = [v.message for v in verdicts if not v.failed and v.message]
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=n + "\n") for n in notes]
    if failed:
        message = "\n".join(v.message for v in failed)
        outputs.append(
            nbformat.v4.new_output(
                "error", ename="AssertionError", evalue=message,
                traceback=[f"AssertionError: {line}" for line in message.splitlines()],
            )
        )  # fmt: skip
        return outputs
    partial = [v.points for v in verdicts if v.points is not None]
    if partial:
        share = sum(partial) if len(verdicts) == 1 else min(points, sum(partial))
        outputs.append(
            nbformat.v4.new_output(
                "execute_result", data={"text/plain": repr(round(float(share), 2))},
                execution_count=None,
            )
        )  # fmt: skip
    return outputs


def merged_streams(outputs: list[NotebookNode]) -> list[NotebookNode]:
    """`outputs` with each run of consecutive stream outputs of one stream joined into one.
    The kernel sends what a cell prints in chunks, cut wherever its periodic flush falls (so
    differently on a busy machine); joined, the same run gives the same feedback."""
    merged: list[NotebookNode] = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] = previous.get("text", "") + output.get("text", "")
        else:
            merged.append(output)
    return merged


def _as_text(outputs: list) -> list[NotebookNode]:
    """A test cell's own outputs as plain text: a failing visible test is shown, not scored."""
    kept = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            kept.append(
                nbformat.v4.new_output("stream", name="stdout", text=output.get("text", ""))
            )
        elif kind == "error":
            text = f"Visible test: {output.get('ename')}: {output.get('evalue')}\n"
            kept.append(nbformat.v4.new_output("stream", name="stdout", text=text))
        elif kind in ("display_data", "execute_result") and "text/plain" in output.get("data", {}):
            text = output["data"]["text/plain"]
            kept.append(nbformat.v4.new_output("stream", name="stdout", text=f"{text}\n"))
    return kept


class SandboxedAutograde(NbGraderPreprocessor):
    """nbgrader's execute step for autograde, sandboxed, with verdicts decided here."""

    sandbox = Bool(True, help="Run each submission in bubblewrap (False: --no-sandbox).").tag(
        config=True
    )
    cache_dir = Unicode("", help="Executions left by a parallel run, by `digest`.").tag(config=True)
    report_dir = Unicode("", help="Where each submission's sandbox report is written.").tag(
        config=True
    )
    wall_seconds = Float(Limits.wall_seconds, help="Budget of one submission.").tag(config=True)
    cell_seconds = Integer(Limits.cell_seconds, help="Budget of one cell.").tag(config=True)
    memory_bytes = Integer(Limits.memory_bytes, help="Memory of one submission.").tag(config=True)

    def limits(self) -> Limits:
        return Limits(
            wall_seconds=self.wall_seconds,
            cell_seconds=self.cell_seconds,
            memory_bytes=self.memory_bytes,
        )

    def execute(self, prepared: NotebookNode, assignment: str) -> Execution:
        """The sandbox's result for `prepared`, from the cache when a parallel run left it."""
        if unreadable_reason(prepared):  # nothing of the student's to run: every test scores 0
            return Execution(finished=True)
        key = digest(prepared, assignment, self.limits(), self.sandbox)
        cached = Path(self.cache_dir) / f"{key}.json" if self.cache_dir else None
        if cached is not None and cached.is_file():
            return Execution(**json.loads(cached.read_text()))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "notebook.ipynb"
            nbformat.write(prepared, path)
            execution = run_submission(path, assignment, self.limits(), sandboxed=self.sandbox)
        if execution.grader_error:  # never a grade (NOTE [Grader errors] in sandbox.py)
            raise RuntimeError(f"grader error in the sandbox: {execution.grader_error}")
        return execution

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources["nbgrader"]
        where = plan(nb)
        execution = self.execute(prepare(nb), info["assignment"])
        outputs = {int(k): v for k, v in execution.outputs.items()}
        observations = read_observations(execution.observations)
        judged = set()
        count = 0
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            count += 1
            cell.execution_count = count
            own = outputs.get(where.positions[index], [])
            cell.outputs = merged_streams([nbformat.from_dict(o) for o in own])
            if index not in where.probes:
                continue
            probe_outputs = outputs.get(where.probes[index], [])
            tests = hidden_tests(info["assignment"], cell.source)
            if tests is None:
                verdicts = [_kernel_verdict(probe_outputs)]
            else:
                verdicts = [judge_cell(t, observations, probe_outputs) for t in tests]
            points = float(cell.metadata["nbgrader"].get("points", 0))
            cell.outputs = _as_text(cell.outputs) + verdict_outputs(verdicts, points)
            judged.add(cell.metadata["nbgrader"]["grade_id"])
        unjudged = self._score_unjudged(nb, judged, info)
        if unjudged:
            execution.flags.append(f"{NOT_JUDGED} ({', '.join(unjudged)})")
        self._report(resources, execution)
        return nb, resources

    @staticmethod
    def _score_unjudged(nb: NotebookNode, judged: set[str], info: dict) -> list[str]:
        """Give 0 to every test cell the gradebook knows that got no verdict here; return
        their grade_ids. (After admission and OverwriteCells every test cell is in `nb` with
        its hidden test, so this only happens when something else went wrong.)"""
        with Gradebook(info["db_url"]) as gradebook:
            known = gradebook.find_notebook(info["notebook"], info["assignment"])
            answers = {cell.name for cell in known.solution_cells}
            tests = [cell.name for cell in known.grade_cells if cell.name not in answers]
        unjudged = [grade_id for grade_id in tests if grade_id not in judged]
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") in unjudged:
                message = "this test was not judged by the grader, so it scores 0"
                cell.outputs = [
                    nbformat.v4.new_output(
                        "error", ename="NotJudged", evalue=message, traceback=[message]
                    )
                ]
        return unjudged

    def _report(self, resources: dict, execution: Execution) -> None:
        if not self.report_dir:
            return
        info = resources["nbgrader"]
        report = {key: value for key, value in asdict(execution).items() if key != "outputs"}
        report.pop("observations")
        report["sandboxed"] = self.sandbox
        folder = Path(self.report_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{info['student']}.{info['notebook']}.json").write_text(json.dumps(report))
