"""The process that runs probes inside the target interpreter. Standard library only.

It is started as a script (``python worker.py``), so the interpreter under test needs neither kbgen
nor pydantic, and it keeps to syntax Python 3.8 understands. Protocol:

- kbgen writes one JSON object per line on stdin: ``{"id", "path", "needs", "log"}``, then closes it.
- the worker answers on its original stdout with lines starting ``@@kbgen@@ `` followed by JSON:
  ``hello``, then (torch lane) ``import``/``imported``, then per probe ``start`` and ``result``.
- everything a probe prints (stdout and stderr, at the file-descriptor level) goes to the probe's own
  log file, so stray output cannot corrupt the protocol and a crash leaves its last words behind.

With ``--torch`` it imports torch once, before the first probe, so probes share that cost. When
``KBGEN_TORCH_BLOCKED`` is set (importing torch killed an earlier worker), ``import torch`` raises
ImportError with that reason instead of killing this one too.
"""

import faulthandler
import gc
import json
import os
import shutil
import signal
import sys
import time
import traceback

MARK = "@@kbgen@@ "
TAIL = 4000
SCALARS = (str, int, float, bool, type(None))
MESSAGE_LIMIT = 4000  # a result is a summary; long text belongs in the probe's output
FACT_LIMIT = 1000


def _emit(channel, event, **data):
    data["event"] = event
    channel.write(MARK + json.dumps(data, default=str) + "\n")
    channel.flush()


def _redirect(path):
    """Point fds 1 and 2 at ``path`` (the current probe's log)."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _tail(path):
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - TAIL))
            tail = handle.read()
            if size > TAIL and b"\n" in tail:  # start at a whole line: see _cut
                tail = tail[tail.index(b"\n") + 1 :]
            return tail.decode("utf-8", "replace")
    except OSError:
        return ""


class _Blocker:
    """A meta-path finder that makes ``import torch`` fail with a reason instead of a crash."""

    def __init__(self, reason):
        self.reason = reason

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(self.reason, name=name)
        return None


def _import_torch(channel, log):
    _redirect(log)
    _emit(channel, "import", module="torch", log=log)
    started = time.perf_counter()
    # torch's import builds hundreds of thousands of objects; the cyclic collector would keep
    # rescanning them mid-import (about a tenth of the import time). Nothing cyclic is freed late.
    collecting = gc.isenabled()
    gc.disable()
    try:
        import torch
    except BaseException as exc:  # ImportError, OSError from a missing .so, even SystemExit
        error = f"{type(exc).__name__}: {exc}"
        _emit(
            channel,
            "imported",
            ok=False,
            error=error,
            seconds=time.perf_counter() - started,
            output=_tail(log),
        )
        return None, error
    finally:
        if collecting:
            gc.enable()
    _emit(channel, "imported", ok=True, version=torch.__version__, seconds=time.perf_counter() - started)
    return torch, None


def _unmet(needs, torch_state):
    """Why the probe cannot run here, or None."""
    for need in needs:
        if need in ("torch", "cuda") and torch_state["module"] is None:
            return f"needs torch, which is not importable in {sys.executable} ({torch_state['error']})"
        if need == "cuda":
            torch = torch_state["module"]
            if not torch.cuda.is_available():
                build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "a CPU-only build"
                return f"needs CUDA, which is not available to torch {torch.__version__} ({build})"
        if need.startswith("command:") and shutil.which(need.split(":", 1)[1]) is None:
            return f"needs the command {need.split(':', 1)[1]}, which is not on PATH"
    return None


def _cut(text, limit):
    """``text`` cut to ``limit`` at a word end: kbgen redacts secrets later, and a token cut in two
    would lose the prefix that gives it away."""
    kept = text[: limit - 1]
    if not text[limit - 1].isspace():
        kept = kept[: max(kept.rfind(" "), kept.rfind("\n"), kept.rfind("\t")) + 1]
    return kept.rstrip() + "…"


def _clean(result):
    """Check a probe's return value; return (result, problem)."""
    if not isinstance(result, dict):
        return None, f"run() returned {type(result).__name__}, not a dict"
    facts = result.get("facts") or {}
    if not isinstance(facts, dict):
        return None, f"run() returned facts of type {type(facts).__name__}, not a dict"
    clean = {}
    for key, value in facts.items():
        if isinstance(value, (list, tuple, set)):
            value = " ".join(str(v) for v in value)
        elif not isinstance(value, SCALARS):
            value = str(value)
        if isinstance(value, str) and len(value) > FACT_LIMIT:
            value = _cut(value, FACT_LIMIT)
        clean[str(key)] = value
    message = str(result.get("message") or "")
    if len(message) > MESSAGE_LIMIT:
        message = _cut(message, MESSAGE_LIMIT)
    return {"status": result.get("status"), "message": message, "facts": clean}, None


def _run_one(job):
    namespace = {"__name__": "kbgen_probe_" + job["id"].replace("-", "_"), "__file__": job["path"]}
    with open(job["path"], encoding="utf-8") as handle:
        code = compile(handle.read(), job["path"], "exec")
    exec(code, namespace)
    runner = namespace.get("run")
    if not callable(runner):
        raise RuntimeError("the probe file defines no run() function")
    return runner()


def _probe(channel, job, torch_state):
    _redirect(job["log"])
    _emit(channel, "start", id=job["id"], log=job["log"])
    started = time.perf_counter()
    reason = _unmet(job.get("needs") or [], torch_state)
    if reason:
        _emit(channel, "result", id=job["id"], seconds=0.0, result={"status": "skip", "message": reason})
        return
    try:
        raw = _run_one(job)
        result, problem = _clean(raw)
        if problem:
            printed = _tail(job["log"]).strip()
            if printed:
                problem += f" (it printed {printed[-120:]!r}; return the result dict instead of printing it)"
            result = {"status": "error", "message": problem}
    except SystemExit as exc:
        result = {"status": "error", "message": f"the probe called sys.exit({exc.code!r})"}
    except BaseException as exc:
        traceback.print_exc()
        last = str(exc).strip().splitlines()
        result = {"status": "error", "message": f"{type(exc).__name__}: {last[0] if last else ''}"}
    _emit(
        channel,
        "result",
        id=job["id"],
        seconds=time.perf_counter() - started,
        result=result,
        output=_tail(job["log"]),
    )


def main(argv):
    # Running as a script put this folder first on sys.path; probes must not import our siblings.
    here = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # noqa: PTH100
    if "--nice" in argv and hasattr(os, "nice"):
        os.nice(10)  # leave the CPU to the worker importing torch: it is the one everybody waits for
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(signal, "SIGUSR1"):  # on timeout kbgen sends SIGUSR1 first: the stack shows where it hung
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    _emit(channel, "hello", python=sys.version.split()[0], executable=sys.executable, pid=os.getpid())
    blocked = os.environ.get("KBGEN_TORCH_BLOCKED")
    if blocked:
        sys.meta_path.insert(0, _Blocker(blocked))
    torch_state = {"module": None, "error": blocked or "not imported"}
    if "--torch" in argv and not blocked:
        torch_state["module"], torch_state["error"] = _import_torch(channel, argv[argv.index("--torch") + 1])
    # Read every job first, then detach stdin: a probe that reads stdin must not eat the job list.
    jobs = [json.loads(line) for line in sys.stdin if line.strip()]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for job in jobs:
        _probe(channel, job, torch_state)
    _emit(channel, "bye")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
