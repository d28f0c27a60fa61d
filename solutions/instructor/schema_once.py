"""nbgrader's cell-metadata check, without checking the schema again for every cell.

nbgrader validates the `nbgrader` metadata of every graded cell with `jsonschema.validate(metadata,
schema)`, and `jsonschema.validate` first validates the schema itself against JSON Schema's
meta-schema, on every call. For one student that was about 700 schema checks and a quarter of
the time nbgrader's autograde took in the grading process, the one process that records every
student while the sandboxes run. `validate` checks each distinct schema once and then validates
exactly as `jsonschema.validate` does (the same validator class, the same `best_match` error).
`use_in_nbgrader()` makes nbgrader's metadata validators call it; `course.open_course` does.
"""

from __future__ import annotations

import functools
import json
from types import SimpleNamespace
from typing import Any

import jsonschema
from nbgrader.nbgraderformat import common


@functools.lru_cache(maxsize=16)
def _validator(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)  # jsonschema.SchemaError for a broken schema, as jsonschema.validate
    return cls(schema)


def validate(instance: Any, schema: dict) -> None:
    """Raise what `jsonschema.validate(instance, schema)` raises; check `schema` only once."""
    validator = _validator(json.dumps(schema))
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error


def use_in_nbgrader() -> None:
    """Point nbgrader.nbgraderformat.common's `jsonschema.validate`, its only use of jsonschema,
    at `validate`."""
    common.jsonschema = SimpleNamespace(validate=validate)
