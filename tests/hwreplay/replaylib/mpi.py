"""Replayed OpenMPI `mpirun` (tests only): runs the program once, here, telling it where its ranks are.

    mpirun [--allow-run-as-root] -np N [-H A:8,B:8 | --hostfile F] [-x VAR[=VAL]]...
           [--bind-to X] [--map-by X] [--mca K V] [--oversubscribe] ... PROGRAM [ARGS...]

OpenMPI's common options are parsed as OpenMPI does (the first word that is not
an option is the program). Instead of starting daemons over ssh, the replay runs
PROGRAM once on this node with the exported variables and

    HWREPLAY_MPI_NP=N  HWREPLAY_MPI_HOSTS=A,B  HWREPLAY_MPI_RANKS=8,8  (processes per host, by slot)

and a replayed benchmark (all_reduce_perf, all_reduce_test) prints the whole
job's output from them. A host other than this node must answer
`hwreplay peer-serve` (peer.py), as a node must be reachable for mpirun's
daemons: else OpenMPI's "ORTE was unable to reliably start one or more daemons."
and exit 1. PROGRAM runs in-process when it is a replayed tool (its shim, or a
path that does not exist whose name is a replayed tool of this hardware, such as
CANN's <toolkit>/tools/hccl_test/bin/all_reduce_test on a node without the
toolkit); any other executable runs as a process. A non-zero exit is reported
as mpirun reports it. As root without --allow-run-as-root (or both
OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) mpirun refuses, as
OpenMPI does (HWREPLAY_EUID pins the user id for tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from . import peer, perf
from .common import Context, ToolResult

RC_FAIL = 1
RULE = "-" * 74
FLAGS = {
    "--allow-run-as-root",
    "--oversubscribe",
    "-oversubscribe",
    "--nooversubscribe",
    "--tag-output",
    "-tag-output",
    "--timestamp-output",
    "--report-bindings",
    "-report-bindings",
    "--display-map",
    "--display-allocation",
    "--merge-stderr-to-stdout",
    "--noprefix",
    "--use-hwthread-cpus",
    "--enable-recovery",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
}
WITH_VALUE = {
    "-np": "np",
    "--np": "np",
    "-n": "np",
    "--n": "np",
    "-c": "np",
    "-H": "host",
    "-host": "host",
    "--host": "host",
    "-hostfile": "hostfile",
    "--hostfile": "hostfile",
    "-machinefile": "hostfile",
    "--machinefile": "hostfile",
    "--default-hostfile": "hostfile",
    "-x": "export",
    "--bind-to": "ignored",
    "-bind-to": "ignored",
    "--map-by": "ignored",
    "-map-by": "ignored",
    "--rank-by": "ignored",
    "-rank-by": "ignored",
    "-npernode": "ignored",
    "--npernode": "ignored",
    "-N": "ignored",
    "--prefix": "ignored",
    "-prefix": "ignored",
    "-wdir": "ignored",
    "--wdir": "ignored",
    "--wd": "ignored",
    "--path": "ignored",
    "--output-filename": "ignored",
    "--timeout": "ignored",
}
WITH_TWO_VALUES = {"--mca", "-mca", "--gmca", "-gmca"}


def parse(args: list):
    """mpirun's command line -> dict, or the error message OpenMPI prints (a str)."""
    options: dict = {"np": None, "hosts": [], "hostfiles": [], "exports": [], "flags": set()}
    position = 0
    while position < len(args):
        arg = args[position]
        if not arg.startswith("-"):
            options["program"], options["args"] = arg, args[position + 1 :]
            return options
        key, has_inline, inline = arg.partition("=")
        if arg in FLAGS:
            options["flags"].add(arg.lstrip("-"))
            position += 1
            continue
        if arg in WITH_TWO_VALUES:
            if position + 2 >= len(args):
                return f'mpirun: Error: option "{arg}" did not have enough parameters (2)'
            position += 3
            continue
        name = WITH_VALUE.get(key if has_inline else arg)
        if name is None:
            return f"mpirun: Error: unknown option \"{arg}\"\nType 'mpirun --help' for usage."
        if has_inline:
            value = inline
        else:
            if position + 1 >= len(args):
                return f'mpirun: Error: option "{arg}" did not have enough parameters (1)'
            value = args[position + 1]
            position += 1
        position += 1
        if name == "np":
            if not value.isdigit() or int(value) < 1:
                return f"mpirun: Error: the number of processes ({value}) must be a positive integer"
            options["np"] = int(value)
        elif name == "host":
            options["hosts"] += host_slots(value)
        elif name == "hostfile":
            options["hostfiles"].append(value)
        elif name == "export":
            options["exports"].append(value)
    return block("No executable was specified on the mpirun command line.\n\nAborting.")


