#!/bin/sh
# The release workflow's checks, runnable anywhere (tests/test_release.py runs them too):
#   scripts/release-check.sh DIST PYTHON
# DIST holds the sdist and the wheel `python -m build` made; PYTHON has twine installed. Checks the
# metadata, installs the wheel in a clean venv (no torch) and uses it as a new team would: init,
# validate, triage of a real CUDA out-of-memory line.
set -eu
dist=$1
python=${2:-python3}
"$python" -m twine check --strict "$dist"/*
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-compile "$dist"/kbgen-*.whl
if "$work/venv/bin/python" -c "import torch" 2>/dev/null; then
  echo "release-check: the wheel pulled torch in" >&2
  exit 1
fi
mkdir "$work/project"
cd "$work/project"
"$work/venv/bin/kbgen" init
"$work/venv/bin/kbgen" validate --strict
printf '%s\n' "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.69 GiB of which 1.20 GiB is free." >crash.log
"$work/venv/bin/kbgen" triage --json crash.log >triage.json
"$work/venv/bin/python" -c "import json,sys; top=json.load(open('triage.json'))['matches'][0]['error']; sys.exit(0 if top=='cuda-out-of-memory' else 'release-check: triage named '+top)"
echo "release-check: $(ls "$dist" | tr '\n' ' ')ok"
