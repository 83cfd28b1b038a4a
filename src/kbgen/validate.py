"""Check a loaded KB as a whole: references, duplicates, placeholders, mojibake, status sense.

Each check yields :class:`~kbgen.errors.Problem` values; nothing stops at the first one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen import links
from kbgen.errors import Problem, did_you_mean
from kbgen.kinds import KINDS
from kbgen.mdtext import (
    PLACEHOLDER_RE,
    Document,
    blank_comments,
    might_hold_placeholder,
    read,
    sections,
    unfilled,
)
from kbgen.models import (
    BUG_ID_RE,
    AttemptOutcome,
    Bug,
    ErrorType,
    ProbeStatus,
    Record,
    Status,
)
from kbgen.store import Entry, Kb

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec

# UTF-8 read as cp1252/latin-1: "â€™", "âœ…", "Ã©", "ðŸš€" and friends.
_MOJIBAKE_RE = re.compile(
    r"â[€œ\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u02c6\u2013-\u203a\u20ac\u2122]|Ã[\u0080-\u00bf]|ðŸ|Â[\u00a0-\u00bf]"
)
_BUG_MENTION_RE = re.compile(BUG_ID_RE.strip("^$").replace("(", "(?:"))
_TEXT_RE = re.compile(f"(?P<placeholder>{PLACEHOLDER_RE.pattern})|(?P<mojibake>{_MOJIBAKE_RE.pattern})")
_EXPLAINED = frozenset({Status.fixed, Status.verified, Status.wontfix})  # closed, and why is owed


@dataclass
class CheckMemo:
    """What the checks found in each file, kept by a running ``kbgen serve`` between rebuilds.

    Loading hands back the same entry for a file that did not change; a file read again is a
    new entry and is checked again. The references of every file are checked again whenever the
    ids that exist change (a file added, deleted or broken), since any of them may name it.
    """

    own: dict[int, tuple[Entry[Any], list[Problem]]] = field(default_factory=dict)
    refs: dict[int, tuple[Entry[Any], list[Problem]]] = field(default_factory=dict)
    known: dict[str, set[str]] = field(default_factory=dict)

    def recall(
        self, table: dict[int, tuple[Entry[Any], list[Problem]]], entry: Entry[Any], check: Callable[[], Any]
    ) -> list[Problem]:
        kept = table.get(id(entry))
        if kept is None or kept[0] is not entry:
            kept = table[id(entry)] = (entry, list(check()))
        return kept[1]


def validate_kb(
    kb: Kb, probes: tuple[list[ProbeSpec], list[Problem]] | None = None, memo: CheckMemo | None = None
) -> list[Problem]:
    """Every problem in ``kb`` (load problems and probe files included), sorted by file and line.

    ``probes``: the project's probe files as :func:`~kbgen.probes.discovery.scan` found them, for
    a caller that scanned them already (the site); scanned here when not given. ``memo``: what an
    earlier call found in the files that did not change since (see :class:`CheckMemo`).
    """
    from kbgen import envdata, errordraft
    from kbgen.probes.discovery import scan

    specs, probe_problems = probes if probes is not None else scan(kb.project)
    probe_ids = {spec.meta.id for spec in specs}
    problems = [*kb.problems, *probe_problems]
    problems.extend(check_references(kb, probe_ids, memo))
    problems.extend(check_layers(kb, {s.meta.id for s in specs if s.builtin}))
    problems.extend(check_duplicates(kb))
    problems.extend(check_aliases(kb))
    own = CheckMemo() if memo is None else memo
    seen: dict[int, tuple[Entry[Any], list[Problem]]] = {}
    for kind in KINDS.values():
        for entry in kb.entries(kind).values():
            found = own.recall(own.own, entry, lambda: check_file(kb, entry))  # noqa: B023 (called at once)
            seen[id(entry)] = (entry, found)
            problems.extend(found)
    own.own = seen  # a file no longer loaded is forgotten
    problems.extend(envdata.problems())
    problems.extend(errordraft.problems())
    return sorted(set(problems), key=lambda p: (p.path, p.line or 0, p.message))


def check_file(kb: Kb, entry: Entry[Any]) -> Iterator[Problem]:
    """The problems of one file that no other file changes: text, secrets, a bug's status, an
    error type's signatures."""
    yield from check_text(kb, entry)
    yield from check_secrets(entry)
    if entry.source.bom:
        yield _at(kb, entry, None, "the file starts with a UTF-8 byte order mark", "warning")
    if isinstance(entry.record, Bug):
        yield from check_bug_status(kb, entry)
    elif isinstance(entry.record, ErrorType):
        yield from check_signatures(kb, entry)


