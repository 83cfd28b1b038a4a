"""Validation problems in kbgen's words, whatever pydantic version is installed.

pydantic's error ``type`` codes are part of its API; its English messages are not, and change
between releases. kbgen reports what a field must be in its own words, keyed by the type.
"""

from __future__ import annotations

from typing import Any

from kbgen.models import BUG_ID_RE, REPORT_RE, SLUG_RE

#: what each of the models' string patterns asks for, so a mismatch names the form, not a regex
PATTERN_WORDS = {
    SLUG_RE: "a lowercase id of letters, digits and '-' (e.g. cuda-oom)",
    BUG_ID_RE: "a bug id of the form BUG-YYYYMMDD-NNN",
    REPORT_RE: "a report path of the form BUG-YYYYMMDD-NNN/env-NAME.json",
}

#: kbgen's words for pydantic's error types (its ``type`` codes are stable; its wording is not).
_TYPE_WORDS = {
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "dict_type": "must be a mapping of keys",
    "model_type": "must be a mapping of keys",
    "model_attributes_type": "must be a mapping of keys",
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "date_type": "must be a date (YYYY-MM-DD)",
    "date_parsing": "must be a date (YYYY-MM-DD)",
    "date_from_datetime_parsing": "must be a date (YYYY-MM-DD)",
    "datetime_type": "must be a date and time (YYYY-MM-DDTHH:MM:SS+00:00)",
    "datetime_parsing": "must be a date and time (YYYY-MM-DDTHH:MM:SS+00:00)",
    "datetime_from_date_parsing": "must be a date and time (YYYY-MM-DDTHH:MM:SS+00:00)",
    "timezone_aware": "needs a UTC offset (e.g. +00:00)",
    "none_required": "must be empty",
    "literal_error": "is not one of the allowed values",
}
_BOUND_WORDS = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "too_short": ("min_length", "must hold at least {} items"),
    "too_long": ("max_length", "must hold at most {} items"),
    "string_too_long": ("max_length", "must be at most {} characters long"),
}


def describe_error(err: Any) -> str:
    """One pydantic error in kbgen's words; an unknown type keeps pydantic's own message."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in _TYPE_WORDS:
        return _TYPE_WORDS[kind]
    if kind in _BOUND_WORDS:
        key, words = _BOUND_WORDS[kind]
        bound = ctx.get(key, "?")
        return words.format(int(bound) if isinstance(bound, float) and bound.is_integer() else bound)
    if kind == "string_too_short":
        size = ctx.get("min_length", 1)
        return "must not be empty" if size == 1 else f"must be at least {size} characters long"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        return f"must be {PATTERN_WORDS[pattern]}" if pattern in PATTERN_WORDS else f"must match {pattern}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    return str(err["msg"])
