"""The site's Fleet pages: every node with its key facts, outliers marked, and a page per node."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jinja2

from kbgen.fleet.facts import node_views
from kbgen.fleet.model import NodeView
from kbgen.fleet.store import file_name, load_nodes
from kbgen.site.data import SiteData
from kbgen.templating import render

FLEET = "fleet/index.md"
#: key fact -> column heading on the Fleet page
COLUMNS = {
    "driver": "Driver",
    "cuda_runtime": "CUDA",
    "torch": "torch",
    "cudnn": "cuDNN",
    "gpu": "GPU",
    "gpu_count": "GPUs",
    "kernel": "Kernel",
}


@dataclass(frozen=True)
class FleetNode:
    view: NodeView
    uri: str
    bugs: list[str]

    @property
    def marked(self) -> set[str]:
        return {d.fact for d in self.view.drift}

    @property
    def label(self) -> str:
        """The host name, and which machine when several gave it."""
        return f"{self.view.host} (machine {self.view.machine})" if self.view.machine else self.view.host


def node_uri(host: str) -> str:
    return f"fleet/{file_name(host)[: -len('.json')]}.md"


def bugs_by_host(site: SiteData) -> dict[str, list[str]]:
    """Bug ids by the host any of their environments was collected on."""
    found: dict[str, list[str]] = {}
    for bug in sorted(site.bugs.values(), key=lambda b: b.id):
        for host in sorted({env.host for env in bug.environments}):
            found.setdefault(host, []).append(bug.id)
    return found


def age(when: dt.datetime | None, today: dt.date) -> str:
    if when is None:
        return "never"
    days = (today - when.date()).days
    if days <= 0:
        return "today"
    return "yesterday" if days == 1 else f"{days} days ago"


def plan(site: SiteData) -> Iterable[tuple[str, str, Any, tuple[Any, ...], str]]:
    """(uri, title, render function, arguments, digest of the content) for every Fleet page."""
    records, problems = load_nodes(site.kb.project)
    if not records and not problems:
        return  # a project without a fleet gets no Fleet page
    hosts = bugs_by_host(site)
    nodes = [
        FleetNode(v, node_uri(f"{v.host}@{v.machine}" if v.other else v.host), hosts.get(v.host, []))
        for v in node_views(records)
    ]
    digest = hashlib.sha256(
        json.dumps([[n.view.model_dump(mode="json"), n.bugs] for n in nodes], sort_keys=True).encode()
        + "\0".join(problems).encode()
    ).hexdigest()
    yield FLEET, "Fleet", render_fleet, (nodes, problems), digest
    for node in nodes:
        yield node.uri, node.label, render_node, (node,), digest


def render_fleet(env: jinja2.Environment, site: SiteData, nodes: list[FleetNode], problems: list[str]) -> str:
    dates = [n.view.collected_at for n in nodes if n.view.collected_at is not None]
    return render(
        env,
        "page-fleet.md.j2",
        site=site,
        here=FLEET,
        today=site.today,
        nodes=nodes,
        columns=COLUMNS,
        problems=problems,
        newest=age(max(dates), site.today) if dates else "never",
        oldest=age(min(dates), site.today) if dates else "never",
    )


def render_node(env: jinja2.Environment, site: SiteData, node: FleetNode) -> str:
    return render(
        env,
        "page-node.md.j2",
        site=site,
        here=node.uri,
        today=site.today,
        node=node,
        columns=COLUMNS,
        probed=age(node.view.collected_at, site.today),
    )