def host_slots(text: str) -> list:
    """'A:8,B:8' -> [('A', 8), ('B', 8)]; a host without a count has one slot (OpenMPI 4)."""
    listed = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        host, _, count = (
            part.rpartition(":") if ":" in part and part.rsplit(":", 1)[1].isdigit() else (part, "", "1")
        )
        listed.append((host, int(count)))
    return listed


def read_hostfile(path: str) -> list | None:
    """'host slots=N' lines (comments and blank lines skipped); None when unreadable."""
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return None
    listed = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        slots = next(
            (int(w.split("=")[1]) for w in words[1:] if w.startswith("slots=") and w[6:].isdigit()), 1
        )
        listed.append((words[0], slots))
    return listed


def block(text: str) -> str:
    return f"{RULE}\n{text}\n{RULE}"


def placement(hosts: list, processes: int, oversubscribe: bool):
    """Processes per distinct host in order (by slot, as --map-by slot), or None when slots run out."""
    slots: dict = {}
    for host, count in hosts:
        slots[host] = slots.get(host, 0) + count
    counts = dict.fromkeys(slots, 0)
    left = processes
    for host, count in slots.items():
        taken = min(count, left)
        counts[host] += taken
        left -= taken
    if left and not oversubscribe:
        return None
    names = list(slots)
    for extra in range(left):
        counts[names[extra % len(names)]] += 1
    return counts


def refusal_as_root() -> str:
    return block(
        "mpirun has detected an attempt to run as root.\n\n"
        "Running as root is *strongly* discouraged as any mistake can damage the system.\n\n"
        "You can override this protection by adding the --allow-run-as-root option\n"
        "to the cmd line, or by setting both OMPI_ALLOW_RUN_AS_ROOT=1 and\n"
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment."
    )


def daemons_failed(unreachable: dict, ctx: Context) -> str:
    return (
        block(
            "ORTE was unable to reliably start one or more daemons.\n"
            "This usually is caused by:\n\n"
            "* not finding the required libraries and/or binaries on\n"
            "  one or more nodes. Please check your PATH and LD_LIBRARY_PATH\n"
            "  settings, or configure OMPI with --enable-orterun-prefix-by-default\n\n"
            "* lack of authority to execute on one or more specified nodes.\n"
            "  Please verify your allocation and authorities.\n\n"
            "* an inability to create a connection back to mpirun due to a\n"
            "  lack of common network interfaces and/or no route found between\n"
            "  them. Please check network connectivity (including firewalls\n"
            "  and network routing requirements)."
        )
        + "\n"
        + "".join(
            f"(hwreplay: the peer responder on {host}:{peer.port(ctx)}: {why}; "
            "is hwreplay-peer.service running there?)\n"
            for host, why in unreachable.items()
        )
    )


def not_found(program: str, node: str, rank: int) -> str:
    return block(
        "mpirun was unable to find the specified executable file, and therefore\n"
        f"did not launch the job.  This error was first reported for process\n"
        f"rank {rank}; it may have occurred for other processes as well.\n\n"
        "NOTE: A common cause for this error is misspelling a mpirun command\n"
        "      line parameter option (remember that mpirun interprets the first\n"
        "      unrecognized command line token as the executable).\n\n"
        f"Node:       {node}\nExecutable: {program}"
    )


def job_failed(rc: int) -> str:
    return (
        "-------------------------------------------------------\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n"
        "-------------------------------------------------------\n"
        + block(
            "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
            "the job to be terminated. The first process to do so was:\n\n"
            f"  Process name: [[{4000 + rc},1],0]\n  Exit code:    {rc}"
        )
        + "\n"
    )


