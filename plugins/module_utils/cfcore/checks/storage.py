"""Shared-storage checks (`storage.*`) and the writability probe of `node.mounts`.

- `storage.juicefs_session`: `juicefs status <meta_url>` (META_PASSWORD from the mount's
  env file) lists a session of this host (`HostName`, also its short name) at the mount
  point that has not expired (1.x `Expire`; 0.16: `Heartbeat` + 5 minutes).
- `storage.ceph_health`: `ceph --cluster C --id X --connect-timeout 10 health --format json`
  (20 s): HEALTH_OK pass, HEALTH_WARN warn, HEALTH_ERR fail, the checks' summaries as evidence.
- `probe_writable(path, host)`: a probe file `<path>/.clusterforge-probe-<host>-<pid>`
  written, read back and removed in a child process bounded by 10 s, so a hung FUSE
  mount costs its own check (`error`, "mount not responding") and never hangs validation.

Secrets (META_PASSWORD, a password inside a meta URL) never reach evidence: `scrub`.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import subprocess
import sys

from ..parsers.storage import session_expiry
from ..results import errored, evidence, failed, passed, skipped, warned
from .common import unavailable

PROBE_TIMEOUT_S = 10
CEPH_TIMEOUT_S = 20
JUICEFS_TIMEOUT_S = 30
MAX_ENV_FILE_BYTES = 64 * 1024
_URL_PASSWORD = re.compile(r"(://[^:/@\s]*:)([^@/\s]+)(@)")
_ENV_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")

# The child that probes one mount point: prints one JSON line {"ok", "step", "error", "ms"};
# ms: the round trip (create, write, fsync, read back, remove) timed inside the child, so the
# interpreter's start is not counted.
_PROBE_SCRIPT = r"""
import json, os, sys, time
path, token = sys.argv[1], sys.argv[2].encode()
step = "create"
started = time.monotonic()
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        step = "write"
        os.write(fd, token)
        os.fsync(fd)
    finally:
        os.close(fd)
    step = "read back"
    with open(path, "rb") as handle:
        data = handle.read()
    step = "remove"
    os.unlink(path)
    if data != token:
        print(json.dumps({"ok": False, "step": "read back", "error": "read back other bytes than written"}))
    else:
        ms = round((time.monotonic() - started) * 1000, 3)
        print(json.dumps({"ok": True, "step": "done", "error": "", "ms": ms}))
except OSError as exc:
    if step in ("write", "read back"):
        try:
            os.unlink(path)
        except OSError:
            pass
    why = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
    print(json.dumps({"ok": False, "step": step, "error": why}))
"""


def scrub(text: str, secrets=()) -> str:
    """`text` without the secret values and without the password of any URL in it."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(str(secret)) >= 3:
            text = text.replace(str(secret), "****")
    return _URL_PASSWORD.sub(r"\1****\3", text)


def probe_name(host: str, pid: int | None = None) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", host or "host")
    return f".clusterforge-probe-{safe}-{os.getpid() if pid is None else pid}"


def probe_writable(path: str, host: str, timeout: float = PROBE_TIMEOUT_S, python: str | None = None) -> dict:
    """{"result": "ok" | "failed" | "timeout", "file", "step", "error", "ms"} of one probe of `path`
    (ms: the round trip in milliseconds, on "ok" only)."""
    target = os.path.join(path, probe_name(host))
    token = f"clusterforge probe {os.getpid()}\n"
    try:
        proc = subprocess.Popen(
            [python or sys.executable or "python3", "-c", _PROBE_SCRIPT, target, token],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return {"result": "failed", "file": target, "step": "start", "error": f"probe not started: {exc}"}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        # A process stuck in the kernel on a dead FUSE mount may outlive SIGKILL: do not wait for it.
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        return {
            "result": "timeout",
            "file": target,
            "step": "probe",
            "error": f"mount not responding: no answer in {timeout:g} s",
        }
    lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.strip()]
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        why = err.decode("utf-8", "replace").strip().splitlines()[:1] or [f"exit {proc.returncode}"]
        return {"result": "failed", "file": target, "step": "probe", "error": f"probe failed: {why[0]}"}
    return {
        "result": "ok" if answer.get("ok") else "failed",
        "file": target,
        "step": answer.get("step"),
        "error": answer.get("error") or "",
        "ms": answer.get("ms") if answer.get("ok") else None,
    }


