"""`kbgen init` in a project laid out by someone else: links, FIFOs, devices and broken files where
it reads or writes. Nothing is ever written outside the project folder, nothing hangs, and every
refusal is one message with a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import invoke, kbgen

PRE_COMMIT = ".pre-commit-config.yaml"
HOOKS = "repos:\n  - repo: local\n    hooks: []\n"


def snapshot(folder: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry below ``folder``, links not followed: its kind and its bytes or link target."""
    seen: dict[str, tuple[str, bytes]] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                seen[str(path)] = ("link", str(path.readlink()).encode())
            elif stat.S_ISREG(info.st_mode):
                seen[str(path)] = ("file", path.read_bytes())
            else:
                seen[str(path)] = (stat.filemode(info.st_mode)[0], b"")
    return seen


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder and a folder outside it, beside it, with a file and a folder of its own."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    (outside / "folder").mkdir(parents=True)
    (outside / "hooks.yaml").write_text(HOOKS)
    return project, outside


def hook_ids(path: Path) -> list[str]:
    data = yaml.safe_load(path.read_text())
    return [hook["id"] for repo in data["repos"] for hook in repo["hooks"]]


@pytest.mark.parametrize("force", [False, True])
def test_a_dangling_mkdocs_link_is_reported_not_followed(places: tuple[Path, Path], force: bool) -> None:
    project, outside = places
    (project / "mkdocs.yml").symlink_to(outside / "mkdocs.yml")
    before = snapshot(outside)
    result = invoke("init", *(["--force"] if force else []), str(project))
    assert snapshot(outside) == before
    assert result.exit_code == 1, result.output
    assert "mkdocs.yml: a symbolic link, which kbgen never writes through" in result.output
    assert (project / "mkdocs.yml").is_symlink() and (project / "kb/probes/README.md").is_file()
    assert "created docs/getting-started.md" in result.output


def test_a_linked_pre_commit_config_gets_no_hook(places: tuple[Path, Path]) -> None:
    project, outside = places
    (project / PRE_COMMIT).symlink_to(outside / "hooks.yaml")
    before = snapshot(outside)
    result = invoke("init", str(project))
    assert snapshot(outside) == before and (outside / "hooks.yaml").read_text() == HOOKS
    assert result.exit_code == 1
    assert f"{PRE_COMMIT}: a symbolic link, which kbgen never writes through" in result.output


@pytest.mark.parametrize("folder", ["kb", ".github", "docs"])
def test_a_folder_linked_elsewhere_is_not_written_into(places: tuple[Path, Path], folder: str) -> None:
    project, outside = places
    (project / folder).symlink_to(outside / "folder", target_is_directory=True)
    before = snapshot(outside)
    for args in [("init",), ("init", "--force")]:
        result = invoke(*args, str(project))
        assert snapshot(outside) == before
        assert result.exit_code == 1
        assert f"  {folder}: a symbolic link, which kbgen never writes through\n" in result.output
        assert result.output.count(f"  {folder}: ") == 1  # one line for the folder, not one per file
    assert (project / "mkdocs.yml").is_file() and (project / ".gitignore").read_text() == "site/\n"


def test_links_put_in_place_after_the_check_are_not_followed(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program swaps names for links between init's look at the folder and its writes."""
    from kbgen import init as scaffold

    project, outside = places
    (project / ".gitignore").write_text("build/\n")
    (outside / "ignored").write_text("x\n")
    real_apply = scaffold.apply

    def swap_then_apply(root: Path, actions: list[scaffold.Action], *, force: bool) -> list[scaffold.Action]:
        (project / "kb").symlink_to(outside / "folder", target_is_directory=True)
        (project / "mkdocs.yml").symlink_to(outside / "mkdocs.yml")
        (project / ".gitignore").unlink()
        (project / ".gitignore").symlink_to(outside / "ignored")
        return real_apply(root, actions, force=force)

    monkeypatch.setattr(scaffold, "apply", swap_then_apply)
    before = snapshot(outside)
    result = invoke("init", str(project))
    assert snapshot(outside) == before
    assert result.exit_code == 1
    assert "  kb: a symbolic link, which kbgen never writes through\n" in result.output
    assert "  mkdocs.yml: appeared while kbgen init ran; left alone\n" in result.output
    assert "  .gitignore: changed while kbgen init ran; left alone\n" in result.output
    assert (project / "docs/getting-started.md").is_file()


def test_a_fifo_is_refused_without_waiting_for_a_writer(places: tuple[Path, Path]) -> None:
    project, outside = places
    os.mkfifo(project / "mkdocs.yml")
    os.mkfifo(project / PRE_COMMIT)
    before = snapshot(outside)
    done = kbgen("init", str(project))  # a process of its own: a hang fails this test alone
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "mkdocs.yml: a named pipe (FIFO), not a regular file" in done.stderr
    assert f"{PRE_COMMIT}: a named pipe (FIFO), not a regular file" in done.stderr
    assert snapshot(outside) == before


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_link_to_dev_zero_is_not_read(places: tuple[Path, Path]) -> None:
    project, _ = places
    for name in ["mkdocs.yml", PRE_COMMIT, ".gitignore"]:
        (project / name).symlink_to("/dev/zero")
    result = invoke("init", str(project))
    assert result.exit_code == 1
    for name in ["mkdocs.yml", PRE_COMMIT, ".gitignore"]:
        assert f"  {name}: a symbolic link, which kbgen never writes through\n" in result.output
    assert all((project / name).is_symlink() for name in ["mkdocs.yml", PRE_COMMIT, ".gitignore"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"repos:\n  - repo: local\n    hooks: [] # caf\xe9\n", "line 3: not UTF-8 text"),
        (b"repos: " + b"[" * 100 + b"]" * 100 + b"\n", "line 1: values are nested more than 64"),
        # past libyaml's own limit (it refuses 1,000 levels itself): still kbgen's one wording
        (b"repos: " + b"[" * 5000 + b"]" * 5000 + b"\n", "line 1: values are nested more than 64"),
        (
            b"repos:\n" + b"".join(b"  " * i + b"- \n" for i in range(1, 200)),
            "line 65: values are nested more than 64 levels deep",
        ),
        (b"repos: [\n", "not valid YAML"),
        (b"repos: {local: 1}\n", "`repos:` is not a list"),
    ],
)
def test_a_broken_pre_commit_config_is_one_message(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / PRE_COMMIT).write_bytes(content)
    result = invoke("init", str(tmp_path))
    assert result.exit_code == 1
    assert (
        f"  {PRE_COMMIT}: {message}" in result.output
        and "add the kbgen-validate hook by hand" in result.output
    )
    assert (tmp_path / PRE_COMMIT).read_bytes() == content
    assert (tmp_path / "mkdocs.yml").is_file()  # the rest was written


