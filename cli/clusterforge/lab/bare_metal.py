"""What a bare-metal Slurm worker has and a lab container lacks, restored at every boot by the lab.

A GPU node's slurmd with cgroup enforcement (proctrack/cgroup, task/cgroup +
affinity, ConstrainDevices) needs two things podman does not give a container:

- writable cgroup v1 controllers: podman mounts them read-only; slurmd creates
  its hierarchies (slurm_<node>/uid_*/job_*) in cpu, cpuacct, cpuset, memory,
  devices, freezer, pids and blkio. `mount -o remount,bind,rw` makes them
  writable (CAP_SYS_ADMIN, model.SLURM_WORKER_CAPABILITIES);
- the GPUs' character devices: /dev/nvidia0..N-1 (195:i) and /dev/nvidiactl
  (195:255), as the NVIDIA driver creates them, for gres.conf's File= lines.
  The container's device rules (model.Role.device_cgroup_rules) let a job open
  its own GPUs (ENXIO: there is no driver behind them) and no other (EPERM).

A container restart starts a fresh /dev and read-only controllers again, so the
lab installs a oneshot unit ordered before slurmd and enabled at boot. This is
the lab's stand-in for hardware, not a role's business: production roles never
see it (roles/slurm's Molecule scenario has its own copy in its prepare.yml).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab.context import LabContext
from clusterforge.lab.model import NVIDIA_MAJOR, NVIDIACTL_MINOR, Node
from clusterforge.lab.runner import Result

UNIT = "cflab-bare-metal.service"
UNIT_PATH = f"/etc/systemd/system/{UNIT}"
SCRIPT_PATH = "/usr/local/sbin/cflab-bare-metal"
SYSLOG_ID = "cflab-bare-metal"
JOURNAL_MARK = "--- journal of cflab-bare-metal:"
# The cgroup v1 controllers Slurm's cgroup plugins write to.
CGROUP_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "pids", "blkio")
MAX_PARALLEL = 16
INSTALL_TIMEOUT_S = 60


def script_text(gpus: int) -> str:
    """The boot-time script: idempotent (a second run changes nothing), fails loudly."""
    minors = " ".join(str(i) for i in range(gpus))
    lines = [
        "#!/bin/sh",
        "# Installed by `clusterforge lab up` (cli/clusterforge/lab/bare_metal.py) on lab Slurm workers:",
        "# writable cgroup controllers and GPU device files, as a bare-metal GPU node has them.",
        "set -eu",
        "# A unified (cgroup v2 only) host has no v1 controllers to remount.",
        'if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then',
        f"    for c in {' '.join(CGROUP_CONTROLLERS)}; do",
        '        mount -o remount,bind,rw "/sys/fs/cgroup/$c"',
        "    done",
        "fi",
    ]
    if gpus:
        lines += [
            f"for i in {minors}; do",
            f'    [ -e "/dev/nvidia$i" ] || mknod -m 0666 "/dev/nvidia$i" c {NVIDIA_MAJOR} "$i"',
            "done",
            f"[ -e /dev/nvidiactl ] || mknod -m 0666 /dev/nvidiactl c {NVIDIA_MAJOR} {NVIDIACTL_MINOR}",
        ]
    return "\n".join(lines) + "\n"


def unit_text() -> str:
    return (
        "[Unit]\n"
        "Description=ClusterForge lab: writable cgroup controllers and GPU device files, as on bare metal\n"
        "DefaultDependencies=no\n"
        "Before=slurmd.service\n"
        "ConditionVirtualization=container\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        f"ExecStart={SCRIPT_PATH}\n"
        f"SyslogIdentifier={SYSLOG_ID}\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target slurmd.service\n"
    )


def install_command(gpus: int) -> list[str]:
    """One `sh -ec` that writes the script and the unit, enables the unit and runs it now.

    restart, not start: a lab whose code changed re-runs the new script (it is idempotent).
    """
    script = (
        f"mkdir -p /usr/local/sbin\n"
        f"cat > {SCRIPT_PATH} <<'CFLAB_EOF'\n{script_text(gpus)}CFLAB_EOF\n"
        f"chmod 0755 {SCRIPT_PATH}\n"
        f"cat > {UNIT_PATH} <<'CFLAB_EOF'\n{unit_text()}CFLAB_EOF\n"
        f"chmod 0644 {UNIT_PATH}\n"
        "systemctl daemon-reload\n"
        f"systemctl enable --quiet {UNIT}\n"
        # The script's own words (its stderr is in the journal, not here) for the error message.
        f"if ! systemctl restart {UNIT}; then\n"
        f"    echo '{JOURNAL_MARK}' >&2\n"
        f"    journalctl -b -t {SYSLOG_ID} -o cat --no-pager -n 5 >&2\n"
        "    exit 1\n"
        "fi\n"
    )
    return ["sh", "-ec", script]


def failure_words(result: Result) -> str:
    """What the script said before it failed (the journal lines the installer printed), on one line."""
    _, mark, journal = result.stderr.partition(JOURNAL_MARK)
    lines = [line.strip() for line in journal.splitlines() if line.strip()] if mark else []
    return " ".join(lines) or result.last_error_line()


def workers(nodes: Sequence[Node]) -> list[Node]:
    return [node for node in nodes if node.role.slurm_worker]


def install(ctx: LabContext, nodes: Sequence[Node]) -> list[Node]:
    """Install and run the unit on every Slurm worker among nodes (all at once); returns them."""
    targets = workers(nodes)
    if not targets:
        return []

    def one(node: Node):
        return ctx.podman.exec(
            node.container, install_command(node.role.nvidia_gpus), timeout=INSTALL_TIMEOUT_S
        )

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(targets))) as pool:
        results = list(pool.map(one, targets))
    failed = [(node, result) for node, result in zip(targets, results, strict=True) if not result.ok]
    if failed:
        node, result = failed[0]
        hosts = ", ".join(n.host for n, _ in failed)
        raise EnvironmentNotReady(
            f"the lab's bare-metal unit {UNIT} failed on {hosts}: {failure_words(result)}",
            f"read why: podman exec {node.container} journalctl -u {UNIT} --no-pager; a node created "
            "by an older ClusterForge lacks the container flags it needs (CAP_SYS_ADMIN, CAP_SYS_NICE, "
            f"device rules): re-create it with `clusterforge lab down --name {node.lab}` then "
            f"`clusterforge lab up --name {node.lab}`",
        )
    return targets