def read_env_file(path: str) -> dict:
    """KEY=VALUE lines of a systemd EnvironmentFile (quotes removed); OSError/ValueError when unusable."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_ENV_FILE_BYTES + 1)
    if len(data) > MAX_ENV_FILE_BYTES:
        raise ValueError(f"{path} is over {MAX_ENV_FILE_BYTES // 1024} KiB: not an environment file")
    values = {}
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if not match:
            continue
        key, value = match.groups()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def volume_unit(mount: dict) -> str:
    """The systemd service of a JuiceFS mount: juicefs-<volume>.service (volume, else the env file's stem)."""
    volume = mount.get("volume")
    if not volume and mount.get("env_file"):
        volume = os.path.basename(str(mount["env_file"])).rsplit(".env", 1)[0]
    return f"juicefs-{volume}.service" if volume else "the juicefs-<volume>.service of this mount"


def _short(name) -> str:
    return str(name or "").split(".")[0].lower()


def _same_host(session_host, hostnames) -> bool:
    wanted = {str(h).lower() for h in hostnames if h} | {_short(h) for h in hostnames if h}
    return str(session_host or "").lower() in wanted or _short(session_host) in wanted


def _norm(path) -> str:
    return str(path or "").rstrip("/") or "/"


# --- storage.juicefs_session --------------------------------------------------------------------


def storage_juicefs_session(
    mounts: list, outputs: dict, hostnames, now: datetime.datetime | None = None
) -> dict:
    """`outputs`: mount path -> list of `juicefs status` Outputs (live: one; a capture: every file)."""
    check = "storage.juicefs_session"
    if not mounts:
        return skipped(check, "no JuiceFS mounts planned on this host (juicefs_mounts)")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    host = sorted(str(h) for h in hostnames if h)[0] if hostnames else "?"
    lines, problems, errors, commands, files = [], [], [], [], []
    for mount in mounts:
        path = _norm(mount["path"])
        unit = volume_unit(mount)
        usable = [o for o in outputs.get(mount["path"], []) if o is not None and o.usable]
        for output in outputs.get(mount["path"], []):
            if output is not None:
                commands.append(output.command)
                if output.file:
                    files.append(output.file)
        if not usable:
            broken = [o for o in outputs.get(mount["path"], []) if o is not None]
            if not broken:
                errors.append((path, None))
            else:
                errors.append((path, broken[0]))
            continue
        sessions = [s for o in usable for s in o.data.get("sessions", [])]
        mine = [
            s
            for s in sessions
            if _same_host(s.get("hostname"), hostnames) and _norm(s.get("mountpoint")) == path
        ]
        if not mine:
            others = sorted({f"{s.get('hostname')}:{s.get('mountpoint')}" for s in sessions})
            lines.append(f"{path}: no session of {host} (sessions: {', '.join(others) or 'none'})")
            problems.append(f"{path}: mount not registered: restart {unit}")
            continue
        live = []
        for session in mine:
            expiry = session_expiry(session)
            if expiry is None or expiry > now:
                live.append((session, expiry))
        best = mine[-1]
        if not live:
            expiry = session_expiry(best)
            lines.append(
                f"{path}: Sid {best.get('sid')} HostName {best.get('hostname')} "
                f"expired {best.get('expire') or best.get('heartbeat')}"
            )
            problems.append(
                f"{path}: session {best.get('sid')} expired at {expiry.isoformat() if expiry else '?'} "
                f"(the client stopped heartbeating): restart {unit}"
            )
            continue
        session, expiry = live[-1]
        until = session.get("expire") or (
            f"heartbeat {session.get('heartbeat')}" if session.get("heartbeat") else "?"
        )
        lines.append(
            f"{path}: Sid {session.get('sid')} HostName {session.get('hostname')} "
            f"ProcessID {session.get('process_id')} Version {session.get('version')} Expire {until}"
        )
    found = evidence("; ".join(dict.fromkeys(commands)) or "juicefs status", lines, ", ".join(files) or None)
    if problems:
        return failed(
            check,
            "; ".join(problems),
            found,
            "systemctl restart the named juicefs-<volume>.service and see `journalctl -u` of it; "
            "`juicefs status <meta_url>` lists the sessions",
        )
    if errors:
        path, output = errors[0]
        if output is None:
            return unavailable(check, None, f"juicefs status was not run for {path}")
        result = unavailable(check, output)
        result["message"] = f"{path}: {result['message']}"
        return result
    return passed(
        check,
        f"JuiceFS sessions of {host} registered and live: {', '.join(_norm(m['path']) for m in mounts)}",
        found,
    )


# --- storage.ceph_health ------------------------------------------------------------------------


def ceph_health_argv(plan: dict) -> tuple:
    return (
        "ceph",
        "--cluster",
        str(plan.get("cluster") or "ceph"),
        "--conf",
        str(plan["conf"]),
        "--id",
        str(plan["client"]),
        "--keyring",
        str(plan["keyring"]),
        "--connect-timeout",
        "10",
        "health",
        "--format",
        "json",
    )


def storage_ceph_health(output, plan, keyring_error: str = "") -> dict:
    check = "storage.ceph_health"
    if not plan:
        return skipped(check, "no Ceph health client planned on this host (validate_ceph_health_client)")
    if keyring_error:
        return errored(
            check,
            f"could not check: {keyring_error}",
            evidence(f"test -r {plan['keyring']}", [keyring_error]),
            f"run the ceph_client role with {plan['client']} in ceph_client_keyrings (it writes "
            f"{plan['keyring']}), or set validate_ceph_health_client to a client this host has a keyring of",
        )
    if output is None or not output.usable:
        return unavailable(check, output)
    health = output.data
    status = health["status"]
    checks = health.get("checks") or {}
    lines = [f"{status}"] + [
        f"{name}: {entry.get('severity')} {entry.get('summary')}" for name, entry in sorted(checks.items())
    ]
    found = evidence(output.command, lines, output.file)
    summary = "; ".join(str(entry.get("summary")) for _name, entry in sorted(checks.items()))
    if status == "HEALTH_OK":
        return passed(check, "Ceph cluster HEALTH_OK", found)
    remedy = (
        "`ceph health detail` names what is wrong; fix those checks (OSDs down, PGs degraded, MON quorum...)"
    )
    if status == "HEALTH_WARN":
        return warned(check, f"Ceph cluster HEALTH_WARN: {summary or 'no checks listed'}", found, remedy)
    return failed(check, f"Ceph cluster HEALTH_ERR: {summary or 'no checks listed'}", found, remedy)
