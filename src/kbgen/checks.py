"""What decides a checklist step: ``manual``, or ``PROBE: CONDITION`` over that probe's facts.

A condition is a tiny expression, for example ``CUDA_LAUNCH_BLOCKING == "1"``,
``arch_ok == true``, ``status in ["fail", "crash"]`` or ``steps_passed >= 3 and not failed_step``.
Python's own parser (``ast``) reads it and a whitelist walks the tree: names are the probe's facts
(``status`` is the probe's result), literals are strings, numbers, ``true``/``false``/``null``
and lists of those; operators are comparisons, ``and``, ``or`` and ``not``. Nothing is evaluated
as code.

Logic has three values. A fact the probe did not report makes a comparison *unknown* (None), and
an unknown condition never changes a step: kbgen does not tick what it did not see.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MANUAL = "manual"
STATUS = "status"
_CONSTANTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_MISSING = object()


class CheckSyntaxError(ValueError):
    """A condition kbgen cannot read; the message says what is wrong."""


@dataclass(frozen=True)
class Check:
    """A parsed ``PROBE: CONDITION``."""

    probe: str
    condition: str
    tree: ast.expr = field(compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.probe}: {self.condition}"

    def names(self) -> list[str]:
        """The facts the condition reads, in order."""
        seen = [n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name) and n.id not in _CONSTANTS]
        return list(dict.fromkeys(seen))

    def evaluate(self, status: str, facts: dict[str, Any]) -> bool | None:
        """True or False when the probe's ``status`` and ``facts`` decide it, None when they do not."""
        values = {**facts, STATUS: status}
        return _truth(_eval(self.tree, values))


def parse_check(text: str | None) -> Check | None:
    """``None`` for a manual step; a Check for ``PROBE: CONDITION``; CheckSyntaxError otherwise."""
    if text is None or text.strip() == MANUAL:
        return None
    probe, sep, condition = text.partition(":")
    probe, condition = probe.strip(), condition.strip()
    if not sep or not probe or not condition:
        raise CheckSyntaxError(
            f"{text!r}: expected 'manual' or 'PROBE: CONDITION', e.g. 'compat: arch_ok == true'"
        )
    if not all(c.isalnum() or c == "-" for c in probe):
        raise CheckSyntaxError(f"{text!r}: {probe!r} is not a probe id")
    try:
        tree = ast.parse(condition, mode="eval").body
    except SyntaxError as exc:
        raise CheckSyntaxError(f"{text!r}: cannot read the condition ({exc.msg})") from None
    _check_tree(tree, text)
    return Check(probe, condition, tree)


def _check_tree(node: ast.AST, text: str) -> None:
    allowed: tuple[type, ...] = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Compare, ast.Name)
    allowed += (ast.Load, ast.Constant, ast.List, ast.Tuple, *_COMPARE)
    for child in ast.walk(node):
        if not isinstance(child, allowed):
            what = type(child).__name__
            raise CheckSyntaxError(
                f"{text!r}: {what} is not allowed; use facts, literals, comparisons, and/or/not"
            )
        if isinstance(child, ast.Constant) and not isinstance(
            child.value, (str, int, float, bool, type(None))
        ):
            raise CheckSyntaxError(f"{text!r}: only strings, numbers, true, false and null are literals")


def _eval(node: ast.expr, values: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _CONSTANTS[node.id] if node.id in _CONSTANTS else values.get(node.id, _MISSING)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, values) for e in node.elts]
    if isinstance(node, ast.UnaryOp):
        inner = _truth(_eval(node.operand, values))
        return _MISSING if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        return _bool_op(isinstance(node.op, ast.And), [_truth(_eval(v, values)) for v in node.values])
    assert isinstance(node, ast.Compare)
    left = _eval(node.left, values)
    results = []
    for op, right_node in zip(node.ops, node.comparators, strict=True):
        right = _eval(right_node, values)
        results.append(_truth(_compare(type(op), left, right)))
        left = right
    return _bool_op(True, results)


def _compare(op: type[ast.cmpop], left: Any, right: Any) -> Any:
    if left is _MISSING or right is _MISSING:
        return _MISSING
    left, right = _numeric(left, right), _numeric(right, left)
    try:
        return bool(_COMPARE[op](left, right))
    except TypeError:
        return _MISSING


def _numeric(value: Any, other: Any) -> Any:
    """``'8.6'`` compared with a number is the number 8.6 (facts often arrive as strings)."""
    if isinstance(value, str) and isinstance(other, (int, float)) and not isinstance(other, bool):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _bool_op(is_and: bool, parts: list[bool | None]) -> Any:
    if is_and:
        return False if False in parts else (_MISSING if None in parts else True)
    return True if True in parts else (_MISSING if None in parts else False)


def _truth(value: Any) -> bool | None:
    if value is _MISSING:
        return None
    return bool(value)
