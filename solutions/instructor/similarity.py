"""Pairs of students whose answers look copied: `python -m solutions similarity ASSIGNMENT`.

In the spirit of MOSS, for the answer (solution) cells of every submission:

1. **Normalize** a cell on its Python syntax tree: docstrings, comments and layout go; the names
   the cell binds (variables, parameters, its functions and classes) become v0, v1, ... in order
   of first appearance, while attributes, builtins and outside names (torch, minitorch, math,
   `collect_nodes`) stay; string and number constants stay. Consecutive statements with no
   data dependency between them are put in a canonical order first, so swapping two of them
   changes nothing. A cell that is not valid Python is normalized token by token instead.
2. **Fingerprint** a cell: the set of its k-grams (K normalized tokens in a row), taken twice:
   with the names numbered, and with every renamed name written "v" (so that a dummy variable,
   which shifts the numbering of every later name, does not hide a copy). The k-grams of the
   reference answer and of the blank release stub are removed: what every student received,
   or may hand in without copying anyone, makes nobody alike; a blank cell or the reference
   answer has an empty fingerprint and matches no one.
3. **Score** a pair of students: per cell, the Jaccard index of their fingerprints; overall, the
   same over all cells together (k-grams in common / k-grams of either), so larger answers
   weigh more. A pair is flagged when its score reaches the threshold and it has at least
   MIN_SHARED k-grams in common (about five lines of identical code of their own): two students
   whose only own code is the same short loop are not flagged.

The report flags and never deducts: nothing here touches the gradebook. It cannot see copying
that was rewritten by hand (a loop turned into a comprehension), and one copied exercise in an
otherwise honest notebook weighs little in the pair's score (its cell score shows it).
"""

from __future__ import annotations

import ast
import builtins
import copy
import html
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearSolutions

from solutions.instructor.course import Course
from solutions.reference_cells import NOTEBOOKS, reference_cells

K = 5  # tokens per k-gram
DEFAULT_THRESHOLD = 0.8
MIN_SHARED = 100  # k-grams in common, outside the reference, before a pair can be flagged

_BUILTINS = frozenset(dir(builtins))
_RENAMED = re.compile(r"v\d+")
# Where a node of each kind keeps a name the cell may bind.
_NAME_SLOTS = {
    ast.Name: "id",
    ast.arg: "arg",
    ast.FunctionDef: "name",
    ast.AsyncFunctionDef: "name",
    ast.ClassDef: "name",
    ast.ExceptHandler: "name",
}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Await,
          ast.Global, ast.Nonlocal)  # fmt: skip
_LAYOUT = {tokenize.NEWLINE: "<newline>", tokenize.INDENT: "<indent>", tokenize.DEDENT: "<dedent>"}
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


# --- normalization ----------------------------------------------------------------------------
def normalize(source: str) -> list[str]:
    """The normalized tokens of a code cell (see the module docstring); never raises.

    Layout tokens read "<newline>", "<indent>" and "<dedent>". IPython magics and shell escapes
    (lines starting with % or !) are dropped.
    """
    code = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )
    try:
        tree = ast.parse(code)
        _drop_docstrings(tree)
        _Canonicalizer(_bound_names(tree)).visit(tree)
        return [_text(token) for token in _tokens(ast.unparse(tree))]
    except (SyntaxError, ValueError, RecursionError):
        return _normalize_tokens(code)


def _normalize_tokens(code: str) -> list[str]:
    """Token-level fallback: comments dropped, every name that is not a keyword, a builtin or
    an attribute renamed v0, v1, ... in order of first appearance."""
    names: dict[str, str] = {}
    normalized, previous = [], ""
    for token in _tokens(code):
        text = _text(token)
        is_name = token.type == tokenize.NAME and not keyword.iskeyword(text)
        if is_name and text not in _BUILTINS and previous != ".":
            text = names.setdefault(text, f"v{len(names)}")
        normalized.append(text)
        previous = token.string
    return normalized


