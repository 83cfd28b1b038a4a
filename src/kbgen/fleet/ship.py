"""Probe a node that has no kbgen: ship kbgen's probe runner and the probe files with the task.

The runner (``kbgen.probes.runner`` and what it imports) uses the standard library only, so it
travels as a zip inside a small program that the node's Python reads on stdin. On the node it
runs the probes exactly as ``kbgen probe`` does (each in its own process, torch imported once,
crashes and hangs become results) and prints the plain run record; the report is built here by
the same code as a local run, redaction included.
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from kbgen.errors import KbgenError
from kbgen.probes.build import build_report
from kbgen.probes.discovery import TORCH_NEEDS
from kbgen.probes.record import ProbeRun, RawResult

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.report import ProbeReport

PACKAGE = Path(__file__).resolve().parent.parent
#: kbgen's files the runner needs on the node (all standard library)
RUNNER_FILES = (
    "__init__.py",
    "errors.py",
    "probes/__init__.py",
    "probes/runner.py",
    "probes/process.py",
    "probes/record.py",
    "probes/worker.py",
)
MARK = "@@kbgen-run@@ "

_PROGRAM = """\
import base64, dataclasses, io, json, os, shutil, socket, sys, tempfile, zipfile

BUNDLE = {bundle!r}
SPECS = {specs!r}
TORCH_NEEDS = {torch_needs!r}


class Meta:
    def __init__(self, needs, timeout):
        self.needs, self.timeout = needs, timeout


class Spec:
    def __init__(self, home, item):
        self.id, self.path = item["id"], os.path.join(home, "probes-shipped", item["file"])
        self.meta = Meta(item["needs"], item["timeout"])
        self.uses_torch = any(need in TORCH_NEEDS for need in item["needs"])


def main():
    home = tempfile.mkdtemp(prefix="kbgen-ship-")
    try:
        zipfile.ZipFile(io.BytesIO(base64.b64decode(BUNDLE))).extractall(home)
        sys.path.insert(0, home)
        from kbgen.probes.runner import ProbeSession

        specs = [Spec(home, item) for item in SPECS]
        session = ProbeSession(None, torch=any(s.uses_torch for s in specs))
        try:
            run = session.run(specs)
        finally:
            session.close()
        host = os.environ.get("KBGEN_HOSTNAME") or socket.gethostname()
        record = {{"host": host, "run": dataclasses.asdict(run)}}
        # base64 in short lines: launchers (srun --label) cut long lines into pieces
        payload = base64.b64encode(json.dumps(record, default=str).encode()).decode()
        for start in range(0, len(payload), 400):
            print({mark!r} + payload[start : start + 400])
        sys.stdout.flush()
    finally:
        shutil.rmtree(home, ignore_errors=True)


main()
"""


def bundle(specs: list[ProbeSpec]) -> bytes:
    """A zip of the runner and the probe files ``specs`` name."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel in RUNNER_FILES:
            archive.write(PACKAGE / rel, f"kbgen/{rel}")
        for spec in specs:
            archive.write(spec.path, f"probes-shipped/{spec.id}.py")
    return data.getvalue()


def program(specs: list[ProbeSpec]) -> str:
    """The Python program a node runs (``python3 -`` with this on stdin)."""
    items = [
        {"id": s.id, "file": f"{s.id}.py", "needs": list(s.meta.needs), "timeout": s.meta.timeout}
        for s in specs
    ]
    return _PROGRAM.format(
        bundle=base64.b64encode(bundle(specs)).decode("ascii"),
        specs=items,
        torch_needs=sorted(TORCH_NEEDS),
        mark=MARK,
    )


def report_from_output(out: str, specs: list[ProbeSpec], origin: str) -> ProbeReport:
    """The report of a shipped run, from what the node printed."""
    payload = "".join(x[len(MARK) :].strip() for x in out.splitlines() if x.startswith(MARK))
    if not payload:
        raise KbgenError(f"{origin}: the shipped probes printed no result")
    try:
        data = json.loads(base64.b64decode(payload, validate=True))
        raw = data["run"]
        results = {key: RawResult(**value) for key, value in raw.pop("results").items()}
        run = ProbeRun(**raw, results=results)
        host = str(data["host"])
    except (ValueError, KeyError, TypeError) as exc:  # binascii.Error is a ValueError
        raise KbgenError(f"{origin}: the shipped probes printed a result kbgen cannot read: {exc}") from None
    return build_report(run, specs, host=host)
