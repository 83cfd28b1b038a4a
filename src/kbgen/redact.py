"""Keep secrets and personal paths out of everything kbgen writes or prints.

Environment variables whose *names* look like credentials are replaced wholesale; free text
(log excerpts, probe output, notes, imported reports) is scrubbed of well-known token shapes,
private-key blocks, credentials in URLs, headers, command lines and ``.netrc`` lines, webhook
URLs, signed-URL signatures, and ``name = value`` pairs whose name says secret (``KEY=v``,
``"key": "v"``, ``API key: v``, ``AWS_SECRET_ACCESS_KEY v`` when v looks generated).

The token shapes follow the pattern set of detect-secrets' plugins (AWS, GitHub, GitLab, npm,
Google, Slack, Stripe, SendGrid, Twilio, PyPI, JWT, private keys, keywords, basic-auth URLs),
with the additions kbgen's users meet (Hugging Face, OpenAI). They are compiled into one RE2
alternation: a multi-megabyte log is walked once, and no line, however hostile, makes the walk
slower than linear. RE2 has no lookarounds, so a shape that must not follow a letter takes the
character before it into the match (``pre``), and :func:`_swap` puts it back.

Redact before cutting text short: :func:`cut_head` and :func:`cut_tail` do both, and drop the
word the cut lands in so that no token survives with its recognisable prefix cut away.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
from pathlib import Path
from typing import Any

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|(^|_)PASS$|_PWD$|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"AUTH|COOKIE|SESSION|_KEY$|^KEY$|_PAT$|WEBHOOK|DSN$)",
    re.IGNORECASE,
)

# Token shapes with a prefix no ordinary word has: secret wherever they start, even joined to a
# name by - or _ (``--token-ghp_…``), and whatever follows them (``hf_…_suffix``).
_TOKENS = "|".join(
    [
        r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
        r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
        r"github_pat_[A-Za-z0-9_]{20,}",
        r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab personal access token
        r"gl(?:dt|rt|ptt|cbt|oas|ft|agent)-[A-Za-z0-9_-]{20,}",  # other GitLab tokens
        r"GR1348941[0-9A-Za-z_-]{20,}",  # GitLab runner registration token
        r"npm_[A-Za-z0-9-]{36,}",  # npm
        r"AIza[0-9A-Za-z_-]{35,}",  # Google API key
        r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[A-Za-z0-9+/=]{20,}",  # Stripe
        r"(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{10,}",  # Slack
        r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}",  # PyPI upload token
        r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}",  # JWT
    ]
)
# Shapes whose prefix is short or reads as a word (``disk-``, ``EAST_ASIA``): only at a word start.
_WORD_TOKENS = "|".join(
    [
        r"sk-[A-Za-z0-9_-]{20,}",  # OpenAI-style keys
        r"(?:AKIA|ASIA)[A-Z0-9]{16,}",  # AWS access key id
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43,}",  # SendGrid
        r"SK[0-9a-fA-F]{32,}",  # Twilio
    ]
)
# The shapes of a fixed length: one that runs on into more of its own characters is something
# else (a longer identifier), and _swap leaves it alone. RE2 cannot say "not followed by".
_FIXED = re.compile(
    r"GR1348941[0-9A-Za-z_-]{20}|npm_[A-Za-z0-9-]{36}|AIza[0-9A-Za-z_-]{35}|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|SK[0-9a-fA-F]{32}"
)
_FIXED_PREFIXES = ("GR1348941", "npm_", "AIza", "AKIA", "ASIA", "SG.", "SK")
# The shortest any shape above can be (xoxb- and ten more): a shorter name holds none.
_SHORTEST_TOKEN = 15
# The name part of ``name = value``: a word that says it holds a secret. Two-word names
# (``API key``, ``access key``) may be written with a space, as tools print them.
_KEY_WORD = (
    r"[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|passphrase|_pwd|api[ _-]?key|apikey|access[ _-]?key|"
    r"private[ _-]?key|account[ _-]?key|credential|sessionid|session[_-]?id|auth[ _-]?key|authorization|"
    r"cookie|[_.-]key[_-]?data|[_.-]cert(?:ificate)?[_-]?data)[A-Za-z0-9_.-]*|[A-Za-z0-9_.-]*[_.-]pass"
)
# ``auth`` alone names a credential only as a whole name (``"auth": …``, ``_auth=``, ``basic_auth:``),
# never inside one (``author``, ``oauth_provider``), and only in name = value pairs, not flags.
_AUTH_NAME = r"(?:[A-Za-z0-9_.-]*[_.-])?auth"
# '…', "…", and bash's $'…' and $"…"
_QUOTED_VALUE = r"\$?(?:\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')"
_BARE_VALUE = r"[^\s'\",;&}<>]{3,}"
# a word of a command line: quoted, or anything up to a space or quote that is not an option
_ARG = rf"(?:{_QUOTED_VALUE}|[^\s\"'-][^\s\"']*)"
# the rest of a command up to an option: stays inside the command (no | ; & or new line)
_REST = r"[ \t](?:[^\n|;&]*?[ \t])??"
_PEM_END = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM = (
    rf"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:{_PEM_END}|\z)"
    rf"|(?m:^[A-Za-z0-9+/=]{{16,}}\r?\n)+{_PEM_END}"  # its top cut away
)
_SECRETS = "|".join(
    [
        rf"(?P<tpre>^|[^A-Za-z0-9])(?P<token>(?-i:{_TOKENS}))",
        rf"(?P<wpre>^|[^A-Za-z0-9_-])(?P<wtoken>(?-i:{_WORD_TOKENS}))",
        # https://hooks.slack.com/services/…, discord.com/api/webhooks/…: the URL is the secret
        r"(?P<hook>\b(?:hooks\.slack\.com/(?:services|workflows|triggers)|discord(?:app)?\.com/api/webhooks"
        r"|webhook\.office\.com/webhookb2)/)(?P<hookpath>[^\s'\"<>]+)",
        # ?X-Amz-Signature=…, Azure's &sig=…: what signs a URL is as good as a password
        r"(?P<query>[?&;](?:x-(?:amz|goog)-(?:signature|credential)|sig|signature)=)(?P<qvalue>[^\s&#'\"<>]+)",
        # Authorization: Bearer x / token x / Basic x; Cookie: a=b; c=d (the whole value)
        r"(?P<hname>\b(?:proxy-)?authorization|\b(?:set-)?cookie|\bx-[a-z-]*(?:token|key|secret))"
        r"(?P<hsep>[ \t]*[:=][ \t]*)(?P<hvalue>[^\n\"']+)",
        r"(?P<scheme>\b(?:bearer|basic)[ \t]+)(?P<svalue>[A-Za-z0-9._~+/=-]{8,})",
        # scheme://user:password@host: the password runs to the last @ before the host
        r"(?P<url>\b[a-z][a-z0-9+.-]*://)(?P<user>[^/\s:@]*):(?P<upass>[^\s@]+(?:@[^\s@/?#]*)*)@",
        # curl -u user:password
        r"(?P<upre>\bcurl"
        + _REST
        + r"(?-i:-u|-U|--user|--proxy-user)(?:[ \t]+|=)?['\"]?[^\s:'\"]*:)(?P<upw>[^\s'\"]+)",
        # options whose value is a password only for their own command: mysql -pPW, sshpass -p PW
        r"(?P<cpre>\b(?:(?:mysql[a-z]*|mariadb[a-z-]*)"
        + _REST
        + r"(?-i:-p)|(?:sshpass|mongo|mongosh)"
        + _REST
        + r"(?-i:-p)[ \t]*|redis-cli"
        + _REST
        + r"(?-i:-a)[ \t]+)"
        + rf")(?P<cvalue>{_ARG})"
        # wandb login KEY: a key's shape, since wandb's own messages say "wandb login" too
        + r"|(?P<lpre>\bwandb[ \t]+login"
        + _REST
        + r")(?P<lkey>(?:local-)?[0-9a-f]{40}\b)",
        # .netrc: machine h login u password p, on one line or several (as wandb writes it); its
        # words are lower case, where a log's sentences start with a capital ("Login ok")
        r"(?P<npre>(?-i:(?:\b(?:login|machine|account)[ \t]+\S+(?:[ \t]+|[ \t]*\r?\n[ \t]*)|\bdefault[ \t]+)"
        r"password)[ \t]+)(?P<nvalue>\S+)",
        # --password X, --api-key=X
        rf"(?P<fpre>^|[^\w-])(?P<flag>--?(?:{_KEY_WORD}))(?P<fsep>=|[ \t]+)(?P<fvalue>{_ARG})",
        # KEY=v, key: v, "key": "v", 'key': 'v'
        rf"(?P<kpre>^|[^A-Za-z0-9_.-])(?P<name>{_KEY_WORD}|{_AUTH_NAME})(?P<close>[\"']?)"
        # (a header's scheme word is part of the value: "x; Authorization: Bearer t" starts here,
        # one character before the header rule above would)
        rf"(?P<sep>[ \t]*[=:][ \t]*)(?P<value>(?:(?:bearer|basic|token|digest)[ \t]+)?"
        rf"(?:{_QUOTED_VALUE}|{_BARE_VALUE}))",
        # AWS_SECRET_ACCESS_KEY wJalr…: after a space, only a value that looks generated
        rf"(?P<gpre>^|[^A-Za-z0-9_.-])(?P<gname>{_KEY_WORD})(?P<gsep>[ \t]+)(?P<gvalue>[A-Za-z0-9+/=]{{16,}})"
        r"(?P<gtail>\S*)",
    ]
)

_OTHER_HOMES = re.compile(r"(?<![\w.~-])(?:/home|/Users|[A-Za-z]:\\Users)[/\\](?!<user>)[^/\\\s:'\"]+")
# the scheme word a header's value starts with, kept in front of the redacted credential
_HEADER_SCHEME = re.compile(r"(?i)(bearer|basic|token|digest)[ \t]+")


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like tokens, keys or passwords."""
    return bool(_SECRET_NAME.search(name))


