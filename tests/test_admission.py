"""Admission (solutions/instructor/admission.py): a submitted file becomes the notebook to grade,
with its structure from the course's release and only the cells' kind and source from the
student. And the verdicts' plan (solutions/instructor/verdicts.py) is computed, never read back.

No kernel runs here: these are the grading process's own steps on real release notebooks.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest
from course_support import NOTEBOOK_1, cell_by_id, grade_cell_ids, reference_answers, with_answers

from solutions.instructor import admission
from solutions.instructor.admission import Unusable, admit_file, clean
from solutions.instructor.integrity import is_test_cell, uses_grading_code
from solutions.instructor.verdicts import plan, prepare, read_observations


@pytest.fixture(scope="module")
def release(released_course: Path) -> nbformat.NotebookNode:
    path = released_course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    return nbformat.read(path, as_version=4)


def _bytes(nb: nbformat.NotebookNode | dict) -> bytes:
    return json.dumps(nb).encode()


def _forged(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The attack of issue 30: the blank release plus markdown cells whose metadata imitates
    the grading process's own (a hidden test's cell), one before every test cell."""
    nb = copy.deepcopy(release)
    for index in reversed([i for i, c in enumerate(nb.cells) if is_test_cell(c)]):
        fake = nbformat.v4.new_markdown_cell("nothing to see")
        fake.metadata["course"] = {"hidden_test_of": index}
        fake.metadata["nbgrader"] = {"grade": True, "grade_id": "made_up", "points": 25}
        nb.cells.insert(index, fake)
    return nb


def test_forged_grading_metadata_is_dropped(release):
    nb = clean(_bytes(_forged(release)), release)
    assert all("course" not in cell.metadata for cell in nb.cells)
    roles = [cell.metadata["nbgrader"]["grade_id"] for cell in nb.cells if cell.metadata]
    expected = [
        c.metadata["nbgrader"]["grade_id"] for c in release.cells if c.metadata.get("nbgrader")
    ]
    assert roles == expected, "only the release's roles, each once, in the student's order"


def test_the_plan_is_computed_from_the_cells_not_their_metadata(release, released_course):
    nb = clean(_bytes(_forged(release)), release)
    source = nbformat.read(
        released_course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4
    )
    for grade_id in grade_cell_ids(nb):  # what nbgrader's OverwriteCells restores
        cell_by_id(nb, grade_id).source = cell_by_id(source, grade_id).source
    where, prepared = plan(nb), prepare(nb)
    tests = [i for i, c in enumerate(nb.cells) if is_test_cell(c)]
    assert len(where.positions) == len(nb.cells) and sorted(where.probes) == tests
    assert len(prepared.cells) == len(nb.cells) + len(tests)
    for index in tests:  # each probe holds exactly its test cell's hidden block
        probe = prepared.cells[where.probes[index]].source
        assert "\ngrade." in probe and "HIDDEN" not in probe, probe
        assert "grade." not in prepared.cells[where.positions[index]].source


def test_a_copied_test_cell_and_a_student_cell_claiming_a_role_are_plain_cells(release):
    nb = copy.deepcopy(release)
    first_test = grade_cell_ids(nb)[0]
    copied = copy.deepcopy(cell_by_id(nb, first_test))
    copied.id = "copy"
    claims = nbformat.v4.new_code_cell("print('mine')")
    claims.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True,
                                   "grade_id": "extra_points", "points": 100}  # fmt: skip
    nb.cells += [copied, claims]
    admitted = clean(_bytes(nb), release)
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in admitted.cells[-2:]] == [
        None, None,
    ]  # fmt: skip
    assert sum(is_test_cell(c) for c in admitted.cells) == len(grade_cell_ids(release))


def test_a_test_cell_turned_into_markdown_loses_its_role(release):
    nb = copy.deepcopy(release)
    test = cell_by_id(nb, grade_cell_ids(nb)[0])
    test.cell_type = "markdown"
    del test["outputs"], test["execution_count"]
    admitted = clean(_bytes(nb), release)
    assert grade_cell_ids(admitted) == grade_cell_ids(release)[1:]


def test_notebook_metadata_comes_from_the_release(release, tmp_path):
    nb = json.loads(nbformat.writes(release))
    nb["metadata"] = {"kernelspec": "python3", "widgets": {"<script>": 1}, "title": "<b>x</b>"}
    path = tmp_path / "n.ipynb"
    path.write_bytes(_bytes(nb))
    admitted = admit_file(path, release)
    assert admitted.nb.metadata == release.metadata
    assert admitted.flags == [admission.KERNELSPEC_CHANGED]


def test_a_lone_surrogate_becomes_a_replacement_character(release):
    nb = json.loads(nbformat.writes(release))
    nb["cells"][0]["source"] = "a lone half \ud800 of a pair"
    text = json.dumps(nb)  # valid JSON: "\\ud800"
    admitted = clean(text.encode(), release)
    assert admitted.cells[0].source == "a lone half \ufffd of a pair"
    nbformat.writes(admitted).encode()  # the result key can encode it


