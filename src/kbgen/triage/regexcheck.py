"""Static checks of signature regexes: is a pattern safe to run, and what literal text must it find.

Python's ``re`` backtracks, so a pattern such as ``(a+)+`` takes exponential time on a line that
almost matches. Logs are hostile input (a single line can be megabytes), so kbgen refuses the
pattern shapes that backtrack catastrophically instead of hoping the logs are kind. The analysis
walks the parse tree ``re`` itself builds; character sets are approximated over Latin-1 plus a
"anything else" flag, which is enough to tell ``\\w+\\s`` (unambiguous) from ``\\w+\\s?`` (not).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

# re._parser is the supported home of the parser since 3.11; sre_parse (3.10) warns on import.
try:
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _parser = importlib.import_module("sre_parse")

MAXREPEAT: int = _parser.MAXREPEAT
_LATIN1 = range(256)
_CATEGORY_PATTERNS = {
    "DIGIT": r"\d",
    "NOT_DIGIT": r"\D",
    "SPACE": r"\s",
    "NOT_SPACE": r"\S",
    "WORD": r"\w",
    "NOT_WORD": r"\W",
    "LINEBREAK": r"\n",
    "NOT_LINEBREAK": r"[^\n]",
}
#: a repeat whose upper bound is at least this counts as unbounded
_LARGE = 64


@dataclass(frozen=True)
class CharSet:
    """Characters an atom can consume: Latin-1 code points, plus whether anything beyond."""

    chars: frozenset[int]
    other: bool = False

    def __or__(self, other: CharSet) -> CharSet:
        return CharSet(self.chars | other.chars, self.other or other.other)

    def overlaps(self, other: CharSet) -> bool:
        return bool(self.chars & other.chars) or (self.other and other.other)


EMPTY = CharSet(frozenset())
ANY = CharSet(frozenset(c for c in _LATIN1 if c != 10), True)


@cache
def _category(name: str) -> CharSet:
    key = name.replace("CATEGORY_", "").replace("UNI_", "").replace("LOC_", "")
    pattern = re.compile(_CATEGORY_PATTERNS.get(key, r"\n"))
    chars = frozenset(c for c in _LATIN1 if pattern.fullmatch(chr(c)))
    return CharSet(chars, key.startswith("NOT_") or key in ("WORD",))


def _literal(code: int, fold: bool) -> CharSet:
    if code >= 256:
        return CharSet(frozenset(), True)
    if fold:
        char = chr(code)
        return CharSet(frozenset(ord(c) for c in {char.lower(), char.upper()} if ord(c) < 256))
    return CharSet(frozenset({code}))


def _class(items: list[Any], fold: bool) -> CharSet:
    result = EMPTY
    negate = False
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            result = result | _literal(arg, fold)
        elif name == "RANGE":
            low, high = arg
            span = CharSet(frozenset(range(low, min(high, 255) + 1)), high >= 256)
            result = result | span
            if fold:
                result = result | CharSet(frozenset(ord(chr(c).swapcase()[:1]) % 256 for c in span.chars))
        elif name == "CATEGORY":
            result = result | _category(str(arg))
    if negate:
        return CharSet(frozenset(_LATIN1) - result.chars, True)
    return result


def atom_set(op: Any, arg: Any, fold: bool) -> CharSet | None:
    """The characters a single-character item consumes, or None when it is not one."""
    name = str(op)
    if name == "LITERAL":
        return _literal(arg, fold)
    if name == "NOT_LITERAL":
        return CharSet(frozenset(_LATIN1) - _literal(arg, fold).chars, True)
    if name == "ANY":
        return ANY
    if name == "IN":
        return _class(arg, fold)
    return None


# --------------------------------------------------------------------------- tree helpers


def _children(op: Any, arg: Any) -> list[list[Any]]:
    """The sub-sequences directly inside one item."""
    name = str(op)
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return [list(arg[2])]
    if name == "SUBPATTERN":
        return [list(arg[3])]
    if name == "ATOMIC_GROUP":
        return [list(arg)]
    if name == "BRANCH":
        return [list(alt) for alt in arg[1]]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [list(arg[1])]
    if name == "GROUPREF_EXISTS":
        return [list(a) for a in arg[1:] if a is not None]
    return []


def nullable(seq: list[Any]) -> bool:
    """True when the sequence can match the empty string."""
    return all(_item_nullable(op, arg) for op, arg in seq)


def _item_nullable(op: Any, arg: Any) -> bool:
    name = str(op)
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        return arg[0] == 0 or nullable(list(arg[2]))
    if name in ("SUBPATTERN", "ATOMIC_GROUP"):
        return nullable(_children(op, arg)[0])
    if name == "BRANCH":
        return any(nullable(alt) for alt in _children(op, arg))
    return name in ("AT", "ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS")


def alphabet(seq: list[Any], fold: bool) -> CharSet:
    """Every character the sequence could consume anywhere."""
    result = EMPTY
    for op, arg in seq:
        single = atom_set(op, arg, fold)
        if single is not None:
            result = result | single
        elif str(op) == "GROUPREF":
            result = result | ANY
        elif str(op) not in ("ASSERT", "ASSERT_NOT"):
            for child in _children(op, arg):
                result = result | alphabet(child, fold)
    return result


def first_set(seq: list[Any], fold: bool, *, last: bool = False) -> CharSet:
    """Characters the sequence can start with (with ``last``: end with)."""
    result = EMPTY
    for op, arg in reversed(seq) if last else seq:
        single = atom_set(op, arg, fold)
        if single is not None:
            return result | single
        name = str(op)
        if name == "GROUPREF":
            return result | ANY
        if name not in ("AT", "ASSERT", "ASSERT_NOT"):
            for child in _children(op, arg):
                result = result | first_set(child, fold, last=last)
        if not _item_nullable(op, arg):
            return result
    return result


def _unbounded(op: Any, arg: Any) -> bool:
    return str(op) in ("MAX_REPEAT", "MIN_REPEAT") and arg[1] >= _LARGE


# --------------------------------------------------------------------------- safety


def signature_problems(pattern: str) -> list[str]:
    """Reasons ``pattern`` is unsafe as a log signature; an empty list means it is fine.

    Reported: patterns that do not compile, that match an empty line (they would match
    everything), and shapes that backtrack catastrophically on a long line: a repeat inside a
    repeat that can split the same text many ways (``(a+)+``, ``(.*)*``, ``(\\w+\\s?)+``),
    alternatives that overlap under a repeat (``(a|a)*``, ``(.|\\s)*``), and two unbounded
    repeats over overlapping characters side by side (``.*.*``, ``\\s*\\s*``).
    """
    try:
        compiled = re.compile(pattern)
        tree = _parser.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return [f"invalid regular expression: {exc}"]
    fold = bool(compiled.flags & re.IGNORECASE)
    problems: list[str] = []
    if compiled.search("") is not None:
        problems.append("matches an empty line, so it would match every line of every log")
    _check_sequence(list(tree), fold, problems)
    return list(dict.fromkeys(problems))


def _check_sequence(seq: list[Any], fold: bool, problems: list[str]) -> None:
    _check_adjacent(seq, fold, problems)
    for op, arg in seq:
        if _unbounded(op, arg):
            body = list(arg[2])
            _check_nested(body, fold, problems)
            _check_alternatives(body, fold, problems)
        for child in _children(op, arg):
            _check_sequence(child, fold, problems)


def _flatten(seq: list[Any]) -> list[Any]:
    """Inline plain groups: ``(ab)c`` is the sequence ``a b c`` for this analysis."""
    flat: list[Any] = []
    for op, arg in seq:
        if str(op) == "SUBPATTERN":
            flat.extend(_flatten(list(arg[3])))
        else:
            flat.append((op, arg))
    return flat


def _inner_repeats(seq: list[Any]) -> list[Any]:
    found = []
    for op, arg in seq:
        if _unbounded(op, arg):
            found.append((op, arg))
        for child in _children(op, arg):
            found.extend(_inner_repeats(child))
    return found


def _check_nested(body: list[Any], fold: bool, problems: list[str]) -> None:
    flat = _flatten(body)
    for inner in _inner_repeats(body):
        inner_chars = alphabet(list(inner[1][2]), fold)
        separated = any(
            (chars := atom_set(op, arg, fold)) is not None and not chars.overlaps(inner_chars)
            for op, arg in flat
            if (op, arg) is not inner
        )
        if not separated:
            problems.append(
                "nested quantifier: a repeated part inside another repeat can split the same text "
                "in exponentially many ways (like (a+)+ or (.*)*); make the inner part unambiguous"
            )
            return


def _check_alternatives(body: list[Any], fold: bool, problems: list[str]) -> None:
    for op, arg in _flatten(body):
        if str(op) != "BRANCH":
            continue
        alternatives = [list(alt) for alt in arg[1]]
        empty = sum(1 for alt in alternatives if nullable(alt))
        firsts = [first_set(alt, fold) for alt in alternatives]
        clash = empty > 1 or any(a.overlaps(b) for i, a in enumerate(firsts) for b in firsts[i + 1 :])
        if clash:
            problems.append(
                "overlapping alternatives under a repeat (like (a|a)* or (.|\\s)*): "
                "more than one branch can match the same character"
            )
            return


def _check_adjacent(seq: list[Any], fold: bool, problems: list[str]) -> None:
    # what an unbounded repeat can end with, against what the next one can start with
    previous: CharSet | None = None
    for op, arg in _flatten(seq):
        if _unbounded(op, arg):
            body = list(arg[2])
            if previous is not None and previous.overlaps(first_set(body, fold)):
                problems.append(
                    "adjacent unbounded repeats over the same characters (like .*.* or \\s*\\s*) "
                    "backtrack polynomially on long lines; keep one of them"
                )
                return
            previous = first_set(body, fold, last=True)
        elif not _item_nullable(op, arg):
            previous = None


# --------------------------------------------------------------------------- keywords

#: keywords shorter than this screen out too little to be worth it
MIN_KEYWORD = 3


def required_keywords(pattern: str) -> tuple[str, ...] | None:
    """Lower-case ASCII strings of which every matching line contains at least one.

    Triage looks for these with a plain substring search before it runs the regex; ``None``
    means no such screen exists and the regex has to be tried on every line.
    """
    try:
        tree = _parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    found = _best(list(tree))
    if not found or min(len(k) for k in found) < MIN_KEYWORD:
        return None
    return tuple(sorted(set(found)))


def _literal_char(op: Any, arg: Any) -> str | None:
    if str(op) == "LITERAL" and arg < 128:
        return chr(arg).lower()
    return None


def _leading(seq: list[Any]) -> str:
    text = ""
    for op, arg in _flatten(seq):
        char = _literal_char(op, arg)
        if char is None:
            break
        text += char
    return text


def _score(option: list[str]) -> tuple[int, int]:
    return (min(len(k) for k in option), -len(option))


def _best(seq: list[Any]) -> list[str] | None:
    """The strongest set of required keywords for a sequence (see required_keywords)."""
    options: list[list[str]] = []
    run = ""
    for op, arg in _flatten(seq):
        char = _literal_char(op, arg)
        if char is not None:
            run += char
            continue
        if run:
            options.append([run])
        name = str(op)
        if name == "BRANCH":
            per_alt = []
            for alt in arg[1]:
                alt_best = _best(list(alt))
                joined = run + _leading(list(alt))
                choice = [joined] if joined else None
                if alt_best and (choice is None or _score(alt_best) > _score(choice)):
                    choice = alt_best
                per_alt.append(choice)
            if all(per_alt):
                options.append([k for choice in per_alt if choice for k in choice])
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and arg[0] >= 1:
            inner = _best(list(arg[2]))
            if inner:
                options.append(inner)
        elif name == "ATOMIC_GROUP":
            inner = _best(list(arg))
            if inner:
                options.append(inner)
        run = ""
    if run:
        options.append([run])
    return max(options, key=_score) if options else None
