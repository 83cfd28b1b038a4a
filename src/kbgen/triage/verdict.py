"""What triage answers when it has to say more than a list of matches.

- ``match``: one or more error types match (the usual answer).
- ``not-gpu``: nothing matches, and the log ends with a plain Python error in the program or its
  data (a ``KeyError``, a missing module that has nothing to do with CUDA, a bad config) whose
  message and frames mention no GPU, driver or CUDA library. kbgen says what it is and where it
  was raised instead of guessing a CUDA type.
- ``unknown``: nothing matches and it is not plainly a user error. Triage shows the failure it
  can read (exception, the deepest frame of the user's code and of the library) and the nearest
  error types, marked as guesses: they share words with the failure, no signature matched.

Nearest types are scored by the words the failure shares with each type's title, summary and
signature text, each word weighted by how few error types use it (inverse document frequency):
a few dozen short records need no search library.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import re2

from kbgen.triage.pyerror import Frame, PythonError, last_error

if TYPE_CHECKING:
    from kbgen.store import Kb
    from kbgen.triage import TriageReport

MATCH, NOT_GPU, UNKNOWN = "match", "not-gpu", "unknown"
#: a guess must cover at least this share of the failure's (idf-weighted) words
MIN_GUESS = 0.3
#: a word at most this many error types use is rare enough to make a guess
RARE = 3
GUESSES = 3

#: exception classes that, with no GPU word anywhere near them, are the program's own errors
PLAIN = frozenset(
    [
        "KeyError",
        "ValueError",
        "TypeError",
        "AttributeError",
        "NameError",
        "UnboundLocalError",
        "FileNotFoundError",
        "IsADirectoryError",
        "NotADirectoryError",
        "PermissionError",
        "FileExistsError",
        "ModuleNotFoundError",
        "ImportError",
        "IndexError",
        "AssertionError",
        "ZeroDivisionError",
        "NotImplementedError",
        "JSONDecodeError",
        "UnicodeDecodeError",
        "UnicodeEncodeError",
        "SyntaxError",
        "IndentationError",
        "RecursionError",
        "OSError",
        "HTTPError",
        "ConnectionError",
        "ConnectTimeout",
        "ReadTimeout",
        "SSLError",
        "LocalEntryNotFoundError",
        "RepositoryNotFoundError",
        "GatedRepoError",
        "HFValidationError",
        "EntryNotFoundError",
        "ValidationError",
        "ConfigAttributeError",
        "ConfigKeyError",
        "MissingMandatoryValue",
        "InterpolationKeyError",
        "ParserError",
        "ArgumentError",
        "ScannerError",
        "ConstructorError",
        "EOFError",
        "InstantiationException",
    ]
)
_GPU = re2.compile(
    r"(?i)cuda|cudnn|cublas|cufft|cusparse|cusolver|curand|nccl|gpu|nvidia|nvml|nvrtc|nvcc|triton"
    r"|\bhip\b|rocm|flash.?attn|xformers|bitsandbytes|\bapex\b|\.so\b|\.dll\b|libtorch|device"
    r"|accelerator|\bmps\b|\bxla\b|distributed|\brank\b|fp16|bf16|half|amp\b|compile|inductor|dynamo"
    # a package's compiled ops module (mmcv._ext, detectron2._C): a build for the GPU, not user code
    r"|\b_C\b|\._ext\b|_ext\b|_ops\b|_kernels?\b"
)
_WORD = re2.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
_NOT_WORDS = frozenset(
    [
        "but",
        "runtimeerror",
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "was",
        "were",
        "not",
        "are",
        "has",
        "have",
        "error",
        "errors",
    ]
)
_ERRORISH = re2.compile(r"(?i)\b(?:error|failed|failure|fatal|abort(?:ed)?|killed|fault|exception)\b")


@dataclass(frozen=True)
class Guess:
    error: str
    title: str
    score: float
    shared: list[str]


@dataclass
class Outcome:
    verdict: str
    failure: PythonError | None = None
    #: the line the failure was read from when no Python exception shows
    line: str | None = None
    guesses: list[Guess] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """As ``triage --json`` prints it: paths and messages redacted like every line it shows."""
        from kbgen.redact import redact_text

        data: dict[str, Any] = {"verdict": self.verdict}
        if self.failure is not None:
            data["failure"] = {
                "exception": self.failure.exception,
                "message": redact_text(self.failure.message),
                "user_frame": _frame(self.failure.user_frame),
                "library_frame": _frame(self.failure.library_frame),
            }
        elif self.line is not None:
            data["failure"] = {"line": redact_text(self.line)}
        if self.verdict == UNKNOWN:
            data["guesses"] = [
                {"error": g.error, "title": g.title, "score": g.score, "shared": g.shared, "guess": True}
                for g in self.guesses
            ]
        return data


def _frame(frame: Frame | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    from kbgen.redact import redact_text

    path = redact_text(frame.path)
    return {"path": path, "line": frame.line, "function": frame.function, "package": frame.package}


def outcome_of(report: TriageReport, text: str, kb: Kb) -> Outcome:
    """The verdict on a triaged log; ``text`` is (the end of) the log's text."""
    if report.matches:
        return Outcome(MATCH)
    failure = last_error(text)
    if failure is not None and is_plain(failure):
        return Outcome(NOT_GPU, failure)
    line = None if failure is not None else last_errorish_line(text)
    query = failure.line if failure is not None else (line or "")
    return Outcome(UNKNOWN, failure, line, nearest(kb, query))


