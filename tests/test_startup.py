"""kbgen starts fast: `kbgen --help` and `kbgen --version` load no heavy library, and never torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import PATIENCE

HEAVY = ["torch", "pydantic", "mkdocs", "material", "rich", "jinja2", "yaml", "ruamel", "frontmatter", "ftfy"]

PROGRAM = """
import json, sys
from kbgen.cli import main
sys.argv = ["kbgen", *ARGS]
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["validate", "--help"], ["probe", "--help"]])
def test_help_loads_no_heavy_library(args: list[str]) -> None:
    program = PROGRAM.replace("ARGS", repr(args)).replace("HEAVY", repr(HEAVY))
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=PATIENCE)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": []}
    assert "kbgen" in proc.stdout.splitlines()[0]


def test_python_dash_m_runs_the_same_cli() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kbgen", "--version"], capture_output=True, text=True, timeout=PATIENCE
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("kbgen, version ")
