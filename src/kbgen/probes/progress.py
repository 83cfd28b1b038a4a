"""A live table on the terminal while probes run: each probe's status appears as it finishes.

``kbgen probe`` uses it only when stdout is a terminal and ``--json`` is off; it is transient, so
the full report printed afterwards replaces it and nothing extra is left in the scrollback.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from types import TracebackType

    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.record import RawResult


class LiveTable:
    """Call :meth:`finished` (from any thread) with each result; the table redraws itself."""

    def __init__(self, specs: list[ProbeSpec], colours: dict[str, str]) -> None:
        self.specs = specs
        self.colours = colours
        self.done: dict[str, RawResult] = {}
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._spinner = Spinner("dots", style="cyan")
        self._live = Live(
            console=Console(highlight=False),
            get_renderable=self._render,
            transient=True,
            refresh_per_second=8,
        )

    def __enter__(self) -> LiveTable:
        self._live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._live.stop()

    def finished(self, probe_id: str, result: RawResult) -> None:
        with self._lock:
            self.done[probe_id] = result
        self._live.refresh()

    def _render(self) -> Group:
        with self._lock:
            done = dict(self.done)
        elapsed = time.monotonic() - self.started
        title = Text(f"Probes: {len(done)} of {len(self.specs)} done, {elapsed:.1f} s", style="bold")
        table = Table(box=None, show_header=False, pad_edge=False, expand=True)
        table.add_column("probe", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("result", no_wrap=True, overflow="ellipsis", ratio=1)
        for spec in self.specs:
            got = done.get(spec.id)
            if got is None:
                table.add_row(spec.id, self._spinner, Text("pending", style="dim"))
                continue
            first = got.message.strip().splitlines()[0] if got.message.strip() else ""
            table.add_row(spec.id, Text(got.status, style=self.colours.get(got.status, "")), first)
        return Group(title, table)
