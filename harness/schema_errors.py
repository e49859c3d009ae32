"""One JSON Schema error as one line: which field (as a path, ``messages[3].delay``), what the
schema expected there, and what the file holds instead.

Generic over schemas: it reads only the failing keyword, its value and the subschema that holds it,
so any schema validated with ``jsonschema`` gets the same wording as the scenario schema.
"""

from __future__ import annotations

from typing import Any, Iterable

from jsonschema.exceptions import ValidationError

_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string", "array": "a list",
               "object": "an object", "boolean": "true or false", "null": "null"}


def field_path(parts: Iterable[str | int]) -> str | None:
    """``["messages", 3, "delay"]`` → ``"messages[3].delay"``; the document itself → ``None``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or None


def join_path(base: str | None, *parts: str | int) -> str:
    return field_path(([base] if base else []) + list(parts))  # type: ignore[return-value]


class Found:
    """A found value whose ``repr`` stays short enough for a one-line message."""

    def __init__(self, value: Any, limit: int = 80):
        self.value, self.limit = value, limit

    def __repr__(self) -> str:
        text = repr(self.value)
        return text if len(text) <= self.limit else text[: self.limit - 3] + "..."

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, Found) else other)

    __hash__ = None  # type: ignore[assignment]


def type_words(schema: dict) -> str:
    kinds = schema.get("type")
    if kinds is None:
        return "a value"
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return " or ".join(_TYPE_WORDS.get(k, k) for k in kinds)


def _bound(schema: dict, keyword: str, value: Any) -> str:
    what = type_words(schema)
    return {
        "minimum": f"{what} >= {value}",
        "maximum": f"{what} <= {value}",
        "exclusiveMinimum": f"{what} > {value}",
        "exclusiveMaximum": f"{what} < {value}",
    }[keyword]


def explain(error: ValidationError) -> tuple[str | None, str, Any]:
    """``(field path, expected, found)`` for one error of ``jsonschema``."""
    path = list(error.absolute_path)
    kw, val, schema, inst = error.validator, error.validator_value, error.schema, error.instance
    if kw == "additionalProperties" and isinstance(inst, dict):
        allowed = list(schema.get("properties", {}))
        extra = next(k for k in inst if k not in allowed)
        return field_path(path + [extra]), f"no such field (allowed: {', '.join(allowed)})", Found(inst[extra])
    if kw == "required" and isinstance(inst, dict):
        missing = next(k for k in val if k not in inst)
        sub = schema.get("properties", {}).get(missing, {})
        return field_path(path + [missing]), f"{type_words(sub)} (required)", "missing"
    if kw == "type":
        expected = type_words(schema)
    elif kw == "enum":
        expected = "one of " + "/".join(str(v) for v in val)
    elif kw == "const":
        expected = repr(val)
    elif kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        expected = _bound(schema, kw, val)
    elif kw == "minLength":
        expected = "a non-empty string" if val == 1 else f"a string of at least {val} characters"
    elif kw == "maxLength":
        expected = f"a string of at most {val} characters"
    elif kw == "pattern":
        expected = f"a string matching {val}"
    elif kw == "minItems":
        expected = "a non-empty list" if val == 1 else f"a list of at least {val} items"
    elif kw == "uniqueItems":
        expected = "a list without repeated items"
    else:
        expected = error.message
    return field_path(path), expected, Found(inst)
