"""Keep secrets and personal paths out of everything kbgen writes or prints.

Environment variables whose *names* look like credentials are replaced wholesale; free text
(log excerpts, probe output) is scrubbed of well-known token shapes and ``key=value`` secrets.
"""

from __future__ import annotations

import getpass
import os
import re
from pathlib import Path

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH|COOKIE|SESSION|"
    r"_KEY$|^KEY$|_PAT$|WEBHOOK|DSN$)",
    re.IGNORECASE,
)

# Token shapes that are secret wherever they appear, whatever they are called.
_TOKEN_SHAPES = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),  # Hugging Face
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),  # OpenAI-style keys
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}\b"),  # JWT
]
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|access[_-]?key|credential)[A-Z0-9_.-]*)"
    r"(\s*[=:]\s*)(['\"]?)([^\s'\"]{4,})\3"
)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+):([^@\s/]+)@")


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like tokens, keys or passwords."""
    return bool(_SECRET_NAME.search(name))


def redact_text(text: str, *, paths: bool = True, home: str | None = None, user: str | None = None) -> str:
    """Scrub token shapes and ``name=secret`` pairs; with ``paths``, home → ``~``, user → ``<user>``."""
    for shape in _TOKEN_SHAPES:
        text = shape.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}{m.group(3)}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    if paths:
        text = redact_paths(text, home=home, user=user)
    return text


def redact_paths(text: str, *, home: str | None = None, user: str | None = None) -> str:
    """Replace the home folder with ``~`` and the user's name with ``<user>``."""
    home = home if home is not None else str(Path.home())
    user = user if user is not None else _user_name()
    if home and home not in ("/", ""):
        text = text.replace(home.rstrip("/"), "~")
    if user and len(user) >= 3 and user != "root":
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(user)}(?![A-Za-z0-9_])", "<user>", text)
    return text


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER", "")
