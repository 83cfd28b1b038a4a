"""The launch settings torch.distributed reads (env:// rendezvous), and whether they can work here."""

PROBE = {
    "id": "dist-env",
    "title": "Distributed launch settings",
    "description": "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK and LOCAL_WORLD_SIZE as this "
    "process sees them (run it the way the job is launched: inside the job script or under srun), the "
    "launcher that set them, whether RANK < WORLD_SIZE, whether MASTER_ADDR resolves (5 s limit), whether "
    "MASTER_PORT (29500 when unset) can be bound on this host, and whether MASTER_ADDR:MASTER_PORT "
    "answers (3 s limit). Not in the default set: it opens sockets.",
    "needs": [],
    "timeout": 20,
    "default": False,
}

import os
import socket
import sys
import threading

REQUIRED = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
SHOWN = (*REQUIRED, "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "USE_LIBUV")
DEFAULT_PORT = 29500  # torchrun's and torch.distributed.launch's default
RESOLVE_LIMIT = 5.0
CONNECT_LIMIT = 3.0
MAX_ADDRESSES = 4


def _launcher(env):
    if env.get("TORCHELASTIC_RUN_ID"):
        return "torchrun"
    if env.get("SLURM_PROCID") is not None:
        return "slurm"
    if env.get("OMPI_COMM_WORLD_RANK") is not None or env.get("PMI_RANK") is not None:
        return "mpi"
    return None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _resolve(host, limit=RESOLVE_LIMIT):
    """The addresses ``host`` resolves to, or an error; a resolver that hangs is abandoned after
    ``limit`` seconds (getaddrinfo has no timeout of its own, so it runs in a daemon thread)."""
    found = {}

    def lookup():
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
            found["addresses"] = sorted({info[4][0] for info in infos})
        except (OSError, UnicodeError) as exc:
            found["error"] = str(exc) or type(exc).__name__

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        return None, f"no answer within {limit:g} s"
    return found.get("addresses"), found.get("error")


def _bindable(port):
    """Whether a server socket can listen on ``port`` here, as c10d's TCPStore tries it: [::] (dual
    stack, so an IPv4 listener blocks it too), then 0.0.0.0, with SO_REUSEADDR (a port in TIME_WAIT
    counts as free, one with a listener does not)."""
    errors = []
    for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 on this host
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
            sock.listen(1)
            return True, None
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
        finally:
            sock.close()
    return False, "; ".join(errors) or "no socket family available"


def _connect(host, port, limit=CONNECT_LIMIT):
    """``open``, ``refused`` (the host answers, nothing listens), ``timeout`` or the error."""
    try:
        with socket.create_connection((host, port), timeout=limit):
            return "open"
    except ConnectionRefusedError:
        return "refused"
    except socket.timeout:  # noqa: UP041 (TimeoutError only from Python 3.10; nodes may run 3.8)
        return "timeout"
    except OSError as exc:
        return f"error: {exc.strerror or exc}"


def _env_facts(env):
    facts = {name: env.get(name) for name in SHOWN}
    missing = [name for name in REQUIRED if not env.get(name)]
    facts["launcher"] = _launcher(env)
    facts["missing"] = ", ".join(missing) or None
    facts["env_complete"] = not missing
    facts["env_partial"] = 0 < len(missing) < len(REQUIRED)
    return facts, missing


def _numbers(env):
    """Problems with RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE as numbers."""
    problems = []
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        if env.get(name) and (_int(env[name]) is None or _int(env[name]) < 0):
            problems.append(f"{name}={env[name]!r} is not a non-negative integer")
    for low, high in (("RANK", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_WORLD_SIZE")):
        a, b = _int(env.get(low)), _int(env.get(high))
        if a is not None and b is not None and a >= 0 and b > 0 and a >= b:
            problems.append(f"{low}={a} is not below {high}={b}")
    return problems


def _network(env, facts):
    """Resolve MASTER_ADDR, try to bind MASTER_PORT here, try to reach the master; problems found."""
    problems, notes = [], []
    port = _int(env.get("MASTER_PORT")) if env.get("MASTER_PORT") else DEFAULT_PORT
    if port is None or not 0 < port < 65536:
        problems.append(f"MASTER_PORT={env.get('MASTER_PORT')!r} is not a TCP port (1-65535)")
        port = None
    facts["port_checked"] = port
    if port is not None:
        free, why = _bindable(port)
        facts["port_free_here"] = free
        facts["port_bind_error"] = why
        if not free:
            notes.append(
                f"port {port} cannot be bound on this host ({why}): fine if this job's rank 0 already "
                "listens on it, otherwise another run or a stale process holds it"
            )
    host = env.get("MASTER_ADDR")
    if host:
        addresses, error = _resolve(host)
        facts["master_addr_resolves"] = bool(addresses)
        facts["master_addr_ips"] = ", ".join((addresses or [])[:MAX_ADDRESSES]) or None
        if not addresses:
            problems.append(f"MASTER_ADDR={host!r} does not resolve: {error}")
        elif port is not None:
            facts["master_connect"] = _connect(host, port)
    return problems, notes


def run():
    env = os.environ
    facts, missing = _env_facts(env)
    facts["platform"] = sys.platform
    problems = _numbers(env)
    net_problems, notes = _network(env, facts)
    problems += net_problems
    if sys.platform == "win32" and env.get("USE_LIBUV") != "0":
        notes.append("on Windows, torch 2.4+ wheels built without libuv need USE_LIBUV=0 for torchrun")
    if problems:
        return {"status": "fail", "message": "; ".join(problems + notes), "facts": facts}
    if facts["env_partial"]:
        message = "set: " + ", ".join(n for n in REQUIRED if env.get(n)) + "; missing: " + facts["missing"]
        message += " (init_process_group with env:// needs all four)"
        return {"status": "warn", "message": "; ".join([message, *notes]), "facts": facts}
    if missing:
        message = (
            "no launcher variables set (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK): this process was not "
            "started by torchrun/srun/mpirun, so init_process_group('env://') fails here"
        )
        return {"status": "warn", "message": "; ".join([message, *notes]), "facts": facts}
    message = (
        f"rank {env['RANK']} of {env['WORLD_SIZE']} ({facts['launcher'] or 'launcher unknown'}), "
        f"master {env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    )
    if facts.get("master_connect") not in (None, "open"):
        notes.append(f"connecting to the master gave {facts['master_connect']}")
    return {"status": "warn" if notes else "pass", "message": "; ".join([message, *notes]), "facts": facts}