def _at(
    kb: Kb,
    entry: Entry[Record],
    loc: tuple[Any, ...] | None,
    message: str,
    severity: str = "error",
    **kw: Any,
) -> Problem:
    line = entry.source.parsed.line_of(loc) if loc else None
    field = ".".join(str(p) for p in loc) if loc else None
    return Problem(entry.source.rel, line, field, message, severity, **kw)


# --------------------------------------------------------------------------- references


def _refs(entry: Entry[Record]) -> Iterator[tuple[tuple[Any, ...], str, str]]:
    """(location, target kind, id) for every id a record names (see :mod:`kbgen.links`)."""
    for link, loc, ref, _ in links.refs(entry.kind.name, entry.record):
        yield loc, link.target, ref


def check_references(kb: Kb, probe_ids: set[str], memo: CheckMemo | None = None) -> Iterator[Problem]:
    """Every id named by a record must exist (bugs may be named by an alias)."""
    aliases = {a for e in kb.bugs.values() for a in e.record.aliases}
    # A record whose file did not load is reported once, at its own file: the records that
    # name it are not wrong, so they get no errors of their own.
    broken = {Path(p.path) for p in kb.problems}
    known = {
        name: {*kb.entries(kind), *(p.stem for p in broken if p.parent.name == kind.folder)}
        for name, kind in KINDS.items()
    }
    known["bug"] |= aliases
    known["probe"] = probe_ids
    memo = memo or CheckMemo()
    if memo.known != known:
        memo.known, memo.refs = known, {}
    seen: dict[int, tuple[Entry[Any], list[Problem]]] = {}
    for kind in KINDS.values():
        for entry in kb.entries(kind).values():
            found = memo.recall(memo.refs, entry, lambda: _dangling(kb, entry, known))  # noqa: B023
            seen[id(entry)] = (entry, found)
            yield from found
    memo.refs = seen


def _dangling(kb: Kb, entry: Entry[Record], known: dict[str, set[str]]) -> Iterator[Problem]:
    for loc, target, ref in _refs(entry):
        if ref not in known[target]:
            where = f"kb/{KINDS[target].folder}/" if target in KINDS else "the built-in probes or kb/probes/"
            hint = _close(ref, known[target])
            yield _at(kb, entry, loc, f"no {target} '{ref}' in {where}{hint}", code="reference")


def check_layers(kb: Kb, base_probes: set[str]) -> Iterator[Problem]:
    """A base record (kbgen/knowledge) links only to base records: the package cannot know a
    project's ids. Project records may link anywhere."""
    shipped = kb.base | set(kb.overrides)
    for kind, record_id in sorted(kb.base):
        entry = kb.entries(KINDS[kind])[record_id]
        for loc, target, ref in _refs(entry):
            known = ref in base_probes if target == "probe" else (target, ref) in shipped
            exists = ref in kb.entries(KINDS[target]) if target != "probe" else True
            if not known and exists:
                message = (
                    f"the base layer links to the project's {target} '{ref}'; "
                    "base records link only to base records"
                )
                yield _at(kb, entry, loc, message, code="layer")
        found = _BUG_MENTION_RE.search(entry.source.text)
        if found is not None:
            line = entry.source.text.count("\n", 0, found.start()) + 1
            message = (
                f"the base layer mentions the bug {found.group()}; shipped knowledge is read by every "
                "project, which has bugs of its own: describe the case without its id"
            )
            yield Problem(entry.source.rel, line, None, message, code="layer")


def _close(value: str, choices: Iterable[str]) -> str:
    guess = did_you_mean(value, choices)
    return f"; {guess}" if guess else ""


