"""The process that runs probes inside the target interpreter. Standard library only.

It is started as a script (``python worker.py``), so the interpreter under test needs neither kbgen
nor pydantic, and it keeps to syntax Python 3.8 understands. Protocol:

- kbgen writes one JSON object per line on stdin: ``{"id", "path", "needs"}``, then closes it.
- the worker answers on its original stdout with lines starting ``@@kbgen@@ `` followed by JSON:
  ``hello``, then (torch lane) ``import``/``imported``, then per probe ``start`` and ``result``.
- everything printed (stdout and stderr, at the file-descriptor level) goes to fd 2, a file with no
  name that kbgen holds open: stray output cannot corrupt the protocol, a crash leaves its last
  words behind, and no probe can delete it. ``start`` says where in it the probe's output begins.

The worker cleans up after itself: it is a child subreaper, so every process a probe starts stays
in its tree even after ``setsid()`` and a double fork; when kbgen dies (``PR_SET_PDEATHSIG``, or the
``--lifeline`` pipe reaching end of file) it kills that tree, removes its scratch folder (its cwd)
and exits. ``--memory BYTES`` caps the data memory of the worker and everything it starts.

With ``--torch`` it imports torch once, before the first probe, so probes share that cost. When
``KBGEN_TORCH_BLOCKED`` is set (importing torch killed an earlier worker), ``import torch`` raises
ImportError with that reason instead of killing this one too.
"""

from __future__ import annotations

import faulthandler
import gc
import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback

TYPE_CHECKING = False  # typing is not imported at run time: every probe run starts this script
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any, TextIO

    Json = dict[str, Any]

MARK = "@@kbgen@@ "
TAIL = 4000
SCALARS = (str, int, float, bool, type(None))
MESSAGE_LIMIT = 4000  # a result is a summary; long text belongs in the probe's output
FACT_LIMIT = 1000
MEMORY_CAP = {"bytes": 0}  # set by --memory


def _emit(channel: TextIO, event: str, **data: Any) -> None:
    data["event"] = event
    channel.write(MARK + json.dumps(data, default=str) + "\n")
    channel.flush()


def _offset() -> int:
    """Where the next output lands in the output file (fd 2)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        return os.fstat(2).st_size
    except OSError:
        return 0


def read_tail(fd: int, start: int, limit: int = TAIL) -> str:
    """The last ``limit`` bytes written to ``fd`` since ``start`` (pread: no shared offset moves)."""
    try:
        size = os.fstat(fd).st_size
        begin = max(start, size - limit)
        tail = os.pread(fd, max(0, size - begin), begin)
        if begin > start and b"\n" in tail:  # start at a whole line: no token without its prefix
            tail = tail[tail.index(b"\n") + 1 :]
        return tail.decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


def _tail(start: int) -> str:
    sys.stdout.flush()
    sys.stderr.flush()
    return read_tail(2, start)


def _ppids() -> dict[int, tuple[int, bytes]]:
    """{pid: (parent pid, state)} for every process in /proc (empty where there is no /proc)."""
    table = {}  # type: dict[int, tuple[int, bytes]]
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        table[int(name)] = (int(fields[1]), fields[0])
    return table


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (zombies left out: they cannot do anything any more)."""
    table = _ppids()
    children = {}  # type: dict[int, list[int]]
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for kid in children.get(todo.pop(), ()):
            if kid not in found:
                found.append(kid)
                todo.append(kid)
    return [pid for pid in found if table[pid][1] not in (b"Z", b"X")]


def kill_descendants(root: int, rounds: int = 50) -> None:
    """SIGKILL everything below ``root``, again and again while new processes appear."""
    for attempt in range(rounds):
        alive = descendants(root)
        if not alive:
            return
        for pid in alive:
            try:  # noqa: SIM105 (contextlib is one more import in every worker)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if attempt:
            time.sleep(0.01)


class _Blocker:
    """A meta-path finder that makes ``import torch`` fail with a reason instead of a crash."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "torch" or name.startswith("torch."):
            raise ImportError(self.reason, name=name)
        return None


def _import_torch(channel: TextIO) -> tuple[ModuleType | None, str | None]:
    start = _offset()
    _emit(channel, "import", module="torch", offset=start)
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
            output=_tail(start),
        )
        return None, error
    finally:
        if collecting:
            gc.enable()
    _emit(channel, "imported", ok=True, version=torch.__version__, seconds=time.perf_counter() - started)
    return torch, None


def _unmet(needs: list[str], torch_state: Json) -> str | None:
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


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` at a word end: kbgen redacts secrets later, and a token cut in two
    would lose the prefix that gives it away."""
    kept = text[: limit - 1]
    if not text[limit - 1].isspace():
        kept = kept[: max(kept.rfind(" "), kept.rfind("\n"), kept.rfind("\t")) + 1]
    return kept.rstrip() + "…"


def _clean(result: object) -> tuple[Json | None, str | None]:
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


