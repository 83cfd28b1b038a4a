"""The locks `make serve` and `make test` install from cover what pyproject.toml asks for.

kbgen itself is installed with `--no-deps`, so a dependency added to pyproject.toml without
`make lock` would be missing from a fresh clone's environment (or come from wherever it was
installed before): every requirement must be pinned in the lock that installs it, and the
exact pins of the test tools must be the locked versions.
"""

from __future__ import annotations

from importlib.metadata import requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
#: pyproject.toml's requirements, as the editable install of this checkout recorded them
DECLARED = [Requirement(r) for r in requires("kbgen") or []]


def locked(name: str) -> dict[str, str]:
    """``{package: version}`` pinned in requirements/NAME.lock."""
    pins = {}
    for line in (REPO / "requirements" / name).read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            package, version = line.split(" ")[0].split("==")
            pins[canonicalize_name(package)] = version
    return pins


def requirements(*extras: str) -> list[Requirement]:
    """What installing kbgen with ``extras`` asks for on this platform."""
    return [
        r for r in DECLARED if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in ("", *extras))
    ]


@pytest.mark.parametrize(("lock", "extras"), [("serve.lock", ()), ("test.lock", ("test", "ray", "torch"))])
def test_every_requirement_is_pinned_in_the_lock_that_installs_it(lock: str, extras: tuple[str, ...]) -> None:
    pins = locked(lock)
    missing = [str(r) for r in requirements(*extras) if canonicalize_name(r.name) not in pins]
    assert missing == [], f"run `make lock`: {lock} lacks {missing}"
    outside = [
        f"{r.name}=={pins[canonicalize_name(r.name)]} ({r})"
        for r in requirements(*extras)
        if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
    ]
    assert outside == [], f"run `make lock`: {lock} pins versions pyproject.toml does not allow"


def test_serve_and_test_pin_the_same_versions() -> None:
    serve, test = locked("serve.lock"), locked("test.lock")
    assert {name: (v, test.get(name)) for name, v in serve.items() if test.get(name) != v} == {}


@pytest.mark.parametrize(
    ("lock", "sources"),
    [
        ("serve.lock", ("build.in",)),
        ("test.lock", ("build.in", "test.in")),
        ("zensical.lock", ("zensical.in",)),
    ],
)
def test_the_build_backend_and_test_tools_are_pinned_too(lock: str, sources: tuple[str, ...]) -> None:
    """What the lock installs beside kbgen's own requirements (the build backend its editable
    install needs without build isolation, the pinned CPU torch) is pinned there, within range."""
    pins = locked(lock)
    wanted = [
        Requirement(line.split("#")[0].strip())
        for source in sources
        for line in (REPO / "requirements" / source).read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]
    assert wanted, sources
    problems = [
        str(r)
        for r in wanted
        if canonicalize_name(r.name) not in pins
        or not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
    ]
    assert problems == [], f"run `make lock`: {lock} lacks or mispins {problems}"


def test_every_lock_pins_each_package_with_a_hash() -> None:
    """`--require-hashes` refuses a lock line without one; so does this, before an install does."""
    for lock in sorted((REPO / "requirements").glob("*.lock")):
        lines = lock.read_text(encoding="utf-8").splitlines()
        pinned = [i for i, line in enumerate(lines) if "==" in line and not line.startswith((" ", "#"))]
        assert pinned, lock.name
        unhashed = [lines[i] for i in pinned if i + 1 >= len(lines) or "--hash=sha256:" not in lines[i + 1]]
        assert unhashed == [], f"{lock.name}: {unhashed}"
