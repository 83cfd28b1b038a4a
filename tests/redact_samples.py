"""Credentials as kbgen's users meet them in logs, configs and shell traces, one sample per kind.

Every secret is fake and built at run time from a seeded generator, so this repository holds no
string a secret scanner would flag. ``sample(kind, seed)`` gives the text, the secret values that
must never survive redaction, and fragments around them that must.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Sample:
    kind: str
    text: str
    secrets: tuple[str, ...]
    kept: tuple[str, ...]


class Fake:
    """Secret-shaped strings from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def alnum(self, n: int) -> str:
        # a letter, a digit, then any: every value looks generated, as real keys do
        return self.pick(string.ascii_uppercase, 1) + self.pick(string.digits, 1) + self.pick(ALNUM, n - 2)

    def hex(self, n: int) -> str:
        return self.pick("abcdef", 1) + self.pick("0123456789", 1) + self.pick("0123456789abcdef", n - 2)

    def password(self) -> str:
        return "Tr4" + self.alnum(9)


def _slack_app(f: Fake) -> Sample:
    token = "xapp-" + "1-A" + f.pick(string.digits, 10) + "-" + f.pick(string.digits, 13) + "-" + f.hex(64)
    text = f"slack_bolt: socket mode connect failed for {token}: invalid_auth (retrying in 5 s)"
    return Sample("slack-app-token", text, (token,), ("socket mode connect failed for", "invalid_auth"))


def _stripe_webhook(f: Fake) -> Sample:
    secret = "whsec_" + f.alnum(32)
    text = f"> Ready! Your webhook signing secret is {secret} (^C to quit)"
    return Sample("stripe-webhook-secret", text, (secret,), ("Your webhook signing", "(^C to quit)"))


def _url_password_with_at(f: Fake) -> Sample:
    password = "p@ss" + "@" + f.alnum(8)
    text = (
        f"fatal: unable to access 'https://deploy:{password}@git.example.com/org/repo.git/': "
        "The requested URL returned error: 403"
    )
    return Sample(
        "url-password-with-at", text, (password,), ("https://deploy:", "@git.example.com/org/repo.git/")
    )


def _aws_secret_after_space(f: Fake) -> Sample:
    key_id = "AKIA" + f.pick(string.ascii_uppercase + "234567", 16)
    first, second = f.alnum(30) + "/" + f.alnum(9), f.alnum(20) + "+" + f.alnum(19)
    text = (
        f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {first}\n"
        f"  AWS_SECRET_ACCESS_KEY    {second}   (from environment)"
    )
    return Sample(
        "aws-secret-after-space", text, (key_id, first, second), ("[default]", "(from environment)")
    )


def _curl_user(f: Fake) -> Sample:
    password = f.password()
    text = f"+ curl -sSf -u ci-bot:{password} -T model.pt https://artifacts.example.com/upload/"
    return Sample(
        "curl-user", text, (password,), ("-u ci-bot:", "-T model.pt https://artifacts.example.com/upload/")
    )


def _mysql_password(f: Fake) -> Sample:
    glued, named = f.password(), f.password()
    text = (
        f"+ mysqldump -h db.internal -u root -p{glued} --single-transaction runs > runs.sql\n"
        f"+ mysql --user=root --password={named} runs < schema.sql"
    )
    return Sample(
        "mysql-password", text, (glued, named), ("--single-transaction runs > runs.sql", "runs < schema.sql")
    )


def _sshpass(f: Fake) -> Sample:
    password = f.password()
    text = f"+ sshpass -p {password} ssh -p 2222 gpu-node-3 nvidia-smi"
    return Sample("sshpass", text, (password,), ("ssh -p 2222 gpu-node-3 nvidia-smi",))


def _netrc(f: Fake) -> Sample:
    key, password = f.hex(40), f.password()
    text = (
        f"machine api.wandb.ai\n  login user\n  password {key}\n"
        f"machine git.example.com login ci password {password}"
    )
    return Sample(
        "netrc", text, (key, password), ("machine api.wandb.ai", "machine git.example.com login ci")
    )


def _docker_auth(f: Fake) -> Sample:
    auth = base64.b64encode(f"ci-bot:{f.password()}".encode()).decode()
    text = '{"auths": {"registry.example.com": {"auth": "' + auth + '"}}, "credsStore": ""}'
    return Sample("docker-auth", text, (auth,), ('"registry.example.com"', '"credsStore": ""'))


def _slack_webhook(f: Fake) -> Sample:
    secret = f.alnum(24)
    url = f"https://hooks.slack.com/services/T{f.pick(string.ascii_uppercase, 8)}/B{f.alnum(10)}/{secret}"
    text = f"notify: POST {url} failed: 404 no_service"
    return Sample(
        "slack-webhook", text, (secret,), ("https://hooks.slack.com/services/", "failed: 404 no_service")
    )


