"""Keep secrets and personal paths out of everything kbgen writes or prints.

Environment variables whose *names* look like credentials are replaced wholesale; free text
(log excerpts, probe output, notes, imported reports) is scrubbed of well-known token shapes,
private-key blocks, credentials in URLs, headers and command lines, and ``name = value`` pairs
whose name says secret (``KEY=v``, ``"key": "v"``, ``'key': 'v'``).

The token shapes follow the pattern set of detect-secrets' plugins (AWS, GitHub, GitLab, npm,
Google, Slack, Stripe, SendGrid, Twilio, PyPI, JWT, private keys, keywords, basic-auth URLs),
with the additions kbgen's users meet (Hugging Face, OpenAI). They are compiled into one
alternation so that a multi-megabyte log is walked once per pass, not once per shape.

Redact before cutting text short: :func:`cut_head` and :func:`cut_tail` do both, and drop the
word the cut lands in so that no token survives with its recognisable prefix cut away.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|(^|_)PASS$|_PWD$|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"AUTH|COOKIE|SESSION|_KEY$|^KEY$|_PAT$|WEBHOOK|DSN$)",
    re.IGNORECASE,
)

# Token shapes that are secret wherever they appear, whatever they are called.
_TOKENS = "|".join(
    [
        r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
        r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
        r"github_pat_[A-Za-z0-9_]{20,}",
        r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab personal access token
        r"gl(?:dt|rt|ptt|cbt|oas|ft|agent)-[A-Za-z0-9_-]{20,}",  # other GitLab tokens
        r"GR1348941[0-9A-Za-z_-]{20}",  # GitLab runner registration token
        r"npm_[A-Za-z0-9-]{36}",  # npm
        r"AIza[0-9A-Za-z_-]{35}",  # Google API key
        r"sk-[A-Za-z0-9_-]{20,}",  # OpenAI-style keys
        r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
        r"xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
        r"(?:AKIA|ASIA)[A-Z0-9]{16}",  # AWS access key id
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",  # SendGrid
        r"SK[0-9a-fA-F]{32}",  # Twilio
        r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}",  # PyPI upload token
        r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}",  # JWT
    ]
)
# The name part of ``name = value``: a word that says it holds a secret.
_KEY_WORD = (
    r"[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|passphrase|_pwd|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|account[_-]?key|credential|sessionid|session[_-]?id|auth[_-]?key|authorization|cookie)"
    r"[A-Za-z0-9_.-]*|[A-Za-z0-9_.-]*[_.-]pass"
)
_QUOTED_VALUE = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
_BARE_VALUE = r"[^\s'\",;&}<>]{3,}"
_PEM_END = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM = (
    rf"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:{_PEM_END}|\Z)"
    rf"|(?:^[A-Za-z0-9+/=]{{16,}}\r?\n)+{_PEM_END}"  # its top cut away
)
_PEM_RE = re.compile(_PEM, re.MULTILINE)
_SECRETS = re.compile(
    rf"(?<![A-Za-z0-9_-])(?P<token>(?-i:{_TOKENS}))(?![A-Za-z0-9_-])"
    # Authorization: Bearer x / token x / Basic x; Cookie: a=b; c=d (the whole value)
    r"|(?P<hname>\b(?:proxy-)?authorization|\b(?:set-)?cookie|\bx-[a-z-]*(?:token|key|secret))(?P<hsep>\s*[:=]\s*)"
    r"(?P<hvalue>[^\n\"']+)"
    r"|(?P<scheme>\b(?:bearer|basic))(?P<ssep>\s+)(?P<svalue>[A-Za-z0-9._~+/=-]{8,})"
    # scheme://user:password@host, the user part possibly empty
    r"|(?P<url>\b[a-z][a-z0-9+.-]*://[^/\s:@]*):(?P<upass>[^@\s]+)@(?=[^\s@]*(?:\s|$))"
    # --password X, --api-key=X
    rf"|(?P<flag>(?<![\w-])--?(?:{_KEY_WORD}))(?P<fsep>=|[ \t]+)(?P<fvalue>{_QUOTED_VALUE}|[^\s\"'-]\S*)"
    # KEY=v, key: v, "key": "v", 'key': 'v': any name here, and _swap keeps the value unless the
    # name says secret (a keyword list inside the pattern would be tried at every letter of a word)
    r"|(?P<name>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]{2,})(?P<close>[\"']?)(?P<sep>[ \t]*[=:][ \t]*)"
    rf"(?P<value>{_QUOTED_VALUE}|{_BARE_VALUE})",
    re.IGNORECASE | re.MULTILINE,
)
_SECRET_KEY = re.compile(_KEY_WORD, re.IGNORECASE)
_OTHER_HOMES = re.compile(r"(?<![\w.~-])(?:/home|/Users|[A-Za-z]:\\Users)[/\\](?!<user>)[^/\\\s:'\"]+")


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like tokens, keys or passwords."""
    return bool(_SECRET_NAME.search(name))