def check_duplicates(kb: Kb) -> Iterator[Problem]:
    """One id, one file. (An alias may equal another bug's id after a renumber: ids win.)"""
    for bug_id, paths in sorted(kb.claims.items()):
        if len(paths) > 1:
            others = ", ".join(kb.project.rel(p) for p in paths[1:])
            yield Problem(
                kb.project.rel(paths[0]),
                None,
                "id",
                f"{bug_id} is also claimed by {others} (two branches minted the same id); "
                f"run `kbgen renumber {bug_id}` to move the newer one to a free id",
                code="duplicate",
            )


def check_aliases(kb: Kb) -> Iterator[Problem]:
    """An alias names one bug, and never the id of a live bug, however it arose (a hand or git
    merge): links to that id reach the other bug, and lists show one bug under two ids."""
    owners: dict[str, list[Entry[Bug]]] = {}
    for entry in kb.bugs.values():
        for i, alias in enumerate(entry.record.aliases):
            if alias == entry.record.id:
                yield _at(kb, entry, ("aliases", i), "an alias cannot be the bug's own id", code="alias")
            elif alias in kb.bugs:
                where = kb.project.rel(kb.bugs[alias].source.path)
                message = f"{alias} is also the id of {where}; links and `kbgen show {alias}` reach that bug"
                yield _at(
                    kb, entry, ("aliases", i), message + ": drop the alias, or merge the two", code="alias"
                )
            owners.setdefault(alias, []).append(entry)
    for alias, entries in sorted(owners.items()):
        if len(entries) > 1 and alias not in kb.bugs:
            others = ", ".join(e.record.id for e in entries[1:])
            index = entries[0].record.aliases.index(alias)
            message = f"{alias} is also an alias of {others}; `kbgen show {alias}` cannot tell which is meant"
            yield _at(kb, entries[0], ("aliases", index), message, code="alias")


def check_signatures(kb: Kb, entry: Entry[ErrorType]) -> Iterator[Problem]:
    """Every signature must be a pattern RE2 can run (triage skips the others) and must not
    match an empty line."""
    from kbgen.triage import signature_problems

    for i, signature in enumerate(entry.record.signatures):
        for reason in signature_problems(signature.regex):
            yield _at(kb, entry, ("signatures", i), reason, code="signature")


# --------------------------------------------------------------------------- text


def check_text(kb: Kb, entry: Entry[Record]) -> Iterator[Problem]:
    """Placeholders and mojibake anywhere in the file (not in code blocks or HTML comments);
    unfilled sections in a bug's body. One regex pass per file; line numbers only on a hit."""
    source = entry.source
    rel = source.rel
    masked: Document | None = None
    hits: Iterable[re.Match[str]] = ()
    if _might_have_bad_text(source.text):
        masked = _masked(source.body)
        text = source.text[: source.parsed.body_start] + "\n".join(masked.lines)
        hits = _TEXT_RE.finditer(text)
    for hit in hits:
        line = text.count("\n", 0, hit.start()) + 1
        if hit.lastgroup == "placeholder":
            message = f"template placeholder left in the text: {hit.group(0)!r}"
            yield Problem(rel, line, None, message, code="placeholder")
        else:
            message = (
                f"mojibake {hit.group(0)!r}: UTF-8 text was decoded as cp1252 somewhere; "
                "`kbgen import` repairs such files"
            )
            yield Problem(rel, line, None, message, code="mojibake")
    if isinstance(entry.record, Bug):
        first_line = source.text.count("\n", 0, source.parsed.body_start) + 1
        yield from _unfilled_sections(rel, masked or _masked(source.body), first_line, source.body)
        # closed with nothing said: a new bug's prompts are for later, a fixed one's are a gap
        if PROMPT in source.body and entry.record.status in _EXPLAINED:
            from kbgen.mdsafe import body as shown

            if not shown(source.body).strip():
                said = f"{entry.record.status.value}, but the report holds only prompts: say what happened"
                yield Problem(rel, first_line, None, said, "warning", code="empty-report")


def check_secrets(entry: Entry[Record]) -> Iterator[Problem]:
    """A warning (an error under --strict) per line that holds what looks like a secret."""
    from kbgen.redact import find_secrets

    for line, what in find_secrets(entry.source.text):
        message = f"looks like {what}: remove it, or write a placeholder such as $NAME or <redacted>"
        yield Problem(entry.source.rel, line, None, message, "warning", code="secret")