def locate(ctx: Context, profile: dict, program: str):
    """('replay', tool) for a replayed tool of this hardware, ('exec', path), or None when not found."""
    from .shims import is_shim  # shims -> prerender -> tools, which imports this module
    from .tools import TOOLS, installed

    name = os.path.basename(program)
    replayed = name in TOOLS and installed(profile, name)
    if "/" in program:
        path = program if os.path.isfile(program) and os.access(program, os.X_OK) else None
    else:
        path = shutil.which(program, path=ctx.env.get("PATH", os.defpath))
    if path and is_shim(path) and replayed:
        return "replay", name
    if path:
        return "exec", path
    return ("replay", name) if replayed else None


def effective_uid(ctx: Context) -> int:
    pinned = ctx.env.get("HWREPLAY_EUID")
    return int(pinned) if pinned and pinned.isdigit() else os.geteuid()


def mpirun(profile: dict, args: list, ctx: Context) -> ToolResult:
    from .tools import run_tool  # tools imports this module

    options = parse(args)
    if isinstance(options, str):
        return ToolResult(rc=RC_FAIL, stderr=options + "\n")
    env = dict(ctx.env)
    allowed = env.get("OMPI_ALLOW_RUN_AS_ROOT") == "1" and env.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") == "1"
    if effective_uid(ctx) == 0 and "allow-run-as-root" not in options["flags"] and not allowed:
        return ToolResult(rc=RC_FAIL, stderr=refusal_as_root() + "\n")
    hosts = list(options["hosts"])
    for path in options["hostfiles"]:
        listed = read_hostfile(path)
        if listed is None:
            message = f"Open RTE was unable to open the hostfile:\n    {path}\n"
            message += "Check to make sure the path and filename are correct."
            return ToolResult(rc=RC_FAIL, stderr=block(message) + "\n")
        hosts += listed
    processes = options["np"] or (sum(count for _, count in hosts) if hosts else 1)
    counts = placement(hosts, processes, "oversubscribe" in options["flags"]) if hosts else {}
    if counts is None:
        message = (
            f"There are not enough slots available in the system to satisfy the {processes}\n"
            f"slots that were requested by the application:\n\n  {options['program']}\n\n"
            "Either request fewer slots for your application, or make more slots\navailable for use."
        )
        return ToolResult(rc=RC_FAIL, stderr=block(message) + "\n")
    located = locate(ctx, profile, options["program"])
    if located is None:
        return ToolResult(rc=RC_FAIL, stderr=not_found(options["program"], perf.hostname(ctx), 0) + "\n")
    remote = [host for host in counts if counts[host] and not peer.is_local(ctx, host)]
    asked = {host: peer.ask(ctx, host) for host in remote}
    answers = {host: info for host, (info, _why) in asked.items()}
    unreachable = {host: why for host, (info, why) in asked.items() if info is None}
    if unreachable:
        return ToolResult(rc=RC_FAIL, stderr=daemons_failed(unreachable, ctx))
    first_rank = 0
    for host, count in counts.items():
        info = answers.get(host)
        if info is not None and os.path.basename(options["program"]) not in info.get("tools", []):
            return ToolResult(rc=RC_FAIL, stderr=not_found(options["program"], host, first_rank) + "\n")
        first_rank += count
    for export in options["exports"]:  # -x VAR=VALUE sets it; -x VAR passes this environment's on
        name, has_value, value = export.partition("=")
        if has_value:
            env[name] = value
    env["HWREPLAY_MPI_NP"] = str(processes)
    if counts:
        env["HWREPLAY_MPI_HOSTS"] = ",".join(counts)
        env["HWREPLAY_MPI_RANKS"] = ",".join(str(count) for count in counts.values())
    kind, target = located
    if kind == "replay":
        result = run_tool(Context(env=env), target, list(options["args"]), profile)
    else:
        done = subprocess.run(
            [target, *options["args"]], env=env, capture_output=True, text=True, check=False
        )
        result = ToolResult(rc=done.returncode, stdout=done.stdout, stderr=done.stderr)
    if result.rc:
        result = ToolResult(rc=result.rc, stdout=result.stdout, stderr=result.stderr + job_failed(result.rc))
    return result
