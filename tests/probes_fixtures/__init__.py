"""Probe files for tests: real Python code run by real child processes."""

from __future__ import annotations

import textwrap

#: The built-in probes `kbgen probe` runs when no ids are given, in the order it runs them.
DEFAULT_PROBES = ("system", "cpu", "packages", "torch-build", "gpu", "compat", "cuda-smoke", "debug-env")
#: Every built-in probe: the default ones and those run only when asked for.
BUILTIN_PROBES = frozenset(
    {*DEFAULT_PROBES, "import-timing", "build-env", "host-memory", "crash-tools", "dist-env", "peer-access"}
)


def probe_file(
    probe_id: str, body: str, *, needs: str = "[]", timeout: float = 20, default: bool = False
) -> str:
    """A project probe file whose ``run()`` has ``body`` (indented for you)."""
    return (
        f'PROBE = {{"id": "{probe_id}", "title": "Test probe {probe_id}", "needs": {needs}, '
        f'"timeout": {timeout}, "default": {default}}}\n\n\n'
        "def run():\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"
    )


PASS = 'return {"status": "pass", "message": "all good", "facts": {"answer": 42}}'
SIGILL = "import os, signal\nos.kill(os.getpid(), signal.SIGILL)"
SEGFAULT = 'import ctypes\nctypes.string_at(0)\nreturn {"status": "pass", "message": "unreachable"}'
HANG = "import time\nwhile True:\n    time.sleep(1)"
GARBAGE = """
print("this is not JSON {{{")
import os
os.write(1, b"\\x00\\xff raw bytes\\n")
return {"status": "pass", "message": "printed junk", "facts": {}}
"""
RAISES = 'raise ValueError("label 7 out of range for 5 classes")'