def _quoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[0] + REDACTED + value[0]
    return REDACTED


def _swap(m: re.Match[str]) -> str:
    if m["token"] is not None:
        return REDACTED
    if m["hname"] is not None:
        scheme = re.match(r"(?i)(bearer|basic|token|digest)\s+", m["hvalue"])
        return m["hname"] + m["hsep"] + (scheme.group(0) if scheme else "") + REDACTED
    if m["scheme"] is not None:
        if m["svalue"].isalpha() and m["svalue"].islower():
            return m.group(0)  # prose ("basic configuration"), not a credential
        return m["scheme"] + m["ssep"] + REDACTED
    if m["url"] is not None:
        return f"{m['url']}:{REDACTED}@"
    if m["flag"] is not None:
        return m["flag"] + m["fsep"] + _quoted(m["fvalue"])
    if _SECRET_KEY.fullmatch(m["name"]):
        return m["name"] + m["close"] + m["sep"] + _quoted(m["value"])
    # an ordinary name: its value may still hold a token or a URL with a password
    return m["name"] + m["close"] + m["sep"] + _SECRETS.sub(_swap, m["value"])


# Something every secret shape above contains, lower-cased: only lines holding one are looked at
# again. (One pass of plain alternatives over the lower-cased text is several times faster than
# the full pattern, whose case-insensitive name part is tried at every word.) "pass" counts only
# as the secret words have it (passwd, password, passphrase, db_pass): probe results and
# checklists say "pass" and "passed" on almost every line of a bug.
_TRIGGER = re.compile(
    r"token|secret|passw|passphrase|[_.-]pass|pwd|key|auth|cookie|session|credential|bearer|basic|://|"
    r"github_pat|glpat|xox|"
    r"hf_|gh[pousr]_|gl[a-z]{2,5}-|gr1348941|npm_|aiza|[sr]k[-_]|akia|asia|sg\.|sk[0-9a-f]|pypi-|eyj"
)


@functools.cache
def _screens() -> tuple[Any, Any]:
    """The trigger as RE2 runs it, as written and ignoring case: one linear pass over the text,
    where Python's engine tries each alternative at every position (twenty times slower on a KB).
    """
    import re2

    return re2.compile(_TRIGGER.pattern), re2.compile(f"(?i:{_TRIGGER.pattern})")