def _tokens(code: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of `code` without comments and blank lines, up to the first unreadable one."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type not in _SKIPPED:
                yield token
    except (tokenize.TokenError, SyntaxError):
        return


def _text(token: tokenize.TokenInfo) -> str:
    return _LAYOUT.get(token.type, token.string)


def _drop_docstrings(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, *_DEFINITIONS)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    node.body = node.body[1:]


def _bound_names(tree: ast.Module) -> set[str]:
    """The names the cell binds (assigned, parameters, its functions and classes, exception
    names), except imported names and builtins: these are the names that get renamed."""
    bound, imported = set(), set()
    for node in ast.walk(tree):
        slot = _NAME_SLOTS.get(type(node))
        if slot and getattr(node, slot) and not isinstance(getattr(node, "ctx", None), ast.Load):
            bound.add(getattr(node, slot))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return bound - imported - _BUILTINS


class _Canonicalizer:
    """Renames the bound names v0, v1, ... in order of first appearance, walking the tree in
    field order; each block of statements is put in canonical order before it is walked."""

    def __init__(self, renamable: set[str]) -> None:
        self.renamable = renamable
        self.names: dict[str, str] = {}

    def visit(self, node: ast.AST) -> None:
        slot = _NAME_SLOTS.get(type(node))
        if slot and getattr(node, slot) in self.renamable:
            name = getattr(node, slot)
            setattr(node, slot, self.names.setdefault(name, f"v{len(self.names)}"))
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and len(value) > 1 and isinstance(value[0], ast.stmt):
                value = _canonical_order(value, self.key)
                setattr(node, name, value)
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self.visit(child)

    def key(self, statement: ast.stmt) -> str:
        """The statement's text with names already renamed shown renamed, other bound names as
        "_": the same for a statement and its renamed copy, whatever order they came in."""
        shown = copy.deepcopy(statement)
        for node in ast.walk(shown):
            slot = _NAME_SLOTS.get(type(node))
            name = getattr(node, slot) if slot else None
            if name in self.renamable:
                setattr(node, slot, self.names.get(name, "_"))
        return ast.unparse(shown)


@dataclass
class _Effects:
    binds: set[str]
    reads: set[str]
    jumps: bool  # returns, raises, breaks, ...: keeps its place among its neighbours

    def conflicts(self, other: _Effects) -> bool:
        return (
            self.jumps
            or other.jumps
            or bool(self.binds & (other.binds | other.reads))
            or bool(other.binds & self.reads)
        )


def _effects(statement: ast.stmt) -> _Effects:
    """What a statement binds and reads, by name (nested functions and classes: their name)."""
    if isinstance(statement, _DEFINITIONS):
        return _Effects({statement.name}, set(), False)
    effects = _Effects(set(), set(), False)
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFINITIONS):
            effects.binds.add(node.name)
            continue
        effects.jumps |= isinstance(node, _JUMPS)
        if isinstance(node, ast.Name):
            (effects.reads if isinstance(node.ctx, ast.Load) else effects.binds).add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            effects.reads.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            effects.binds.update((a.asname or a.name).split(".")[0] for a in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return effects


def _canonical_order(statements: list[ast.stmt], key: Callable[[ast.stmt], str]) -> list[ast.stmt]:
    """The statements in canonical order: a statement comes after every earlier one it
    conflicts with (see _Effects); among those free to go next, the smallest `key` goes first."""
    effects = [_effects(statement) for statement in statements]
    keys = [key(statement) for statement in statements]
    after = [
        {i for i in range(j) if effects[i].conflicts(effects[j])} for j in range(len(statements))
    ]
    placed: list[int] = []
    while len(placed) < len(statements):
        free = [j for j in range(len(statements)) if j not in placed and after[j] <= set(placed)]
        placed.append(min(free, key=lambda j: (keys[j], j)))
    return [statements[j] for j in placed]


# --- fingerprints and scores ------------------------------------------------------------------
def kgrams(tokens: list[str], k: int = K) -> set[tuple[str, ...]]:
    """Every run of `k` consecutive tokens (the whole list when it is shorter but not empty)."""
    if len(tokens) < k:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + k]) for i in range(len(tokens) - k + 1)}


