"""The built site in a real browser: headless Chromium driven over the DevTools protocol.

Builds the fixture KB, serves it on 127.0.0.1, opens a bug page and an error page, types into
the search box, and saves screenshots under tests/artifacts/. Skips where Chromium is missing
(`apt-get install chromium`, or scripts/ensure-chromium.sh).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import PATIENCE
from site_kb import make_site_project, mkdocs_build
from test_site_pages_without_plugin import EXTRA, build_hostile_plain_site
from test_site_sanitize import KNOWN_HOLES, build_hostile_site

ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


class Browser:
    """Chromium over --remote-debugging-pipe: JSON messages ending in NUL on fds 3 and 4."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()
        # Chromium reads fd 3 and writes fd 4; move our ends above 9 so they cannot be 3 or 4
        # themselves, then let bash put them in place.
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_child, from_child)]
        for fd in (to_child, from_child):
            os.close(fd)
        script = f'exec "$0" "$@" 3<&{ends[0]} 4>&{ends[1]} {ends[0]}<&- {ends[1]}>&-'
        self.proc = subprocess.Popen(
            ["bash", "-c", script, CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"],
            pass_fds=ends,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in ends:
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []  # what chromium reported on its own
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            size = {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False}
            self.call("Emulation.setDeviceMetricsOverride", session=True, **size)
        except BaseException:
            self.close()
            raise

    def call(self, method: str, session: bool = False, timeout: float = PATIENCE, **params: Any) -> Any:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)
        raise TimeoutError(method)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no message from chromium")
            chunk = os.read(self._in, 65536)
            if not chunk:
                raise RuntimeError("chromium exited")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)
        self.wait_for("document.readyState === 'complete' && location.href === " + json.dumps(url))

    def wait_for(self, expression: str, limit: float = PATIENCE) -> Any:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"not true within {limit:.0f} s: {expression}")

    def resize(self, width: int, height: int = 1000) -> None:
        """The viewport of a desktop (mobile=False) or, below 600 px, a phone."""
        phone = width < 600
        size = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": phone}
        self.call("Emulation.setDeviceMetricsOverride", session=True, **size)

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data["data"]))

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(RuntimeError, TimeoutError, OSError):
                self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._out)
        os.close(self._in)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    project = make_site_project(tmp_path_factory.mktemp("browser"))
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    yield from serve(project / "site")


