"""Each kind of credential is redacted wherever it sits in a log, and the log around it is not.

The samples (tests/redact_samples.py) are fake secrets built at run time, in the text that shows
them in practice: a shell trace, a config file, a tool's own message.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbgen.redact import REDACTED, find_secrets, redact_text
from redact_samples import KINDS, leaks, sample

# What surrounds the secrets: every line must come out exactly as it went in.
ORDINARY = (
    "torch 2.5.1+cu124, CUDA 12.4, driver 550.54.15, cuDNN 90100, NCCL 2.21.5\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    '  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _call_impl\n'
    "frame #3: <unknown function> + 0x7f3a2c0010a0 (0x7f3a2c0010a0 in /usr/lib64/libcuda.so.1)\n"
    "HEAD is now at 4f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f fix loss scaling\n"
    "checkpoint saved to s3://ckpts/run-42/step_1000.pt, see https://pytorch.org/docs/stable/notes/cuda.html\n"
    "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; mkdir -p /tmp/run; ssh -p 2222 gpu-node-3\n"
    "docker run -p 8080:80 --gpus all img; author: Ann; oauth_provider: github; tokens/s=12840\n"
    "Login ok\nPassword expired for the old account; the token expired too\n"
    "wandb: Appending key for api.wandb.ai to your netrc file: /srv/ci/.netrc\n"
    "wandb: Run `wandb login` to sign in; wandb login failed: network unreachable\n"
)


def redact(text: str) -> str:
    return redact_text(text, home="/nonexistent", user="nobody")


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_secret_is_redacted_and_its_surroundings_kept(kind: str) -> None:
    found = sample(kind)
    out = redact(f"{ORDINARY}{found.text}\n{ORDINARY}")
    for secret in found.secrets:
        assert leaks(out, secret) == [], (secret, out)
    assert REDACTED in out
    for kept in found.kept:
        assert kept in out, (kept, out)
    assert out.startswith(ORDINARY) and out.endswith(ORDINARY)
    # kbgen validate finds each one, on its own line, and nothing in the ordinary lines
    text = f"{ORDINARY}{found.text}\n{ORDINARY}"
    lines = text.splitlines()
    holding = {n for n, line in enumerate(lines, 1) if any(secret in line for secret in found.secrets)}
    assert {line for line, _ in find_secrets(text)} == holding


def test_a_url_password_ends_at_the_last_at_before_the_host() -> None:
    out = redact("https://u:pa@ss@host.example/path?email=a@b.example x")
    assert out == f"https://u:{REDACTED}@host.example/path?email=a@b.example x"
    # a token used as the user name goes too
    token = "ghp_" + "Ab1" * 12
    out = redact(f"https://{token}:x-oauth-basic@github.com/org/repo.git")
    assert out == f"https://{REDACTED}:{REDACTED}@github.com/org/repo.git"


def test_a_token_is_found_by_its_prefix_not_by_word_boundaries() -> None:
    hf, ghp = "hf_" + "Ab1" * 12, "ghp_" + "Cd2" * 12
    out = redact(f"cache {hf}_readonly, flag --token-{ghp}, header x-{ghp}")
    assert out == f"cache {REDACTED}_readonly, flag --token-{REDACTED}, header x-{REDACTED}"
    # a short prefix inside a word, or a fixed-length key running on, is some other name
    key_id = "AKIA" + "ABCDEFGH23456723"
    text = f"/dev/disk-sk-{'a' * 24} /mnt/task_AKIA{'B' * 16} {key_id}Q"
    assert redact(text) == text
    assert redact(f"id {key_id} ok") == f"id {REDACTED} ok"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(max_size=300),
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**32),
    spot=st.floats(0, 1),
    gaps=st.tuples(st.sampled_from(" \n\t"), st.sampled_from(" \n\t")),
)
def test_a_secret_anywhere_in_random_text_never_survives(
    text: str, kind: str, seed: int, spot: float, gaps: tuple[str, str]
) -> None:
    found = sample(kind, seed)
    cut = int(len(text) * spot)
    mixed = text[:cut] + gaps[0] + found.text + gaps[1] + text[cut:]
    once = redact(mixed)
    for secret in found.secrets:
        assert secret not in once
    assert redact(once) == once


def test_a_header_after_another_value_loses_its_whole_credential() -> None:
    """On one line after '; ', the `name: value` rule reaches the header a character before the
    header rule does: the scheme word must not be all it takes."""
    token = "abcdefgh" + "ijklmnop1234"
    line = f"password: hunter2; Authorization: Bearer {token}"
    out = redact_text(line, user="")
    assert token not in out and "hunter2" not in out
    assert redact_text(out, user="") == out
