"""What decides a checklist step: ``manual``, or ``PROBE: CONDITION`` over that probe's facts.

A condition is a tiny expression, for example ``CUDA_LAUNCH_BLOCKING == "1"``,
``arch_ok == true``, ``status in ["fail", "crash"]`` or ``steps_passed >= 3 and not failed_step``.
Python's own parser (``ast``) reads it and a whitelist walks the tree: names are the probe's facts
(``status`` is the probe's result), literals are strings, numbers, ``true``/``false``/``null``
and lists of those (a number may carry a sign: ``x == -1``); operators are comparisons, ``and``,
``or`` and ``not``. Nothing is evaluated as code.

A condition is a record's text, so it is bounded before Python's parser sees it: at most
:data:`MAX_LENGTH` characters and :data:`MAX_NESTING` levels of brackets, ``not`` and signs (the
parser itself fails on deep input with RecursionError or MemoryError). Evaluation walks the tree
with an explicit stack, so no condition can exhaust Python's recursion limit.

Logic has three values. A fact the probe did not report makes a comparison *unknown* (None), and
an unknown condition never changes a step: kbgen does not tick what it did not see.
"""

from __future__ import annotations

import ast
import io
import keyword
import operator
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MANUAL = "manual"
STATUS = "status"
#: the longest condition kbgen reads (the shipped ones are under 70 characters)
MAX_LENGTH = 500
#: the deepest nesting of brackets, ``not`` and signs in a condition
MAX_NESTING = 20
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
            f"{_shown(text)}: expected 'manual' or 'PROBE: CONDITION', e.g. 'compat: arch_ok == true'"
        )
    if not all(c.isalnum() or c == "-" for c in probe):
        raise CheckSyntaxError(f"{_shown(text)}: {_shown(probe)} is not a probe id")
    _check_size(condition, text)
    try:
        tree = ast.parse(condition, mode="eval").body
    except SyntaxError as exc:
        raise CheckSyntaxError(f"{_shown(text)}: cannot read the condition ({exc.msg})") from None
    except (ValueError, RecursionError, MemoryError):  # NUL bytes; input the parser cannot nest
        raise CheckSyntaxError(f"{_shown(text)}: cannot read the condition") from None
    _check_tree(tree, text)
    return Check(probe, condition, tree)


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut short when it is long."""
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f" (and {len(text) - 60} characters more)"


#: tokens that add no level of nesting: siblings' separators, comparisons (a flat chain), brackets
#: (counted where they open), and what ends a line
_FLAT = {",", "and", "or", "in", "is", "==", "!=", "<", "<=", ">", ">=", "(", ")", "[", "]", "{", "}"}
#: the keywords a condition may hold
_KEYWORDS = {"and", "or", "not", "in", "is", "True", "False", "None"}
_LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}


def _check_size(condition: str, text: str) -> None:
    """Refuse a condition too long or nested too deep, before Python's parser reads it.

    Nesting is measured on the tokens: every bracket, ``not`` and operator opens a level (an
    over-estimate for some operators, which a condition does not use anyway); ``and``, ``or``
    and ``,`` start a sibling at the level of the enclosing bracket. That is sound because the
    keywords of constructs that bind looser than ``and`` (``lambda``, ``if``/``else``) are
    refused here, before the parser builds them."""
    if len(condition) > MAX_LENGTH:
        raise CheckSyntaxError(
            f"{_shown(text)}: the condition is {len(condition)} characters long; at most {MAX_LENGTH}"
        )
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(condition).readline)
            if t.type not in _LAYOUT and t.type != tokenize.ENDMARKER
        ]
    except (tokenize.TokenError, SyntaxError) as exc:
        why = exc.args[0] if exc.args else type(exc).__name__
        raise CheckSyntaxError(f"{_shown(text)}: cannot read the condition ({why})") from None
    opened: list[tuple[int, int]] = []  # (level, level of the group) outside each open bracket
    level = group = deepest = 0
    for i, token in enumerate(tokens):
        word = token.string
        if token.type == tokenize.STRING and "f" in word[: word.find(word[-1])].lower():
            raise CheckSyntaxError(f"{_shown(text)}: f-strings are not allowed; write a plain string")
        if tokenize.tok_name[token.type].startswith("FSTRING"):  # Python 3.12+
            raise CheckSyntaxError(f"{_shown(text)}: f-strings are not allowed; write a plain string")
        if token.type == tokenize.NAME and keyword.iskeyword(word) and word not in _KEYWORDS:
            raise CheckSyntaxError(
                f"{_shown(text)}: {word!r} is not allowed; use facts, literals, comparisons, and/or/not"
            )
        if word in ("(", "[", "{"):
            opened.append((level, group))
            level = group = level + 1
        elif word in (")", "]", "}"):
            level, group = opened.pop() if opened else (0, 0)
        elif word in (",", "and", "or"):
            level = group
        elif _nests(tokens, i):
            level += 1
        deepest = max(deepest, level)
    if deepest > MAX_NESTING:
        raise CheckSyntaxError(
            f"{_shown(text)}: the condition nests {deepest} levels deep (brackets, not, signs);"
            f" at most {MAX_NESTING}"
        )


def _nests(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    """Whether ``tokens[i]`` can hold what follows it one level deeper."""
    token, word = tokens[i], tokens[i].string
    before = tokens[i - 1].string if i else ""
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    if word == "not":
        return (after is None or after.string != "in") and before != "is"  # ``not in``, ``is not``
    if word in ("-", "+") and before in _OPERAND_STARTS and after and after.type == tokenize.NUMBER:
        return False  # the sign of a number: the number is a leaf, nothing nests under it
    return token.type == tokenize.OP and word not in _FLAT


#: what an operand follows (so a ``-`` after one of these is a sign, not a subtraction)
_OPERAND_STARTS = (_FLAT - {")", "]", "}"}) | {"not", ""}


def _check_tree(node: ast.AST, text: str) -> None:
    allowed: tuple[type, ...] = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd)
    allowed += (ast.Compare, ast.Name, ast.Load, ast.Constant, ast.List, ast.Tuple, *_COMPARE)
    for child in ast.walk(node):
        if not isinstance(child, allowed):
            what = type(child).__name__
            raise CheckSyntaxError(
                f"{_shown(text)}: {what} is not allowed; use facts, literals, comparisons, and/or/not"
            )
        if isinstance(child, ast.Constant) and not isinstance(
            child.value, (str, int, float, bool, type(None))
        ):
            raise CheckSyntaxError(
                f"{_shown(text)}: only strings, numbers, true, false and null are literals"
            )
        if (
            isinstance(child, ast.UnaryOp)
            and not isinstance(child.op, ast.Not)
            and not _is_number(child.operand)
        ):
            raise CheckSyntaxError(f"{_shown(text)}: a sign (- or +) goes only right before a number")


def _is_number(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _children(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts)
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    return []


def _eval(root: ast.expr, values: dict[str, Any]) -> Any:
    """The value of ``root``: children first, through an explicit stack (never Python recursion)."""
    done: dict[int, Any] = {}  # id(node) -> its value
    stack: list[tuple[ast.expr, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = _children(node)
        if children and not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        done[id(node)] = _value(node, [done[id(child)] for child in children], values)
    return done[id(root)]


def _value(node: ast.expr, parts: list[Any], values: dict[str, Any]) -> Any:
    """One node's value, given its children's."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _CONSTANTS[node.id] if node.id in _CONSTANTS else values.get(node.id, _MISSING)
    if isinstance(node, (ast.List, ast.Tuple)):
        return parts
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            return -parts[0]
        if isinstance(node.op, ast.UAdd):
            return parts[0]
        inner = _truth(parts[0])
        return _MISSING if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        return _bool_op(isinstance(node.op, ast.And), [_truth(p) for p in parts])
    assert isinstance(node, ast.Compare)
    pairs = zip(node.ops, parts[:-1], parts[1:], strict=True)
    return _bool_op(True, [_truth(_compare(type(op), left, right)) for op, left, right in pairs])


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
