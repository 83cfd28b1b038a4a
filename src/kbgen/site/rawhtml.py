"""Large HTML blocks of a generated page, kept out of Markdown's way during a build.

The bug index of a large KB is one HTML table of thousands of rows. Python-Markdown parses such a
block tag by tag (``md_in_html``) to let mkdocs rewrite its links, which made that one page about a
fifth of a rebuild at 1,000 bugs. A template marks such a block with ``<!-- kbgen:html NONCE -->``
and ``<!-- /kbgen:html NONCE -->``; the plugin lifts it out before Markdown runs, leaving a
placeholder, and puts it back into the page's HTML with its ``.md`` links made into the site's URLs
as mkdocs would.

Only what a template wrote may be lifted: the text of a record is on the same page, and whatever
it holds between two marker lines would reach the HTML unread by Markdown (a raw ``<img>``), or be
cut out of a code block. So the markers carry a nonce the plugin draws when it starts (the
``html_nonce`` of the templates), which no record can know: it never reaches a built page.

The Markdown stays complete on its own: a site built from ``kbgen build-pages`` output without
the plugin renders the same block through ``md_in_html``.
"""

from __future__ import annotations

import html
import posixpath
import re
import secrets
from collections.abc import Callable

_HREF = re.compile(r'href="([^"#]+\.md)(#[^"]*)?"')


def new_nonce() -> str:
    """A secret for the markers of one site plugin's pages."""
    return secrets.token_hex(16)


class Lifted:
    """The blocks lifted from one page, and the placeholders that stand for them."""

    def __init__(self, nonce: str) -> None:
        self.token = f"kbgenhtml{secrets.token_hex(8)}x"  # no text of a record can guess it
        self.blocks: list[str] = []
        self.held: list[str] = []  # the blocks cleaned, while the page's HTML goes without them
        self.mark = f"<!-- kbgen:html {nonce} -->"
        self.end = f"<!-- /kbgen:html {nonce} -->"

    def lift(self, markdown: str) -> str:
        """``markdown`` with each marked block replaced by a placeholder paragraph: a line that is
        the mark, up to the next line that is the end mark (plain substring searches: a block
        can be megabytes)."""
        parts: list[str] = []
        done = 0
        start = _line(markdown, self.mark, 0)
        while start >= 0:
            inside = start + len(self.mark)
            if markdown.startswith("\n", inside):
                end = _line(markdown, self.end, inside + 1)
                if end < 0:
                    break
                self.blocks.append(markdown[inside + 1 : end])
                parts += [markdown[done:start], f"\n{self.token}{len(self.blocks) - 1}\n"]
                done = end + len(self.end)
                start = _line(markdown, self.mark, done)
            else:
                start = _line(markdown, self.mark, inside)
        return "".join([*parts, markdown[done:]]) if parts else markdown

    def hold(
        self,
        page_html: str,
        url_of: Callable[[str], str | None],
        known: dict[str, str] | None,
        clean: Callable[[str, Callable[[str], str]], str],
    ) -> str:
        """``page_html`` with each placeholder replaced by a comment, its block (links resolved
        by ``url_of``, then ``clean(block, resolve)``: the sanitizer) held back until
        :meth:`put_back`. In between, the search plugin reads a page without them (every block
        sits where search is told to skip: a bug table's section, or a page left out of search),
        rather than parsing megabytes only to drop them.

        ``known``: links of this page resolved before (``href="..."`` as written -> as resolved),
        looked up first and added to; its keeper clears it when the site's files change."""

        def resolve(text: str) -> str:
            return _resolve_links(text, url_of, known)

        self.held = [clean(block, resolve) for block in self.blocks]
        for number in range(len(self.blocks)):
            page_html = page_html.replace(f"<p>{self.token}{number}</p>", f"<!--{self.token}{number}-->", 1)
        return page_html

    def put_back(self, page_html: str) -> str:
        """``page_html`` with the blocks :meth:`hold` kept back in their places."""
        for number, block in enumerate(self.held):
            page_html = page_html.replace(f"<!--{self.token}{number}-->", block, 1)
        return page_html


def _line(text: str, line: str, start: int) -> int:
    """Where ``line`` is a whole line of ``text`` at or after ``start`` (-1 when it is not)."""
    at = text.find(line, start)
    while at >= 0:
        before_ok = at == 0 or text[at - 1] == "\n"
        after = at + len(line)
        if before_ok and (after == len(text) or text[after] == "\n"):
            return at
        at = text.find(line, at + 1)
    return at


def _resolve_links(block: str, url_of: Callable[[str], str | None], known: dict[str, str] | None) -> str:
    found = {} if known is None else known

    def resolve(match: re.Match[str]) -> str:
        written = match.group(0)
        done = found.get(written)
        if done is None:
            url = url_of(html.unescape(match.group(1)))
            done = written  # not a page of this site: left as written, like mkdocs leaves it
            if url is not None:
                done = f'href="{html.escape(url + (match.group(2) or ""), quote=True)}"'
            found[written] = done
        return done

    return _HREF.sub(resolve, block)


def target_uri(page_uri: str, href: str) -> str:
    """The source path that ``href``, written in the page at ``page_uri``, points at."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_uri), href))