def test_missing_cell_ids_become_the_same_ids_every_time(release):
    nb = json.loads(nbformat.writes(release))
    for cell in nb["cells"]:
        cell.pop("id", None)
    nb["nbformat_minor"] = 4  # ids came with 4.5
    once, again = clean(_bytes(nb), release), clean(_bytes(nb), release)
    assert nbformat.writes(once) == nbformat.writes(again)
    assert [c.id for c in once.cells] == [f"cell-{i}" for i in range(len(once.cells))]


def test_outputs_and_attachments_are_dropped(release):
    nb = json.loads(nbformat.writes(release))
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "display_data", "metadata": {},
                        "data": {"text/html": "<script>alert(1)</script>"}}]  # fmt: skip
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    markdown["attachments"] = {"x.png": {"image/png": "AAAA"}}
    admitted = clean(_bytes(nb), release)
    assert all(not c.get("outputs") for c in admitted.cells if c.cell_type == "code")
    assert all("attachments" not in c for c in admitted.cells)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"{", "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b'{"nbformat": 3, "worksheets": []}', "not a version 4 notebook"),
        (b'{"nbformat": 4, "cells": {"0": 1}}', "cells are not a list"),
        (b'{"nbformat": 4, "cells": [{"cell_type": "widget", "source": ""}]}', "code, markdown"),
        (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}', "int, not text"),
        (b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a", 1]}]}', "not text"),
    ],
)
def test_what_is_not_a_notebook_is_refused_with_the_reason(release, data, why):
    with pytest.raises(Unusable, match=why):
        clean(data, release)


def test_bounds_on_size_cells_and_cell_length(release, tmp_path):
    path = tmp_path / "big.ipynb"
    path.write_bytes(b" " * (admission.MAX_NOTEBOOK_BYTES + 1))
    assert admit_file(path, release).flags == [f"{admission.UNREADABLE}: larger than 16 MiB"]
    cells = [{"cell_type": "raw", "source": ""}] * (admission.MAX_CELLS + 1)
    with pytest.raises(Unusable, match="cells"):
        clean(_bytes({"nbformat": 4, "cells": cells}), release)
    huge = [{"cell_type": "code", "source": "x" * (admission.MAX_CELL_CHARS + 1)}]
    with pytest.raises(Unusable, match="characters"):
        clean(_bytes({"nbformat": 4, "cells": huge}), release)


def test_an_unreadable_file_is_graded_as_the_release_with_a_note(release, tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_bytes(b'{"nbformat": 4, "cells": 5}')
    admitted = admit_file(path, release)
    assert admitted.flags == [f"{admission.UNREADABLE}: its cells are not a list"]
    assert admission.unreadable_reason(admitted.nb).endswith("its cells are not a list")
    assert "Not graded" in admitted.nb.cells[0].source
    assert grade_cell_ids(admitted.nb) == grade_cell_ids(release)


def test_the_reference_is_admitted_unchanged_and_unflagged(release, released_course, tmp_path):
    source = nbformat.read(
        released_course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4
    )
    honest = with_answers(release, reference_answers(source))
    path = tmp_path / "honest.ipynb"
    nbformat.write(honest, path)
    admitted = admit_file(path, release)
    assert admitted.flags == []
    assert [c.source for c in admitted.nb.cells] == [c.source for c in honest.cells]


def test_the_grading_code_check_survives_what_the_parser_cannot_parse():
    assert uses_grading_code("x = " + "-" * 200_000 + "1\nimport solutions") is True
    assert uses_grading_code("x = " + "(" * 10_000 + ")" * 10_000) is False
    assert uses_grading_code("a = 1\0") is False


def test_a_timestamp_that_is_not_a_time_is_dropped_and_flagged(tmp_path):
    (tmp_path / "timestamp.txt").write_text("next Tuesday\x1b[2J")
    assert admission.nbgrader_file_flags(tmp_path) == [admission.TIMESTAMP_UNREADABLE]
    assert admission.nbgrader_files(tmp_path) == {}
    (tmp_path / "timestamp.txt").write_text("2026-11-28 08:00:00.000000 UTC")
    assert admission.nbgrader_file_flags(tmp_path) == []
    assert admission.nbgrader_files(tmp_path) == {"timestamp.txt": "2026-11-28 08:00:00.000000 UTC"}


def test_observations_nested_too_deep_for_the_judges_are_not_read():
    """A kernel writes what it likes into its observations: a line too deep for json's reader
    or for the judges' recursive comparison is skipped (that test was not observed: 0)."""
    deep = '{"test": "a", "data": ' + "[" * 100_000 + "]" * 100_000 + "}"
    nested = '{"test": "b", "data": ' + "[" * 80 + "]" * 80 + "}"
    shallow = '{"test": "c", "data": [[1, 2], {"x": [3]}]}'
    assert read_observations("\n".join([deep, nested, shallow])) == {"c": [[[1, 2], {"x": [3]}]]}