def fingerprint(source: str) -> set[tuple[str, ...]]:
    """The k-grams of a normalized cell, with names numbered and with renamed names as "v"."""
    tokens = normalize(source)
    return kgrams(tokens) | kgrams(["v" if _RENAMED.fullmatch(t) else t for t in tokens])


@dataclass
class Pair:
    """Two students and how alike their answers are (0: nothing in common, 1: the same)."""

    first: str
    second: str
    score: float
    shared: int  # k-grams in common outside the reference
    # grade_id -> score of the cells where either student wrote something of their own
    cells: dict[str, float] = field(default_factory=dict)


def compare(answers: dict[str, dict[str, str]], given: dict[str, list[str]]) -> list[Pair]:
    """Score every pair of students, strongest first.

    `answers` maps student -> grade_id -> source of each answer cell; `given` maps grade_id ->
    the sources anyone may hand in without copying (the reference answer, the blank stub),
    whose k-grams are ignored.
    """
    ignored = {
        grade_id: set().union(*(fingerprint(source) for source in sources))
        for grade_id, sources in given.items()
    }
    prints = {
        student: {
            grade_id: fingerprint(source) - ignored.get(grade_id, set())
            for grade_id, source in cells.items()
        }
        for student, cells in answers.items()
    }
    pairs = []
    for first, second in combinations(sorted(prints), 2):
        pair, common, either = Pair(first, second, 0.0, 0), 0, 0
        for grade_id in {**prints[first], **prints[second]}:  # in notebook order
            a, b = prints[first].get(grade_id, set()), prints[second].get(grade_id, set())
            if a or b:
                pair.cells[grade_id] = len(a & b) / len(a | b)
                common, either = common + len(a & b), either + len(a | b)
        pair.score, pair.shared = (common / either if either else 0.0), common
        pairs.append(pair)
    return sorted(pairs, key=lambda pair: -pair.score)


def flagged(pairs: list[Pair], threshold: float = DEFAULT_THRESHOLD) -> list[Pair]:
    """The pairs that reach `threshold` with at least MIN_SHARED k-grams in common."""
    return [pair for pair in pairs if pair.score >= threshold and pair.shared >= MIN_SHARED]


# --- the course -------------------------------------------------------------------------------
def _is_answer(cell: NotebookNode) -> bool:
    role = cell.get("metadata", {}).get("nbgrader", {})
    return bool(role.get("solution") and role.get("grade_id"))


def read_answers(course: Course, assignment: str) -> dict[str, dict[str, str]]:
    """student -> grade_id -> source of every answer cell of `assignment`, from each student's
    submitted notebook, or the autograded one when there is no submitted copy. A missing or
    unreadable notebook gives no cells (the grading report flags it)."""
    autograded = course.root / course.coursedir.autograded_directory
    students = set(course.students(assignment))
    if autograded.is_dir():
        students |= {p.name for p in autograded.iterdir() if (p / assignment).is_dir()}
    answers: dict[str, dict[str, str]] = {}
    for student in sorted(students):
        answers[student] = {}
        for notebook in course.notebooks(assignment):
            copies = [
                course.folder(step, assignment, student) / f"{notebook}.ipynb"
                for step in ("submitted", "autograded")
            ]
            try:
                path = next(path for path in copies if path.is_file())
                cells = nbformat.read(path, as_version=4).cells
            except Exception:  # missing or unreadable
                continue
            for cell in filter(_is_answer, cells):
                answers[student][cell.metadata["nbgrader"]["grade_id"]] = cell.source
    return answers