def _suspect_lines(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of every line of ``text`` that holds a trigger (ascending, once each)."""
    lower = text.lower()
    exact, any_case = _screens()
    # lower() may change a string's length (a few letters outside ASCII); then search it as it is
    hits = exact.finditer(lower) if len(lower) == len(text) else any_case.finditer(text)
    done = 0
    for hit in hits:
        if hit.start() < done:
            continue  # on a line already handed out
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.end())
        done = len(text) if end < 0 else end
        yield start, done


def redact_secrets(text: str) -> str:
    """``text`` with every secret-looking span replaced by ``<redacted>``."""
    if "PRIVATE KEY" in text:
        text = _PEM_RE.sub(REDACTED, text)
    parts: list[str] = []
    done = 0
    for start, end in _suspect_lines(text):
        parts += [text[done:start], _SECRETS.sub(_swap, text[start:end])]
        done = end
    parts.append(text[done:])
    return "".join(parts)


def find_secrets(text: str) -> list[tuple[int, str]]:
    """``(line number, what)`` for every secret-looking span in ``text`` (for ``kbgen validate``)."""
    found = []
    if "PRIVATE KEY" in text:  # in both of the key block's shapes
        found = [(text.count("\n", 0, m.start()) + 1, _KINDS["pem"]) for m in _PEM_RE.finditer(text)]
    for start, end in _suspect_lines(text):
        for m in _SECRETS.finditer(text, start, end):
            kind = next(k for k in ("token", "hname", "scheme", "url", "flag", "name") if m[k] is not None)
            line = text.count("\n", 0, m.start()) + 1
            if kind == "name" and not _SECRET_KEY.fullmatch(m["name"]):
                # an ordinary name: only what its value holds counts
                found.extend((line, what) for _, what in find_secrets(m["value"]))
                continue
            words = (m.group(0) if kind == "token" else m.group(m.lastindex or 0)).split()
            value = words[-1] if words else ""
            if REDACTED in m.group(0) or _swap(m) == m.group(0) or _placeholder(value):
                continue  # already redacted, prose, or a value that only names a secret
            found.append((line, _KINDS[kind]))
    return sorted(set(found))


_KINDS = {
    "pem": "a private key",
    "token": "an access token",
    "hname": "a credential in a header",
    "scheme": "an authorization token",
    "url": "a password in a URL",
    "flag": "a secret on a command line",
    "name": "a secret in a name = value pair",
}


def _placeholder(value: str) -> bool:
    """Values that name a secret rather than hold one (``$HF_TOKEN``, ``<token>``, ``***``)."""
    bare = value.strip("'\"")
    return (
        not bare or bare[0] in "$<{*%" or bare.lower() in ("none", "null", "true", "false", "xxx", "redacted")
    )


def redact_text(text: str, *, paths: bool = True, home: str | None = None, user: str | None = None) -> str:
    """Scrub secrets; with ``paths``, every user's home folder → ``~``, this user's name → ``<user>``."""
    text = redact_secrets(text)
    if paths:
        text = redact_paths(text, home=home, user=user)
    return text


def redact_paths(text: str, *, home: str | None = None, user: str | None = None) -> str:
    """Replace home folders (this user's and anyone's) with ``~`` and the user's name with ``<user>``."""
    home = home if home is not None else str(Path.home())
    user = user if user is not None else _user_name()
    if home and home not in ("/", ""):
        text = text.replace(home.rstrip("/"), "~")
    text = _OTHER_HOMES.sub("~", text)
    if user and len(user) >= 3 and user != "root":
        text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(user)}(?![A-Za-z0-9_])", "<user>", text)
    return text


def cut_head(text: str, limit: int, *, mark: str = "…") -> str:
    """The first ``limit`` characters of ``text`` (its secrets already redacted), ending at a word end."""
    if len(text) <= limit:
        return text
    kept = text[: max(0, limit - len(mark))]
    if not text[len(kept)].isspace():  # the cut falls inside a word: drop the word's start
        kept = kept[: max((kept.rfind(c) for c in " \t\n"), default=-1) + 1]
    return kept.rstrip() + mark


def cut_tail(text: str, limit: int, *, mark: str = "…") -> str:
    """The last ``limit`` characters of ``text`` (its secrets already redacted), starting at a line."""
    if len(text) <= limit:
        return text
    kept = text[len(text) - max(0, limit - len(mark)) :]
    newline = kept.find("\n")
    if newline >= 0 and text[len(text) - len(kept) - 1] != "\n":
        kept = kept[newline + 1 :]  # the cut falls inside a line: drop the rest of it
    return mark + kept


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER", "")
