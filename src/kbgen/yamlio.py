"""Read frontmatter fast (libyaml) with the line of every key; turn pydantic errors into lines.

The read path uses python-frontmatter's YAML handler to find the block and libyaml's
``CSafeLoader`` to parse it. A subclass of the loader records the line of every mapping key
and rejects duplicate keys, which plain PyYAML silently overwrites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

try:  # libyaml is on every platform that ships PyYAML wheels; the fallback is only slower.
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

from pydantic import BaseModel, ValidationError

from kbgen.errors import Problem, did_you_mean
from kbgen.fieldwords import describe_error

_HANDLER = YAMLHandler()


class FrontmatterError(ValueError):
    """The frontmatter block itself is broken; ``line`` is 1-based within the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


_RESOLVED: dict[tuple[str, Any], str] = {}
_STR_TAG = "tag:yaml.org,2002:str"


class _LineLoader(_BaseLoader):
    """CSafeLoader that remembers each key's line and refuses duplicate keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.key_lines: dict[int, dict[Any, int]] = {}
        self._pending: dict[int, dict[Any, int]] = {}
        self.last_node: yaml.Node | None = None  # the node being built, for a ValueError's line

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # PyYAML matches every plain scalar, keys included, against a list of regexes; KB files
        # repeat the same keys and short values thousands of times, so remember the answers.
        if kind is yaml.ScalarNode and len(value) <= 64:
            key = (value, implicit)
            tag = _RESOLVED.get(key)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_RESOLVED) < 100_000:
                    _RESOLVED[key] = tag
            return tag
        return super().resolve(kind, value, implicit)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # Most nodes are plain strings, whose constructed value is exactly ``node.value``; skip
        # PyYAML's generic dispatch for them (the same result, a third of the load time saved).
        if node.__class__ is yaml.ScalarNode and node.tag == _STR_TAG:
            return node.value
        self.last_node = node
        return super().construct_object(node, deep=deep)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a key must be a plain value", key_node.start_mark
                ) from None
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {lines[key] + 1})",
                    key_node.start_mark,
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
            lines[key] = key_node.start_mark.line
        self._pending[id(node)] = lines
        return mapping

    def construct_yaml_map(self, node: yaml.MappingNode) -> Any:
        data: dict[Any, Any] = {}
        yield data
        data.update(self.construct_mapping(node))
        self.key_lines[id(data)] = self._pending.pop(id(node), {})

    def construct_yaml_seq(self, node: yaml.SequenceNode) -> Any:
        data: list[Any] = []
        yield data
        data.extend(self.construct_sequence(node))
        self.key_lines[id(data)] = {i: child.start_mark.line for i, child in enumerate(node.value)}


_LineLoader.add_constructor("tag:yaml.org,2002:map", _LineLoader.construct_yaml_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _LineLoader.construct_yaml_seq)


@dataclass
class Parsed:
    """A split and parsed file: frontmatter data, body text and where each part lies."""

    data: dict[str, Any]
    body: str
    fm_text: str
    fm_start: int  # character offset of the frontmatter text in the file
    fm_first_line: int  # 1-based file line of the frontmatter's first line
    body_start: int  # character offset of the body
    key_lines: dict[int, dict[Any, int]] = field(repr=False, default_factory=dict)

    def line_of(self, loc: tuple[int | str, ...]) -> int | None:
        """The file line of the deepest key of ``loc`` that can be found, or None."""
        node: Any = self.data
        found: int | None = None
        for part in loc:
            in_dict = isinstance(node, dict) and part in node
            in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
            if not (in_dict or in_list):
                break
            lines = self.key_lines.get(id(node), {})
            if part in lines:
                found = self.fm_first_line + lines[part]
            node = node[part]
        return found


def split_frontmatter(text: str) -> tuple[str, int, int]:
    """Return ``(frontmatter, fm_start, body_start)``; raise FrontmatterError when broken."""
    if not text.strip():
        raise FrontmatterError("the file is empty; it needs a frontmatter block between '---' lines", 1)
    if not _HANDLER.detect(text):
        raise FrontmatterError(
            "no frontmatter: the file must start with a '---' line, then YAML keys, then '---'", 1
        )
    boundary = _HANDLER.FM_BOUNDARY
    assert boundary is not None
    opening = boundary.match(text)
    assert opening is not None
    closing = boundary.search(text, opening.end() + 1)
    if closing is None:
        raise FrontmatterError("unclosed frontmatter: the opening '---' has no closing '---' line", 1)
    fm_start = opening.end()
    body_start = closing.end()
    if text.startswith("\r\n", body_start):
        body_start += 2
    elif text.startswith("\n", body_start):
        body_start += 1
    return text[fm_start : closing.start()], fm_start, body_start


#: Records are a few levels deep; a value nested far deeper is an attack on the parser (libyaml's
#: composer recurses in C and dies of a stack overflow near 30,000 levels).
MAX_DEPTH = 64
#: a line whose indentation (spaces, tabs, '- ', '? ', ': ') is this long may be nested that deep
_DEEP_INDENT_RE = re.compile(rf"\n[ \t?:-]{{{MAX_DEPTH}}}")
_STAR_RE = re.compile(r"\*[^\s*,\[\]{}]")


def _may_alias(text: str) -> bool:
    """Is there a ``*name`` where YAML reads an alias: first on a line, after '[', '{' or ',', or
    after '- ', ': ' or '? '? (A star inside prose, as in ``**bold**`` or ``lib-*.so``, is not.)"""
    for star in _STAR_RE.finditer(text):
        end = star.start()
        before = len(text[max(0, end - 64) : end].rstrip(" \t"))
        start = max(0, end - 64)
        prev = text[start + before - 1] if start + before > 0 else "\n"
        if prev in "\n[{," or (prev in ":?-" and start + before < end):
            return True
    return False


def _flow_depth(text: str) -> int:
    """The deepest bracket nesting, quotes ignored: an upper bound used only as a cheap screen."""
    depth = deepest = 0
    for char in _BRACKETS_RE.findall(text):
        depth = depth + 1 if char in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


_BRACKETS_RE = re.compile(r"[\[\]{}]")


def check_structure(fm_text: str, first_line: int) -> None:
    """Refuse nesting deeper than MAX_DEPTH and aliases of lists or mappings (one alias can stand
    for a huge tree: a few lines of YAML that expand to billions of values).

    The exact check walks libyaml's event stream, which uses no recursion; it runs only when a
    cheap look at the text says it might find something.
    """
    opened = fm_text.count("[") + fm_text.count("{")
    deep = opened > MAX_DEPTH and _flow_depth(fm_text) > MAX_DEPTH
    indented = _DEEP_INDENT_RE.search("\n" + fm_text) is not None
    if not (deep or indented or ("*" in fm_text and _may_alias(fm_text))):
        return
    depth = 0
    anchors: set[str] = set()
    try:
        for event in yaml.parse(fm_text, Loader=_BaseLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if event.anchor:
                    anchors.add(event.anchor)
                if depth > MAX_DEPTH:
                    line = first_line + (event.start_mark.line if event.start_mark else 0)
                    raise FrontmatterError(f"values are nested more than {MAX_DEPTH} levels deep", line)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent) and event.anchor in anchors:
                line = first_line + (event.start_mark.line if event.start_mark else 0)
                message = f"*{event.anchor} repeats a list or mapping; write the values out instead"
                raise FrontmatterError(message, line)
    except yaml.YAMLError as exc:
        limit = _libyaml_limit(exc, first_line)
        if limit is not None:
            raise limit from None
        return  # the loader reports it, with its line


def _libyaml_limit(exc: yaml.YAMLError, first_line: int) -> FrontmatterError | None:
    """kbgen's own message for a limit that libyaml enforces itself, or None for any other error.

    libyaml 0.2.6 and later refuse flow nesting past 1,000 levels while scanning, before a single
    event reaches :func:`check_structure`; the user should read the same words whichever libyaml
    is installed, so the refusal is reported as kbgen's depth limit.
    """
    problem = getattr(exc, "problem", None) or str(exc)
    if "nesting depth" not in problem:
        return None
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = first_line + mark.line if mark is not None else first_line
    return FrontmatterError(f"values are nested more than {MAX_DEPTH} levels deep", line)


def parse_document(text: str) -> Parsed:
    """Split ``text`` and parse its frontmatter, keeping the line of every key."""
    fm_text, fm_start, body_start = split_frontmatter(text)
    first_line = text.count("\n", 0, fm_start) + 1
    check_structure(fm_text, first_line)
    loader = _LineLoader(fm_text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        limit = _libyaml_limit(exc, first_line)
        if limit is not None:
            raise limit from None
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark is not None else None
        problem = exc.problem or str(exc)
        bad_line = fm_text.split("\n")[mark.line] if mark is not None else ""
        if "\t" in bad_line[: len(bad_line) - len(bad_line.lstrip())] or "\\t" in problem:
            problem += " (YAML indentation must use spaces, not tabs)"
        raise FrontmatterError(f"invalid YAML: {problem}", line) from None
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML: {exc}", first_line) from None
    except (ValueError, OverflowError) as exc:  # 2025-02-30, hour 25, +24:00, year 0
        raise _bad_value(loader.last_node, exc, first_line) from None
    finally:
        loader.dispose()
    if data is None:
        raise FrontmatterError("the frontmatter block is empty", first_line + 1)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"
        raise FrontmatterError(f"the frontmatter must be a mapping of keys, not {kind}", first_line + 1)
    return Parsed(data, text[body_start:], fm_text, fm_start, first_line, body_start, loader.key_lines)


def _bad_value(node: yaml.Node | None, exc: Exception, first_line: int) -> FrontmatterError:
    reason = str(exc)
    if reason.startswith("offset must be"):
        reason = "a UTC offset must be less than 24 hours"
    if node is None:
        return FrontmatterError(f"invalid value: {reason}", first_line)
    line = first_line + node.start_mark.line
    if isinstance(node.value, str) and node.tag.endswith(":timestamp"):
        return FrontmatterError(f"{node.value!r} is not a real date or time: {reason}", line)
    return FrontmatterError(f"invalid value: {reason}", line)


def _fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """Names of the fields a model accepts at the mapping ``loc`` points into."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        if info is None:
            return []
        current = _inner_model(info.annotation)
        if current is None:
            return []
    fields = getattr(current, "model_fields", {})
    return [info.alias or name for name, info in fields.items()]


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def validation_problems(
    exc: ValidationError,
    parsed: Parsed,
    path: str,
    model: type[BaseModel],
) -> list[Problem]:
    """One ``path:line: field: message`` problem per pydantic error, with a did-you-mean."""
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        where = ".".join(str(p) for p in loc) or None
        message = describe_error(err)
        if err["type"] == "extra_forbidden":
            choices = _fields_at(model, loc[:-1])
            guess = did_you_mean(str(loc[-1]), choices)
            message = "unknown key" + (f"; {guess}" if guess else "")
        elif err["type"] == "enum":
            expected = err.get("ctx", {}).get("expected", "")
            message = f"must be one of {expected.replace(' or ', ', ')}".replace("'", "")
        problems.append(Problem(path, parsed.line_of(loc) or parsed.fm_first_line, where, message))
    return problems