def _might_have_bad_text(text: str) -> bool:
    """A cheap screen (substring search runs at C speed) before the slower exact regex."""
    return might_hold_placeholder(text) or any(c in text for c in _MOJIBAKE_LEADS)


_MOJIBAKE_LEADS = "âÃðÂ"


def _masked(body: str) -> Document:
    """The body read with HTML comments and the code inside fences blanked out (lines kept)."""
    doc = read(blank_comments(body))
    for block in doc.code:
        last = block.end - 1 if block.closed else block.end
        doc.lines[block.start + 1 : last] = [""] * (last - block.start - 1)
    return doc


#: how a section the person has not filled yet starts (see templates/bug.md.j2)
PROMPT = "<!-- prompt:"


def _unfilled_sections(rel: str, masked: Document, first_line: int, raw: str) -> Iterator[Problem]:
    """Sections that say nothing: empty, or only template text such as "n/a" (the sections
    ``kbgen import`` drops). One holding a prompt (``<!-- prompt: … -->``, as ``kbgen new-bug``
    writes them) is waiting to be filled; one whose placeholders are errors already is not
    reported twice. ``masked`` is ``raw`` as :func:`_masked` reads it."""
    lines = raw.split("\n")
    for section in sections(masked):
        if section.children:
            continue  # its content is in its sub-sections
        heading = section.heading
        own = "\n".join(lines[heading.line + 1 : section.end])
        said = unfilled(own)
        if said is None or PROMPT in own or PLACEHOLDER_RE.search(section.own_text(masked)):
            continue
        what = f"holds only template text ({said!r})" if said else "is empty"
        line = first_line + heading.line
        yield Problem(rel, line, None, f"section '{heading.title}' {what}", "warning", code="empty-section")


# --------------------------------------------------------------------------- status


def check_bug_status(kb: Kb, entry: Entry[Bug]) -> Iterator[Problem]:
    """A status must be backed by what the record says happened."""
    bug = entry.record
    if bug.status == Status.verified:
        passing = any(
            f.probe == bug.repro and f.status == ProbeStatus.pass_ for f in bug.findings
        )  # failing machine
        if not bug.repro or not passing:
            yield _at(
                kb,
                entry,
                ("status",),
                "verified needs a passing repro record: set `repro` to a probe and run "
                f"`kbgen probe --fill {bug.id}` after the fix",
                code="status",
            )
    yield from _closed_without_why(kb, entry)
    yield from _old_shape(kb, entry)
    if bug.status == Status.duplicate and not (bug.duplicate_of or bug.related):
        message = "a duplicate should name the bug it duplicates: `kbgen status ID duplicate --of OTHER`"
        yield _at(kb, entry, ("status",), message, "warning")
    if bug.confirmed_causes and bug.status == Status.open:
        yield _at(
            kb,
            entry,
            ("status",),
            "has confirmed causes but is still 'open'; consider 'confirmed'",
            "warning",
        )


def _closed_without_why(kb: Kb, entry: Entry[Bug]) -> Iterator[Problem]:
    """A fixed or verified bug should name its cause and a fix that worked."""
    bug = entry.record
    if bug.status in (Status.fixed, Status.verified):
        worked = [a.fix for a in bug.fixes_tried if a.outcome == AttemptOutcome.worked]
        missing = (["no confirmed cause"] if not bug.confirmed_causes else []) + (
            ["no fix that worked"] if not worked else []
        )
        if missing:
            yield _at(
                kb,
                entry,
                ("status",),
                f"{bug.status.value} with {' and '.join(missing)}: say why it is closed with "
                f"`kbgen status {bug.id} {bug.status.value} --cause CAUSE-ID --fix FIX-ID`",
                "warning",
                code="closed-without-why",
            )


def _old_shape(kb: Kb, entry: Entry[Bug]) -> Iterator[Problem]:
    if legacy := [k for k in ("environment", "findings") if k in entry.source.parsed.data]:
        yield _at(
            kb,
            entry,
            (legacy[0],),
            f"old single-environment shape ({', '.join(legacy)}): `kbgen migrate` upgrades it to "
            "`environments`, one per machine (any kbgen write to this bug does it too)",
            "warning",
            code="old-shape",
        )