def serve(folder: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # port 0: a free one
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def hostile_site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fixture KB plus a bug per hole mdsafe had, and a hostile report brought in by `kbgen import`."""
    with pytest.MonkeyPatch.context() as patch:
        project = build_hostile_site(tmp_path_factory.mktemp("hostile"), patch)
    yield from serve(project / "site")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chrome = Browser(tmp_path / "profile")
    try:
        yield chrome
    finally:
        chrome.close()


def text_of(browser: Browser, selector: str) -> str:
    return str(browser.evaluate(f"document.querySelector({json.dumps(selector)}).innerText"))


def test_bug_page_shows_the_report(site_url: str, browser: Browser) -> None:
    browser.open(site_url + "bugs/BUG-20251109-002/")
    title = browser.evaluate("document.title")
    assert title == "BUG-20251109-002: Illegal memory access in BCE loss - GPU failure KB"
    article = text_of(browser, "article")
    assert "torch.AcceleratorError: CUDA error: an illegal memory access was encountered" in article
    assert "NVIDIA GeForce RTX 3060" in article  # environment from the probes
    assert "matmul raised an illegal memory access" in article  # a failed finding
    assert "INVESTIGATING" in article.upper()
    browser.screenshot(ARTIFACTS / "bug-page.png")


def test_hostile_title_is_shown_not_run(site_url: str, browser: Browser) -> None:
    browser.open(site_url + "bugs/BUG-20251112-014/")
    heading = text_of(browser, "article h1").removesuffix("¶")  # the permalink sign
    assert heading == "BUG-20251112-014: <script>alert(1)</script> {{ 7 * 7 }} | pipes *and* `ticks`"
    assert browser.evaluate("document.querySelectorAll('article script, article img').length") == 0


def test_error_page_links_back_to_its_bugs(site_url: str, browser: Browser) -> None:
    browser.open(site_url + "errors/cuda-illegal-memory-access/")
    article = text_of(browser, "article")
    assert "Index or label out of range" in article  # the most likely cause, ranked first
    assert article.index("Index or label out of range") < article.index("Memory corrupted by an earlier")
    assert "kbgen probe cuda-smoke" in article
    links = browser.evaluate("[...document.querySelectorAll('article a')].map(a => a.href)")
    assert site_url + "bugs/BUG-20251109-002/" in links
    browser.screenshot(ARTIFACTS / "error-page.png")


def test_search_finds_a_bug_by_its_error_message(site_url: str, browser: Browser) -> None:
    browser.open(site_url)
    browser.evaluate("document.querySelector('[data-md-component=search-query]').focus()")
    browser.call("Input.insertText", session=True, text="AcceleratorError")
    found = browser.wait_for(
        "[...document.querySelectorAll('.md-search-result__item a')].map(a => a.href).join(' ')"
    )
    assert site_url + "bugs/BUG-20251109-002/" in found
    browser.screenshot(ARTIFACTS / "search.png")


def test_bug_table_sorts_by_severity(site_url: str, browser: Browser) -> None:
    browser.open(site_url + "bugs/")
    rows = "[...document.querySelectorAll('.kb-sortable tbody tr')]"
    first_ids = rows + ".map(r => r.cells[0].innerText).join(' ')"
    assert browser.evaluate(first_ids) == "BUG-20251112-014 BUG-20251109-002 BUG-20251020-001"
    browser.evaluate("document.querySelectorAll('.kb-sortable th')[3].click()")  # Severity: critical first
    assert browser.evaluate(first_ids) == "BUG-20251112-014 BUG-20251109-002 BUG-20251020-001"
    browser.evaluate("document.querySelectorAll('.kb-sortable th')[3].click()")  # again: low first
    assert browser.evaluate(first_ids) == "BUG-20251020-001 BUG-20251109-002 BUG-20251112-014"


# Counts every way a page could ask for a dialog, without letting one block the page; the
# protocol's own dialog event is watched as well.
_TRAP_DIALOGS = """
window.__kbDialogs = [];
for (const name of ["alert", "confirm", "prompt", "print"]) {
  window[name] = function (...args) { window.__kbDialogs.push(name + "(" + args.join(",") + ")"); };
}
"""


_HANDLERS = (
    "[...document.querySelectorAll('article *')]"
    ".filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
)
_SCRIPT_LINKS = (
    "[...document.querySelectorAll('article a')].filter(a => /^(javascript|data):/i.test(a.href)).length"
)


def hostile_pages(site: str) -> list[str]:
    ids = [f"BUG-20251113-{n:03d}" for n in range(1, len(KNOWN_HOLES) + 1)]
    return [site + f"bugs/{bug}/" for bug in ["BUG-20251112-014", *ids, "BUG-20251120-001"]] + [
        site + "bugs/"
    ]


def test_pages_from_hostile_records_fire_no_dialog(hostile_site_url: str, browser: Browser) -> None:
    nothing_fires(browser, hostile_pages(hostile_site_url))


@pytest.fixture(scope="module")
def plain_hostile_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same hostile KB written by `kbgen build-pages` and built by mkdocs without the plugin."""
    work = tmp_path_factory.mktemp("plain-out")
    yield from serve(build_hostile_plain_site(tmp_path_factory.mktemp("plain"), work))


def test_pages_built_without_the_plugin_fire_no_dialog(plain_hostile_url: str, browser: Browser) -> None:
    extra = [plain_hostile_url + f"bugs/{bug}/" for bug in EXTRA]
    nothing_fires(browser, [*hostile_pages(plain_hostile_url), *extra])


def nothing_fires(browser: Browser, urls: list[str]) -> None:
    """Open each page: no dialog, handler, script, frame or script link, and the hostile title as text."""
    browser.call("Page.enable", session=True)
    browser.call("Page.addScriptToEvaluateOnNewDocument", session=True, source=_TRAP_DIALOGS)
    for url in urls:
        browser.open(url)
        # image errors (onerror) and toggles fire after load: let them settle
        browser.wait_for("[...document.images].every(i => i.complete)")
        time.sleep(0.3)
        assert browser.evaluate("window.__kbDialogs") == [], url
        assert browser.evaluate(_HANDLERS) == 0, url
        assert browser.evaluate("document.querySelectorAll('article script, article iframe').length") == 0, (
            url
        )
        assert browser.evaluate(_SCRIPT_LINKS) == 0, url
        assert browser.evaluate("document.querySelectorAll('article img').length") == 0, url
    dialogs = [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
    assert dialogs == []
    browser.open(urls[0].split("bugs/")[0] + "bugs/BUG-20251120-001/")
    assert "Loader crashes <img src=x onerror=alert(21)>" in text_of(browser, "article")  # shown as text


# --------------------------------------------------------------------------- layout, per page kind
# The shipped kb/ (long error titles, long tracebacks) at a desktop and a phone width. Each test
# asserts the layout facts a person in trouble depends on, and saves a screenshot per width to
# $KBGEN_SHOTS (default tests/artifacts/) for people to look at.

SHOTS = Path(os.environ.get("KBGEN_SHOTS") or ARTIFACTS)
WIDTHS = [1400, 390]
EMOJI = "✅❌⏳➖⚠❔"


@pytest.fixture(scope="module")
def shipped_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    repo = Path(__file__).resolve().parents[1]
    project = tmp_path_factory.mktemp("shipped")
    for folder in ("kb", "docs"):
        shutil.copytree(repo / folder, project / folder)
    shutil.copy(repo / "mkdocs.yml", project / "mkdocs.yml")
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    handler = functools.partial(_Quiet, directory=str(project / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def show(browser: Browser, url: str, width: int, shot: str) -> None:
    browser.resize(width)
    browser.open(url)
    browser.wait_for("document.fonts.status === 'loaded'")
    browser.screenshot(SHOTS / f"{shot}-{width}.png")


def no_page_overflow(browser: Browser) -> bool:
    return bool(browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


@pytest.mark.parametrize("width", WIDTHS)
def test_troubleshooting_index_gives_the_error_names_room(
    shipped_url: str, browser: Browser, width: int
) -> None:
    show(browser, shipped_url + "errors/", width, "errors-index")
    rows = browser.evaluate(
        "[...document.querySelectorAll('.kb-errors tbody tr')].map(r => "
        "({name: r.cells[0].getBoundingClientRect().width, height: r.getBoundingClientRect().height,"
        "  summary: r.cells[1].innerText}))"
    )
    assert len(rows) >= 15
    assert min(r["name"] for r in rows) > (150 if width > 1000 else 100)  # was ~40 px
    assert max(r["height"] for r in rows) < (130 if width > 1000 else 260)  # was ~200 px
    assert all(r["summary"] and "\n" not in r["summary"] for r in rows)  # one summary line each
    assert no_page_overflow(browser)


@pytest.mark.parametrize("width", WIDTHS)
def test_error_page_reads_top_down(shipped_url: str, browser: Browser, width: int) -> None:
    show(browser, shipped_url + "errors/cuda-illegal-memory-access/", width, "error-page")
    headings = browser.evaluate("[...document.querySelectorAll('article h2')].map(h => h.id)")
    wanted = ["how-to-recognise-it", "diagnostic-steps", "root-causes", "fixes", "log-signatures", "sources"]
    assert [h for h in headings if h in wanted] == wanted
    links = browser.evaluate("[...document.querySelectorAll('article a')].map(a => a.href)")
    assert shipped_url + "bugs/BUG-20251109-002/" in links  # "(see BUG-...)" in the notes
    fixes = [link for link in links if "/fixes/" in link and not link.endswith("/fixes/")]
    assert fixes and len(fixes) == len(set(fixes))  # each fix's text once, in the Fixes section
    assert "kbgen probe" in text_of(browser, "article")
    height = browser.evaluate("document.documentElement.scrollHeight")
    assert height < (8000 if width > 1000 else 20000)  # was ~12,000 px at 1400
    assert no_page_overflow(browser)


@pytest.mark.parametrize("width", WIDTHS)
def test_bug_page_tracebacks_get_the_width(shipped_url: str, browser: Browser, width: int) -> None:
    show(browser, shipped_url + "bugs/BUG-20251109-002/", width, "bug-page")
    blocks = browser.evaluate(
        "[...document.querySelectorAll('article pre')].map(p => { const r = p.getBoundingClientRect();"
        " const c = p.querySelector('code'); return {right: r.right, left: r.left,"
        " scroll: c ? getComputedStyle(c).overflowX : 'visible',"
        " clipped: c ? c.scrollWidth > c.clientWidth : false}; })"
    )
    assert blocks
    inner = browser.evaluate("window.innerWidth")
    for block in blocks:  # inside the screen, and a long line scrolls rather than being cut
        assert block["left"] >= 0 and block["right"] <= inner + 1
        assert not block["clipped"] or block["scroll"] in ("auto", "scroll")
    if width > 1000:
        toc = browser.evaluate(
            "(() => { const s = document.querySelector('.md-sidebar--secondary');"
            " const shown = s && getComputedStyle(s).display !== 'none';"
            " return shown ? s.getBoundingClientRect().left : null; })()"
        )
        article = browser.evaluate(
            "(() => { const r = document.querySelector('article').getBoundingClientRect();"
            " return {left: r.left, width: r.width}; })()"
        )
        assert toc is not None and toc < article["left"]  # the page's contents on the left
        assert article["width"] > 900
    assert no_page_overflow(browser)


@pytest.mark.parametrize("width", WIDTHS)
def test_bug_index_table_links_every_bug_and_fits_the_screen(
    shipped_url: str, browser: Browser, width: int
) -> None:
    show(browser, shipped_url + "bugs/", width, "bugs-index")
    rows = browser.evaluate(
        "[...document.querySelectorAll('.kb-sortable tbody tr')].map(r => "
        "({id: r.cells[0].innerText, href: r.cells[0].querySelector('a').href, cells: r.cells.length,"
        "  title: r.cells[1].getBoundingClientRect().width}))"
    )
    assert rows and all(r["cells"] == 8 for r in rows)
    assert all(r["href"] == f"{shipped_url}bugs/{r['id']}/" for r in rows)  # site URLs, not .md
    assert min(r["title"] for r in rows) > 200  # a title reads as lines, not one word per line
    assert no_page_overflow(browser)  # a wide table scrolls inside its frame on a phone


@pytest.mark.parametrize("width", WIDTHS)
def test_marks_are_icons_not_emoji(shipped_url: str, browser: Browser, width: int) -> None:
    show(browser, shipped_url + "bugs/BUG-20251109-001/", width, "bug-marks")
    marks = browser.evaluate(
        "[...document.querySelectorAll('article .kb-mark')].map(m => "
        "({svg: !!m.querySelector('svg'), w: m.getBoundingClientRect().width}))"
    )
    assert marks and all(m["svg"] and m["w"] > 8 for m in marks)
    article = text_of(browser, "article")
    assert not any(ch in article for ch in EMOJI)
    browser.evaluate("document.querySelector('article .kb-mark').scrollIntoView({block: 'center'})")
    browser.screenshot(SHOTS / f"bug-marks-{width}.png")


@pytest.mark.parametrize("width", WIDTHS)
def test_dashboard_charts_and_counts(shipped_url: str, browser: Browser, width: int) -> None:
    show(browser, shipped_url, width, "dashboard")
    charts = browser.evaluate(
        "[...document.querySelectorAll('.kb-chart')].map(s => { const r = s.getBoundingClientRect();"
        " return {w: r.width, h: r.height, bars: s.querySelectorAll('rect').length}; })"
    )
    assert len(charts) == 3 and all(c["w"] > 200 and c["h"] > 20 and c["bars"] for c in charts)
    article = text_of(browser, "article")
    assert re.search(r"\b1 (bugs|fixes|causes)\b", article) is None
    assert "0 stale" not in article.replace("\n", " ").split("verified")[0]
    # chart text follows the scheme: the same colour as the page's text in light and dark
    for scheme in ("default", "slate"):
        browser.evaluate(f"document.body.setAttribute('data-md-color-scheme', '{scheme}')")
        fill, text = browser.evaluate(
            "[getComputedStyle(document.querySelector('.kb-chart text')).fill,"
            " getComputedStyle(document.querySelector('article')).color]"
        )
        assert fill == text, scheme
    browser.screenshot(SHOTS / f"dashboard-dark-{width}.png")
    opened, closed = browser.evaluate(
        "['opened', 'closed'].map(k => getComputedStyle(document.querySelector('.kb-bar--' + k)).fill)"
    )
    assert opened != closed  # the legend's two colours are the bars' colours
    assert no_page_overflow(browser)