def is_plain(failure: PythonError) -> bool:
    """A program's own error: a plain exception class, and no GPU word in its message or in the
    installed code it ran through (``torch/cuda/…``, ``flash_attn``…). The user's own paths are
    not read: a project folder named ``…-cuda`` says nothing about the error."""
    if failure.name not in PLAIN or _GPU.search(failure.message):
        return False
    return not any(_GPU.search(_installed_part(f)) for f in failure.frames if f.package is not None)


def _installed_part(frame: Frame) -> str:
    """The frame's path from its package on (``torch/cuda/__init__.py``) and its function."""
    at = frame.path.rfind(f"{frame.package}")
    return f"{frame.path[at:] if at >= 0 else frame.path} {frame.function}"


def last_errorish_line(text: str) -> str | None:
    for line in reversed(text[-64 * 1024 :].splitlines()):
        if _ERRORISH.search(line):
            return line.strip()[:500]
    return None


def nearest(kb: Kb, query: str, limit: int = GUESSES) -> list[Guess]:
    """The error types that share the most (rare) words with ``query``, best first.

    A type's score is the share of the query's weight (each word weighted by how few types use
    it) that the type's words cover; a guess must share at least one rare word (one that at
    most :data:`RARE` types use), so words every CUDA error carries never make a guess alone.
    """
    wanted = set(_words(query))
    if not wanted:
        return []
    bags = {error_id: set(_words(_text_of(entry.record))) for error_id, entry in kb.errors.items()}
    df = Counter(w for bag in bags.values() for w in bag)
    idf = {w: math.log((1 + len(bags)) / (1 + df.get(w, 0))) + 1 for w in wanted}
    total = sum(idf.values())
    guesses = []
    for error_id, bag in bags.items():
        shared = wanted & bag
        if not any(df[w] <= RARE for w in shared):
            continue
        score = sum(idf[w] for w in shared) / total
        if score >= MIN_GUESS:
            top = sorted(shared, key=lambda w: (-idf[w], w))[:5]
            guesses.append(Guess(error_id, kb.errors[error_id].record.title, round(score, 2), top))
    return sorted(guesses, key=lambda g: (-g.score, g.error))[:limit]


def _text_of(record: Any) -> str:
    parts = [record.id.replace("-", " "), record.title, record.summary, " ".join(record.tags)]
    parts += [f"{s.regex} {s.note or ''}" for s in record.signatures]
    return " ".join(parts)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _NOT_WORDS]