@functools.cache
def _patterns() -> tuple[Any, Any, dict[str, int]]:
    """The secret shapes and the private-key block as RE2 runs them (compiled on first use), and
    the index of each group of the first."""
    import re2

    options = re2.Options()
    options.max_mem = 64 << 20  # room for the DFA of a large alternation, so it never falls back
    secrets = re2.compile(f"(?im){_SECRETS}", options)
    return secrets, re2.compile(_PEM, options), dict(secrets.groupindex)


class _Groups:
    """A match's groups by name, "" for those of other branches. (The binding's ``m["name"]``
    rebuilds its table of names on every call, and ``m.groups()`` reads all forty groups.)"""

    __slots__ = ("index", "match")

    def __init__(self, match: Any, index: dict[str, int]) -> None:
        self.match, self.index = match, index

    def __getitem__(self, name: str) -> str:
        return str(self.match[self.index[name]] or "")


def _scan(text: str, found: list[str] | None) -> str:
    """``text`` with its secrets replaced; the kind of each one replaced is added to ``found``."""
    secrets, _, index = _patterns()
    return str(secrets.sub(lambda m: _swap(_Groups(m, index), m.group(0), found), text))


def _swap(m: _Groups, whole: str, found: list[str] | None) -> str:
    """What replaces one match (``m``, its groups; ``whole``, all of it): the secret hidden, the
    rest kept, and scanned again where a name or a user part can hold a token of its own."""

    def hide(kind: str, value: str) -> str:
        if found is not None and REDACTED not in value and not _placeholder(value):
            found.append(kind)
        return _quoted(value)

    def scan(part: str) -> str:
        return _scan(part, found) if len(part) >= _SHORTEST_TOKEN else part

    if m["name"]:  # the commonest in logs first
        return m["kpre"] + scan(m["name"]) + m["close"] + m["sep"] + hide("name", m["value"])
    if m["token"] or m["wtoken"]:
        pre, token = (m["tpre"], m["token"]) if m["token"] else (m["wpre"], m["wtoken"])
        if token.startswith(_FIXED_PREFIXES) and not _FIXED.fullmatch(token):
            return whole  # longer than the key it starts like: another identifier
        return pre + hide("token", token)
    if m["url"]:
        return m["url"] + scan(m["user"]) + ":" + hide("url", m["upass"]) + "@"
    if m["flag"]:
        return m["fpre"] + scan(m["flag"]) + m["fsep"] + hide("flag", m["fvalue"])
    if m["hname"]:
        scheme = _HEADER_SCHEME.match(m["hvalue"])
        return m["hname"] + m["hsep"] + (scheme.group(0) if scheme else "") + hide("hname", m["hvalue"])
    if m["scheme"]:
        if m["svalue"].isalpha() and m["svalue"].islower():
            return whole  # prose ("basic configuration"), not a credential
        return m["scheme"] + hide("scheme", m["svalue"])
    if m["hook"]:
        return m["hook"] + hide("hook", m["hookpath"])
    if m["query"]:
        return m["query"] + hide("query", m["qvalue"])
    if m["upre"]:
        return scan(m["upre"]) + hide("cmd", m["upw"])
    if m["cpre"]:
        return scan(m["cpre"]) + hide("cmd", m["cvalue"])
    if m["lpre"]:
        return scan(m["lpre"]) + hide("cmd", m["lkey"])
    if m["npre"]:
        return scan(m["npre"]) + hide("netrc", m["nvalue"])
    # a secret's name, a space, and a word: a secret only if the word looks generated
    value = m["gvalue"] + m["gtail"]
    kept = m["gpre"] + scan(m["gname"]) + m["gsep"]
    return kept + (hide("name", value) if not m["gtail"] and _generated(value) else scan(value))