def given_sources(course: Course, assignment: str) -> dict[str, list[str]]:
    """grade_id -> what anyone may hand in without copying: the reference answer (from
    course/notebooks/<assignment>.py and from the source notebook) and the blank release stub."""
    given: dict[str, list[str]] = {}
    cells = []
    for notebook in course.notebooks(assignment):
        path = course.folder("source", assignment) / f"{notebook}.ipynb"
        cells += filter(_is_answer, nbformat.read(path, as_version=4).cells)
    if (NOTEBOOKS / f"{assignment}.py").is_file():
        for reference in reference_cells(assignment):
            cell = nbformat.v4.new_code_cell(reference.source)
            cell.metadata["nbgrader"] = {"solution": True, "grade_id": reference.grade_id}
            cells.append(cell)
    for cell in cells:
        stub = nbformat.v4.new_notebook(cells=[copy.deepcopy(cell)])
        stub.metadata["kernelspec"] = {"language": "python", "name": "python3"}
        ClearSolutions(config=course.config).preprocess(stub, {})
        sources = given.setdefault(cell.metadata["nbgrader"]["grade_id"], [])
        sources += [cell.source, stub.cells[0].source]
    return given


def format_table(pairs: list[Pair], threshold: float, students: int) -> str:
    """The flagged pairs as an aligned text table, with each pair's cells, most alike first."""
    if not pairs:
        return f"no pair of the {students} students reaches similarity {threshold:g}"
    header = ("first", "second", "score", "cells (score)")
    lines = [
        (
            pair.first,
            pair.second,
            f"{pair.score:.2f}",
            ", ".join(
                f"{grade_id} {score:.2f}"
                for grade_id, score in sorted(pair.cells.items(), key=lambda c: -c[1])
                if score > 0
            ),
        )
        for pair in pairs
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(3)]
    return "\n".join(
        "  ".join([*(text.ljust(width) for text, width in zip(line, widths)), line[3]])
        for line in [header, *lines]
    )


_STYLE = """body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
td, th { border: 1px solid #ccc; padding: 0.4em; vertical-align: top; text-align: left; }
pre { margin: 0; white-space: pre-wrap; font-size: 0.85em; }"""


def write_html(
    pairs: list[Pair],
    answers: dict[str, dict[str, str]],
    assignment: str,
    threshold: float,
    destination: Path,
) -> Path:
    """An HTML page showing, for each pair, the cells they have in common side by side."""
    title = html.escape(f"Similar answers in {assignment} (threshold {threshold:g})")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
             f"<style>{_STYLE}</style></head><body><h1>{title}</h1>",
             "<p>Flags for a person to read, not a verdict: answers that match after renaming "
             "and reordering, ignoring the reference answer and the blank stub.</p>"]  # fmt: skip
    if not pairs:
        parts.append(f"<p>No pair of the {len(answers)} students reaches the threshold.</p>")
    for pair in pairs:
        first, second = html.escape(pair.first), html.escape(pair.second)
        parts.append(f"<h2>{first} and {second}: {pair.score:.2f}</h2>")
        parts.append(f"<table><tr><th>cell</th><th>{first}</th><th>{second}</th></tr>")
        for grade_id, score in pair.cells.items():
            if score > 0:
                left = html.escape(answers[pair.first].get(grade_id, ""))
                right = html.escape(answers[pair.second].get(grade_id, ""))
                parts.append(
                    f"<tr><td>{html.escape(grade_id)}<br>{score:.2f}</td>"
                    f"<td><pre>{left}</pre></td><td><pre>{right}</pre></td></tr>"
                )
        parts.append("</table>")
    parts.append("</body></html>")
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text("\n".join(parts))
    return destination


@dataclass
class Report:
    """What `similarity` found: the flagged pairs, every pair's scores and the HTML page."""

    flagged: list[Pair]
    pairs: list[Pair]
    answers: dict[str, dict[str, str]]
    html: Path


def similarity_report(
    course: Course, assignment: str, threshold: float = DEFAULT_THRESHOLD
) -> Report:
    """Compare every submission of `assignment` and write <course>/reports/<assignment>/
    similarity.html. Reads the submissions only: never changes a grade."""
    answers = read_answers(course, assignment)
    pairs = compare(answers, given_sources(course, assignment))
    found = flagged(pairs, threshold)
    page = course.root / "reports" / assignment / "similarity.html"
    return Report(found, pairs, answers, write_html(found, answers, assignment, threshold, page))
