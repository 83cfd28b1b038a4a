"""Every secret shape kbgen is asked to keep out of records, pages and terminals."""

from __future__ import annotations

import pytest

from kbgen.redact import REDACTED, cut_head, cut_tail, find_secrets, redact_paths, redact_text

HF = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GLPAT = "glpat-" + "xY9zW8vU7tS6rQ5pO4nM"
AIZA = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAuV3x1q2w3e4r5t6y7u8i9o0pPaSsDdFfGgHhJjKkLlZzXxCc\n"
    "VvBbNnMm1a2s3d4f5g6h7j8k9l0QqWwEeRrTtYyUuIiOoPp==\n"
    "-----END RSA PRIVATE KEY-----"
)

# (text, the secret that must be gone, what must stay)
SHAPES = [
    ('{"password": "hunter2 with spaces"}', "hunter2", '"password": "<redacted>"'),
    (
        "{'AWS_SECRET_ACCESS_KEY': 'wJalrXUtnFEMI/K7MDENG/bPxRfiCY'}",
        "wJalrXUtnFEMI",
        "'AWS_SECRET_ACCESS_KEY': '",
    ),
    (
        "Authorization: token 0123456789abcdef0123456789abcdef01234567",
        "0123456789abcdef",
        "Authorization: token ",
    ),
    ("Authorization: Bearer abc.def-ghi_jkl", "abc.def", "Authorization: Bearer "),
    ("headers={'Authorization': 'token 0123456789abcdef'}", "0123456789abcdef", "'Authorization': '"),
    (
        "cache at redis://:s3cretpass@cache.internal:6379/0",
        "s3cretpass",
        "redis://:<redacted>@cache.internal",
    ),
    ("postgres://app:pa/ss/word@db:5432/x", "pa/ss", "postgres://app:<redacted>@db"),
    ("DB_PASSWORD=pa/ss/w0rd python train.py", "pa/ss", "DB_PASSWORD=<redacted> python"),
    ("mysql --user app --password Sup3rS3cret db", "Sup3rS3cret", "--password <redacted> db"),
    ("tool --api-key=abcd1234efgh run", "abcd1234efgh", "--api-key=<redacted> run"),
    (f"key file:\n{PEM}\nafter", "MIIEowIBAAKCAQEA", "after"),
    ("export DB_PASS=letmein99", "letmein99", "DB_PASS=<redacted>"),
    ("MYSQL_PWD=letmein99 mysql", "letmein99", "MYSQL_PWD=<redacted>"),
    ("Cookie: sessionid=abcdef123456; csrftoken=zzz", "abcdef123456", "Cookie: <redacted>"),
    ("set sessionid=abcdef123456 in the jar", "abcdef123456", "sessionid=<redacted>"),
    (f"//registry.npmjs.org/:_authToken={NPM}", NPM[4:], "_authToken="),
    (f"token {NPM} in .npmrc", NPM[4:], "in .npmrc"),
    (f"git clone https://oauth2:{GLPAT}@gitlab.com/x.git", GLPAT[6:], "gitlab.com/x.git"),
    (f"remote says {GLPAT} is revoked", GLPAT[6:], "is revoked"),
    (f"maps key {AIZA} quota", AIZA[4:], "quota"),
    (f"HF_TOKEN={HF}", HF[3:], "HF_TOKEN="),
    (f"downloading with {HF} now", HF[3:], "now"),
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "IOSFODNN7", "AWS_ACCESS_KEY_ID="),
    ("runner GR1348941abcdefghij0123456789 registered", "abcdefghij0123", "registered"),
    ("DefaultEndpointsProtocol=https;AccountKey=abcd1234efgh==;", "abcd1234efgh", "AccountKey="),
    ("GPG_PASSPHRASE='correct horse' gpg -d", "correct horse", "GPG_PASSPHRASE="),
    ("deploy --db-pass hunter22 now", "hunter22", "--db-pass <redacted> now"),
    ("smtp.pass: hunter22", "hunter22", "smtp.pass: <redacted>"),
]


@pytest.mark.parametrize(("text", "secret", "kept"), SHAPES, ids=[s[0][:30] for s in SHAPES])
def test_every_shape_is_redacted(text: str, secret: str, kept: str) -> None:
    out = redact_text(text, home="/nonexistent", user="nobody")
    assert secret not in out
    assert REDACTED in out
    assert kept in out


def test_a_private_key_cut_off_at_either_end_is_still_redacted() -> None:
    top = PEM.split("\n-----END")[0]  # the end of the log was cut
    bottom = PEM.split("\n", 1)[1]  # the start of the tail was cut
    for text in (top, bottom):
        out = redact_text(f"log\n{text}\nmore", paths=False)
        assert "MIIEowIBAAKCAQEA" not in out and "VvBbNnMm" not in out


def test_ordinary_log_text_is_left_alone() -> None:
    text = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "tests passed: 10, max_len=512, basic configuration loaded, author: Ann\n"
        "1. Shape checks at the top of `forward()`. They pass: predictions, targets, PWD=/tmp/run\n"
        "the token expired; see https://pytorch.org/docs/stable/notes/cuda.html\n"
    )
    assert redact_text(text, home="/nonexistent", user="nobody") == text
    assert find_secrets(text) == []


def test_home_folders_of_any_user_become_tilde() -> None:
    text = 'File "/home/alice/proj/train.py", line 3; /Users/bob/x.py; C:\\Users\\carol\\a.py; /data/home/x'
    out = redact_paths(text, home="/home/me", user="me")
    assert "alice" not in out and "bob" not in out and "carol" not in out
    assert '"~/proj/train.py"' in out and "~/x.py" in out and "/data/home/x" in out


def test_redact_then_cut_leaves_no_part_of_a_token() -> None:
    line = f"error while loading: HF_TOKEN is {HF} and the rest of a long line " + "x" * 50
    # A head cut that lands inside the token must not keep its recognisable start ...
    raw_cut = line[: line.index(HF) + 10]
    assert redact_text(raw_cut, paths=False).count(HF[:10]) == 1  # why cutting first leaks
    out = cut_head(redact_text(line, paths=False), line.index(HF) + 10)
    assert HF[:6] not in out and out.endswith("…")
    # ... nor a tail cut that starts inside it.
    tail = f"{HF}\nTraceback (most recent call last):\nValueError: boom"
    out = cut_tail(redact_text("x" * 100 + tail, paths=False), len(tail) - 5)
    assert HF[8:] not in out and out.endswith("ValueError: boom")
    # a cut into a bare token drops the partial word
    cut = cut_tail("x " + HF + "\nok", len(HF))
    assert HF[-8:] not in cut


def test_find_secrets_reports_lines_and_skips_placeholders() -> None:
    text = f"title: ok\npassword: $DB_PASSWORD\nnote: HF_TOKEN=<redacted>\nenv: {HF}\n"
    assert find_secrets(text) == [(4, "an access token")]


def test_probe_results_that_pass_are_not_secrets_but_a_password_among_them_is() -> None:
    text = (
        "findings:\n  - probe: gpu\n    status: pass\n    message: passed, sm_86\n"
        "progress:\n  - state: passed\n    evidence: DB_PASS=letmein99 was set\n"
    )
    assert find_secrets(text) == [(7, "a secret in a name = value pair")]
