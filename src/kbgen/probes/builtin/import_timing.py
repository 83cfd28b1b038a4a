"""Import modules one at a time, each under a time limit, to find the one that hangs or is slow."""

PROBE = {
    "id": "import-timing",
    "title": "Import timing",
    "description": "Imports torch, numpy, lightning, wandb and similar (those installed; KBGEN_IMPORTS="
    "'a,b,c' overrides the list) one by one in a separate interpreter, each with a time limit "
    "(KBGEN_IMPORT_LIMIT seconds, default 20); reports the module that hangs (a stuck wandb import "
    "looks like a frozen training run) and the ones slower than 5 s. Not in the default set: it "
    "imports third-party code, which may start threads or touch the network.",
    "needs": [],
    "timeout": 200,
    "default": False,
}

import importlib.util
import os
import queue
import subprocess
import sys
import threading
import time

DEFAULT = ("torch", "numpy", "torchvision", "lightning", "pytorch_lightning", "transformers", "wandb")
SLOW = 5.0
CHILD = (
    "import importlib, sys, time\n"
    "for name in sys.argv[1:]:\n"
    "    print('start', name, flush=True)\n"
    "    t = time.perf_counter()\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except BaseException as exc:\n"
    "        first = (str(exc).splitlines() or [''])[0][:200]\n"
    "        print('error', name, type(exc).__name__, first, flush=True)\n"
    "        continue\n"
    "    print('done', name, round(time.perf_counter() - t, 3), flush=True)\n"
)


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _run_batch(names, limit):
    """Import ``names`` in order in one child; return (timings, the name it hung or died in, or None)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines = queue.Queue()
    threading.Thread(
        target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True
    ).start()
    results, current, started = {}, None, time.monotonic()
    while True:
        try:
            line = lines.get(timeout=max(0.01, limit - (time.monotonic() - started)) if current else 1.0)
        except queue.Empty:
            if current is None:
                continue
            # whatever the import started stays in the worker's process group, which kbgen kills at the end
            proc.kill()
            proc.wait()
            return results, current
        if line is None:
            proc.wait()
            return results, (current if proc.returncode else None)
        words = line.rstrip("\n").split(" ", 3)
        if words[0] == "start":
            current, started = words[1], time.monotonic()
        elif words[0] == "done":
            results[words[1]], current = float(words[2]), None
        elif words[0] == "error":
            results[words[1]], current = "error: " + " ".join(words[2:]), None


def run():
    wanted = os.environ.get("KBGEN_IMPORTS")
    names = [n.strip() for n in wanted.split(",") if n.strip()] if wanted else list(DEFAULT)
    limit = float(os.environ.get("KBGEN_IMPORT_LIMIT") or 20)
    present = [n for n in names if _installed(n)]
    absent = [n for n in names if n not in present]
    facts, hung = {}, []
    todo = present
    while todo:
        results, stuck = _run_batch(todo, limit)
        facts.update(results)
        if stuck is None:
            break
        facts[stuck] = f"hang > {limit:g} s"
        hung.append(stuck)
        todo = todo[todo.index(stuck) + 1 :]
    slow = [n for n, v in facts.items() if isinstance(v, float) and v > SLOW]
    failed = [n for n, v in facts.items() if isinstance(v, str) and v.startswith("error")]
    if absent:
        facts["not_installed"] = " ".join(absent)
    times = ", ".join(f"{n} {v:.2f} s" for n, v in facts.items() if isinstance(v, float))
    if not present:
        return {"status": "skip", "message": f"none of {', '.join(names)} is installed", "facts": facts}
    if hung:
        return {
            "status": "fail",
            "message": f"import of {', '.join(hung)} did not finish within {limit:g} s "
            f"(make it lazy, or find what it waits for); others: {times}",
            "facts": facts,
        }
    if failed or slow:
        what = [f"{n}: {facts[n]}" for n in failed] + [f"{n} is slow ({facts[n]:.1f} s)" for n in slow]
        return {"status": "warn", "message": "; ".join(what), "facts": facts}
    return {"status": "pass", "message": times, "facts": facts}