def _run_one(job: Json) -> object:
    namespace = {"__name__": "kbgen_probe_" + job["id"].replace("-", "_"), "__file__": job["path"]}
    with open(job["path"], encoding="utf-8") as handle:
        code = compile(handle.read(), job["path"], "exec")
    exec(code, namespace)
    runner = namespace.get("run")
    if not callable(runner):
        raise RuntimeError("the probe file defines no run() function")
    return runner()


def _probe(channel: TextIO, job: Json, torch_state: Json) -> None:
    start = _offset()
    _emit(channel, "start", id=job["id"], offset=start)
    started = time.perf_counter()
    reason = _unmet(job.get("needs") or [], torch_state)
    if reason:
        _emit(channel, "result", id=job["id"], seconds=0.0, result={"status": "skip", "message": reason})
        return
    try:
        raw = _run_one(job)
        result, problem = _clean(raw)
        if problem:
            printed = _tail(start).strip()
            if printed:
                problem += f" (it printed {printed[-120:]!r}; return the result dict instead of printing it)"
            result = {"status": "error", "message": problem}
    except SystemExit as exc:
        result = {"status": "error", "message": f"the probe called sys.exit({exc.code!r})"}
    except MemoryError:
        traceback.print_exc()
        result = {"status": "error", "message": _out_of_memory()}
    except BaseException as exc:
        traceback.print_exc()
        last = str(exc).strip().splitlines()
        result = {"status": "error", "message": f"{type(exc).__name__}: {last[0] if last else ''}"}
        if MEMORY_CAP["bytes"] and "can't allocate memory" in str(exc):  # torch's CPU allocator
            result["message"] = _out_of_memory()
    _emit(
        channel,
        "result",
        id=job["id"],
        seconds=time.perf_counter() - started,
        result=result,
        output=_tail(start),
    )


def _out_of_memory() -> str:
    if MEMORY_CAP["bytes"]:
        cap = "%.0f MiB" % (MEMORY_CAP["bytes"] / 2**20)
        return "out of memory: the probe needed more than its memory cap of " + cap + " (--memory-limit)"
    return "out of memory (MemoryError)"


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def _cap_memory(limit: int) -> None:
    """Cap the data memory (heap and private mappings; not the address space CUDA reserves)."""
    try:
        import resource
    except ImportError:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    except (ValueError, OSError):
        return
    MEMORY_CAP["bytes"] = limit


def _bail(scratch: str | None) -> None:
    """kbgen is gone: take every process this worker started with it, and the scratch folder."""
    kill_descendants(os.getpid())
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    os._exit(1)


def _wait_for_eof(fd: int, scratch: str | None) -> None:
    """kbgen holds the write end of this pipe and never writes: end of file means it is gone."""
    try:
        if os.read(fd, 1):
            return
    except OSError:  # a probe closed the descriptor
        return
    _bail(scratch)


def _death_signal() -> bool:
    """Have Linux send SIGTERM when kbgen exits; False where that cannot be arranged."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of probes stay ours to kill
        done: int = libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        return done == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(argv: list[str]) -> None:
    """Exit with the whole tree when kbgen exits, however it exits (SIGKILL included)."""
    scratch = _option(argv, "--scratch")
    signal.signal(signal.SIGTERM, lambda signum, frame: _bail(scratch))
    lifeline = _option(argv, "--lifeline")
    if lifeline is None:
        return
    fd = int(lifeline)
    os.set_inheritable(fd, False)
    if not _death_signal():  # the pipe is the only watch: a thread waits for its end
        threading.Thread(target=_wait_for_eof, args=(fd, scratch), daemon=True).start()
        return
    import select

    if select.select([fd], [], [], 0)[0]:  # kbgen died before the death signal was set up
        _wait_for_eof(fd, scratch)


def main(argv: list[str]) -> int:
    # Running as a script put this folder first on sys.path; probes must not import our siblings.
    here = os.path.dirname(os.path.abspath(__file__))  # noqa: PTH100, PTH120
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # noqa: PTH100
    _watch_parent(argv)
    memory = _option(argv, "--memory")
    if memory:
        _cap_memory(int(memory))
    if "--nice" in argv and hasattr(os, "nice"):
        os.nice(10)  # leave the CPU to the worker importing torch: it is the one everybody waits for
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # from here on, whatever anyone prints goes to the output file
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(signal, "SIGUSR1"):  # on timeout kbgen sends SIGUSR1 first: the stack shows where it hung
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    _emit(channel, "hello", python=sys.version.split()[0], executable=sys.executable, pid=os.getpid())
    blocked = os.environ.get("KBGEN_TORCH_BLOCKED")
    if blocked:
        sys.meta_path.insert(0, _Blocker(blocked))
    torch_state: Json = {"module": None, "error": blocked or "not imported"}
    if "--torch" in argv and not blocked:
        torch_state["module"], torch_state["error"] = _import_torch(channel)
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
