"""Is a crash a bug the project already has? Compare fingerprints, rank the bugs it resembles.

``same`` is kbgen's claim that two crashes are one bug, and it is made only on evidence that
separates bugs: the same exception, messages that agree once a rerun's surface changes are out,
and either the same innermost frames or the same name in the message (module, shared library,
operator). The same error type alone gives a score, never ``same``.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from pydantic import BaseModel, ConfigDict

from kbgen.fingerprint import Fingerprint

__all__ = ["FAMILIES", "MESSAGE_AGREES", "Likeness", "compare"]

#: normalised messages this alike (difflib's ratio, or one a prefix of the other) agree
MESSAGE_AGREES = 0.6
MIN_PREFIX = 24
#: exception classes one crash is raised as under different torch releases: a CUDA failure that
#: torch 1.x raised as RuntimeError is torch.cuda.OutOfMemoryError (a RuntimeError) from 1.13
#: and torch.AcceleratorError (also a RuntimeError) from 2.8, so an upgrade renames it
FAMILIES: tuple[frozenset[str], ...] = (frozenset({"RuntimeError", "OutOfMemoryError", "AcceleratorError"}),)


class Likeness(BaseModel):
    model_config = ConfigDict(extra="forbid")

    same: bool
    score: float
    why: str


def _message_likeness(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    short, long = sorted((a, b), key=len)
    if len(short) >= MIN_PREFIX and (long.startswith(short) or long.endswith(short)):
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _frames_agree(a: list[str], b: list[str]) -> bool | None:
    """Whether the innermost frames agree; None when either side has none."""
    if not a or not b:
        return None
    return a[0] == b[0] or bool(set(a[:2]) & set(b[:2]))


def compare(new: Fingerprint, old: Fingerprint, *, same_type: bool = False) -> Likeness:
    """How much ``new`` looks like ``old``, whether kbgen claims they are one bug, and why."""
    reasons: list[str] = []
    score = 0.25 if same_type else 0.0
    if same_type:
        reasons.append("same error type")
    exc_known = new.exception is not None and old.exception is not None
    if exc_known and not _same_exception(new.exception, old.exception):
        return Likeness(same=False, score=round(score, 2), why=_why([*reasons, "another exception"]))
    if exc_known and new.exception == old.exception:
        score += 0.15
        reasons.append(f"same exception {new.exception}")
    elif exc_known:
        score += 0.1
        reasons.append(f"{old.exception} raised as {new.exception} by another torch release")
    msg = _message_likeness(new.message, old.message)
    score += 0.3 * msg
    if msg >= MESSAGE_AGREES:
        reasons.append("same message" if msg > 0.95 else "similar message")
    users = _frames_agree(new.user_frames, old.user_frames)
    libs = _frames_agree(new.library_frames, old.library_frames)
    shared = sorted(set(new.names) & set(old.names))
    frames = users if users is not None else libs
    if frames:
        score += 0.3
        where = new.user_frames[0] if users else new.library_frames[0]
        reasons.append(f"same frame {where}")
    elif frames is False:
        score -= 0.2
        reasons.append("other frames")
    if shared:
        score += 0.2
        reasons.append("same " + ", ".join(n.split(":", 1)[1] for n in shared[:3]))
    elif new.names and old.names:
        score -= 0.1
        reasons.append("other names in the message")
    distinct = bool(frames) or (frames is None and bool(shared))
    same = msg >= MESSAGE_AGREES and distinct and frames is not False
    if msg >= MESSAGE_AGREES and not distinct and frames is not False:
        reasons.append("nothing but the message to tell it from another bug")
    return Likeness(same=same, score=round(max(0.0, min(score, 1.0)), 2), why=_why(reasons))


def _same_exception(a: str | None, b: str | None) -> bool:
    return a == b or any(a in family and b in family for family in FAMILIES)


def _why(reasons: list[str]) -> str:
    return "; ".join(reasons) if reasons else "nothing in common"