def _discord_webhook(f: Fake) -> Sample:
    secret = f.alnum(30) + "-" + f.alnum(20) + "_" + f.alnum(16)
    text = f"discord notify -> https://discord.com/api/webhooks/{f.pick(string.digits, 18)}/{secret} (204)"
    return Sample("discord-webhook", text, (secret,), ("https://discord.com/api/webhooks/", "(204)"))


def _signed_urls(f: Fake) -> Sample:
    key_id, s3_signature, gcs_signature = (
        "AKIA" + f.pick(string.ascii_uppercase + "234567", 16),
        f.hex(64),
        f.hex(512),
    )
    text = (
        "GET https://ckpts.s3.amazonaws.com/run-42/step_1000.pt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential={key_id}%2F20251124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20251124T101500Z"
        f"&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={s3_signature} -> 403 Forbidden\n"
        "GET https://storage.googleapis.com/ckpts/step_1000.pt?X-Goog-Algorithm=GOOG4-RSA-SHA256"
        "&X-Goog-Date=20251124T101500Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host"
        f"&X-Goog-Signature={gcs_signature} -> 200 OK"
    )
    return Sample(
        "signed-url",
        text,
        (key_id, s3_signature, gcs_signature),
        ("X-Amz-Expires=3600", "X-Goog-Expires=900"),
    )


def _azure_sas(f: Fake) -> Sample:
    signature = f.alnum(40) + "%2B" + f.alnum(3) + "%3D"
    text = (
        "azcopy: https://acct.blob.core.windows.net/ckpt/model.pt?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2025-12-01T00:00:00Z&spr=https&sig={signature} : AuthenticationFailed"
    )
    return Sample("azure-sas", text, (signature,), ("sv=2022-11-02&ss=b", ": AuthenticationFailed"))


def _kubeconfig(f: Fake) -> Sample:
    cert, key, token = "LS0tLS1CRUdJTi" + f.alnum(60), "LS0tLS1CRUdJTi" + f.alnum(60), f.alnum(40)
    text = (
        "users:\n- name: ci\n  user:\n"
        f"    client-certificate-data: {cert}\n    client-key-data: {key}\n    token: {token}"
    )
    return Sample("kubeconfig", text, (cert, key, token), ("- name: ci", "client-key-data: "))


def _bash_ansi_c(f: Fake) -> Sample:
    single, double = f.password() + "\\t" + f.alnum(6), f.password()
    text = f"+ export API_TOKEN=$'{single}'\n+ DB_PASSWORD=$\"{double}\" python train.py"
    return Sample("bash-ansi-c-quoting", text, (single, double), ("export API_TOKEN=$'", "python train.py"))


def _wandb(f: Fake) -> Sample:
    printed, exported, typed = f.hex(40), f.hex(40), f.hex(40)
    text = (
        "wandb: Appending key for api.wandb.ai to your netrc file: /srv/ci/.netrc\n"
        f"wandb: API key: {printed}\n+ WANDB_API_KEY={exported} python train.py\n+ wandb login {typed}"
    )
    return Sample(
        "wandb-key",
        text,
        (printed, exported, typed),
        ("wandb: Appending key for api.wandb.ai to your netrc file: /srv/ci/.netrc", "wandb: API key: "),
    )


def _github_after_dash(f: Fake) -> Sample:
    flag, header = "ghp_" + f.alnum(36), "ghp_" + f.alnum(36)
    text = f"runner: registering with --token-{flag} failed\nremote: header x-{header} rejected"
    return Sample("github-token-after-dash", text, (flag, header), ("--token-", "rejected"))


def _hf_with_suffix(f: Fake) -> Sample:
    token = "hf_" + f.alnum(34)
    text = f"snapshot_download(repo_id='org/model') with {token}_readonly credential"
    return Sample(
        "hf-token-with-suffix", text, (token,), ("snapshot_download(repo_id='org/model')", "_readonly")
    )


BUILDERS: dict[str, Callable[[Fake], Sample]] = {
    build(Fake(0)).kind: build
    for build in (
        _slack_app,
        _stripe_webhook,
        _url_password_with_at,
        _aws_secret_after_space,
        _curl_user,
        _mysql_password,
        _sshpass,
        _netrc,
        _docker_auth,
        _slack_webhook,
        _discord_webhook,
        _signed_urls,
        _azure_sas,
        _kubeconfig,
        _bash_ansi_c,
        _wandb,
        _github_after_dash,
        _hf_with_suffix,
    )
}
KINDS = sorted(BUILDERS)


def sample(kind: str, seed: int = 1) -> Sample:
    return BUILDERS[kind](Fake(seed))


def leaks(text: str, secret: str) -> list[str]:
    """The pieces of ``secret`` (any 8 characters in a row) still in ``text``."""
    width = min(8, len(secret))
    pieces = {secret[i : i + width] for i in range(len(secret) - width + 1)}
    return sorted(piece for piece in pieces if piece in text)
