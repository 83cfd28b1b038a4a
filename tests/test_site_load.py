"""Loading a KB for the site: every probe file is read once per build, for the checks and the catalogue."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kbgen.probes import discovery
from kbgen.site import pages
from kbgen.store import Project
from site_kb import make_site_project


def test_each_probe_file_is_read_once_per_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = Project(make_site_project(tmp_path, site_config=False))
    reads: Counter[Path] = Counter()
    read_meta = discovery.read_meta

    def counting(path: Path, rel: str) -> Any:
        reads[path] += 1
        return read_meta(path, rel)

    monkeypatch.setattr(discovery, "read_meta", counting)
    site, _ = pages.load_site(project, today=dt.date(2025, 11, 21))
    assert project.probes / "label-range.py" in reads  # the project's probe, with the built-in ones
    assert set(reads.values()) == {1}
    assert "label-range" in site.probes and not site.probes["label-range"].builtin
    assert site.probes["label-range"].source == "kb/probes/label-range.py"