def test_a_comment_naming_the_hook_does_not_stand_for_it(tmp_path: Path) -> None:
    config = tmp_path / PRE_COMMIT
    config.write_text(
        "# we mean to add kbgen-validate later\nrepos:\n  - repo: local\n"
        "    hooks:\n      - id: lint  # not kbgen-validate\n        name: kbgen-validate\n"
    )
    result = invoke("init", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert f"added the kbgen-validate hook to {PRE_COMMIT}" in result.output
    assert hook_ids(config) == ["lint", "kbgen-validate"]
    assert config.read_text().startswith("# we mean to add kbgen-validate later\n")
    again = invoke("init", str(tmp_path))  # now it is there, by id: not added twice
    assert again.output == "Nothing to do: every file is in place.\n"
    assert hook_ids(config) == ["lint", "kbgen-validate"]


#: .gitignore before `kbgen init` -> after (None: there is none)
GITIGNORES: list[tuple[str | None, str]] = [
    (None, "site/\n"),
    ("node_modules/\n*.pyc", "node_modules/\n*.pyc\nsite/\n"),
    ("*.html\r\n", "*.html\r\nsite/\r\n"),  # the html pages alone are not the whole site
    ("/site\n", "/site\n"),
    ("build/\nsite/*\n", "build/\nsite/*\n"),
    ("\\\nsite\n", "\\\nsite\n"),  # a line git reads but pathspec refuses is passed over
]


def test_init_ignores_the_built_site_in_git(tmp_path: Path) -> None:
    for number, (before, after) in enumerate(GITIGNORES):
        project = tmp_path / str(number)
        project.mkdir()
        gitignore = project / ".gitignore"
        if before is not None:
            gitignore.write_bytes(before.encode())
        result = invoke("init", str(project))
        assert result.exit_code == 0, result.output
        assert gitignore.read_bytes() == after.encode(), before
        assert ("site/ to .gitignore" in result.output) == (before is not None and before != after)
        assert ("created .gitignore" in result.output) == (before is None)
        assert invoke("init", "--dry-run", str(project)).output == ""


# --------------------------------------------------------------------------- property

YAML_SHAPES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=12)
    | st.sampled_from(["kbgen-validate", "id"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["repos", "hooks", "id", "repo", "site_name", "x"]), inner, max_size=4
        )
    ),
    max_leaves=20,
).map(lambda data: yaml.safe_dump(data).encode())
CONTENTS = st.one_of(
    YAML_SHAPES,
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda text: text.encode("utf-8", errors="surrogatepass")),
    st.lists(
        st.sampled_from([b"[", b"]", b"{", b"- ", b"  ", b"\n", b"*a", b"&a ", b"site", b"!"]), max_size=60
    ).map(b"".join),
)
#: what stands at a name kbgen init reads: a file with these bytes, or something that is not one
ENTRIES = st.one_of(
    st.tuples(st.just("file"), CONTENTS),
    st.tuples(
        st.sampled_from(["link-file", "link-dir", "dangling", "fifo", "folder", "dev-zero"]), st.just(b"")
    ),
)


def _make(path: Path, kind: str, data: bytes, outside: Path) -> None:
    if kind == "file":
        path.write_bytes(data)
    elif kind == "link-file":
        path.symlink_to(outside / "hooks.yaml")
    elif kind == "link-dir":
        path.symlink_to(outside / "folder")
    elif kind == "dangling":
        path.symlink_to(outside / f"new-{path.name}")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.dictionaries(st.sampled_from(["mkdocs.yml", PRE_COMMIT, ".gitignore", "kb", "docs"]), ENTRIES),
    force=st.booleans(),
)
def test_init_never_fails_loudly_hangs_or_writes_outside(
    entries: dict[str, tuple[str, bytes]], force: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project, outside = Path(tmp, "project"), Path(tmp, "outside")
        project.mkdir()
        (outside / "folder").mkdir(parents=True)
        (outside / "hooks.yaml").write_text(HOOKS)
        for name, (kind, data) in entries.items():
            _make(project / name, kind, data, outside)
        before = snapshot(outside)
        result = invoke("init", *(["--force"] if force else []), str(project))  # no traceback
        assert result.exit_code in (0, 1), result.output
        assert snapshot(outside) == before
        for name, (kind, _) in entries.items():
            if kind != "file":
                assert not (project / name).is_file() or (project / name).is_symlink(), name
        if result.exit_code == 0:
            assert (project / "mkdocs.yml").is_file() and (project / ".gitignore").is_file()