def _generated(word: str) -> bool:
    """A word made of both letters and digits and not a hex address: what keys look like."""
    has_digit, has_letter = any(c.isdigit() for c in word), any(c.isalpha() for c in word)
    return has_digit and has_letter and word[:2].lower() != "0x"


def _quoted(value: str) -> str:
    """``<redacted>`` in the quotes ``value`` had (``'…'``, ``"…"``, bash's ``$'…'``)."""
    dollar = "$" if value[:1] == "$" and value[1:2] in ("'", '"') else ""
    inner = value[len(dollar) :]
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return dollar + inner[0] + REDACTED + inner[0]
    return REDACTED


def redact_secrets(text: str) -> str:
    """``text`` with every secret-looking span replaced by ``<redacted>``."""
    text = _encodable(text)
    if "PRIVATE KEY" in text:
        text = str(_patterns()[1].sub(REDACTED, text))
    return _scan(text, None)


def find_secrets(text: str) -> list[tuple[int, str]]:
    """``(line number, what)`` for every secret-looking span in ``text`` (for ``kbgen validate``)."""
    text = _encodable(text)
    secrets, pem, index = _patterns()
    found = []
    if "PRIVATE KEY" in text:  # in both of the key block's shapes
        line, counted = 1, 0
        for m in pem.finditer(text):
            line, counted = line + text.count("\n", counted, m.start()), m.start()
            found.append((line, _KINDS["pem"]))
    line, counted = 1, 0
    for m in secrets.finditer(text):
        kinds: list[str] = []
        _swap(_Groups(m, index), m.group(0), kinds)
        if kinds:
            # each match ends with its secret (it may start on a line before); lines are counted
            # on from the last match, never from the top again
            line, counted = line + text.count("\n", counted, m.end() - 1), m.end() - 1
            found.extend((line, _KINDS[kind]) for kind in kinds)
    return sorted(set(found))


_KINDS = {
    "pem": "a private key",
    "token": "an access token",
    "hname": "a credential in a header",
    "scheme": "an authorization token",
    "url": "a password in a URL",
    "hook": "a webhook URL",
    "query": "a signature in a URL",
    "cmd": "a credential on a command line",
    "netrc": "a password in a .netrc line",
    "flag": "a secret on a command line",
    "name": "a secret in a name = value pair",
}


def _placeholder(value: str) -> bool:
    """Values that name a secret rather than hold one (``$HF_TOKEN``, ``<token>``, ``***``)."""
    words = value.split()
    value = words[-1] if words else ""
    if value[:2] in ("$'", '$"'):
        value = value[1:]  # bash's $'…' quotes a literal
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


def _encodable(text: str) -> str:
    """``text`` as UTF-8 (and so RE2) can carry it: a lone surrogate, which is how Python hands
    over an undecodable byte of a command-line argument, becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")
