"""Node checks (`node.*`): what the node needs beside its accelerators."""

from __future__ import annotations

from ..inputs import InputError
from ..results import errored, evidence, failed, passed, skipped, warned
from ..systemd import path_unit
from .common import unavailable


def mount_points(text: str) -> dict:
    """Mount point -> (device, fstype) from /proc/self/mounts (octal escapes such as \\040 decoded)."""
    points = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            points[_unescape(parts[1])] = (_unescape(parts[0]), parts[2])
    return points


def _unescape(value: str) -> str:
    # The kernel writes space, tab, newline and backslash in mount fields as \ooo.
    out = []
    index = 0
    while index < len(value):
        chunk = value[index : index + 4]
        if len(chunk) == 4 and chunk[0] == "\\" and chunk[1:].isdigit():
            out.append(chr(int(chunk[1:], 8)))
            index += 4
        else:
            out.append(value[index])
            index += 1
    return "".join(out)


def mount_unit(path: str) -> str:
    """The systemd .mount unit of a mount point (`systemd-escape --path --suffix=mount`)."""
    try:
        return path_unit(path)
    except InputError:
        return f"the .mount unit of {path}"


def _mount_spec(item) -> dict:
    """A required mount as a dict: a plain path (presence only) or {path, fstype, writable, unit}."""
    if isinstance(item, str):
        item = {"path": item}
    return {
        "path": str(item["path"]).rstrip("/") or "/",
        "fstype": item.get("fstype") or None,
        "writable": bool(item.get("writable")),
        "unit": item.get("unit") or None,
    }


def _unit_of(spec: dict) -> str:
    if spec["unit"]:
        return spec["unit"]
    if spec["fstype"] == "fuse.juicefs":
        return "its juicefs-<volume>.service"
    return mount_unit(spec["path"])


def mount_metrics(probes: dict) -> dict:
    """node.mount_probe_ms: the slowest successful writable-probe round trip (none probed: nothing)."""
    times = [p["ms"] for p in (probes or {}).values() if p.get("result") == "ok" and p.get("ms") is not None]
    return {"node.mount_probe_ms": max(times)} if times else {}


def node_mounts(mounts, required: list, probes: dict | None = None, capture: bool = False) -> dict:
    """Each required mount present, of its fstype, and (where `writable`) a probe file written.

    `probes`: path -> probe_writable() result for the writable mounts found (live only);
    `capture`: the mounts came from a capture: presence and type only, writability not probed.
    """
    check = "node.mounts"
    if not required:
        return skipped(
            check,
            "no required mounts configured (validate_required_mounts, juicefs_mounts, ceph_cephfs_mounts)",
        )
    if not mounts.ok:
        return unavailable(check, mounts)
    probes = probes or {}
    points = mount_points(mounts.text)
    specs = [_mount_spec(item) for item in required]
    lines, missing, bad, broken, notes = [], [], [], [], []
    for spec in specs:
        path = spec["path"]
        unit = _unit_of(spec)
        if path not in points:
            lines.append(f"(no entry for {path})")
            missing.append((path, unit))
            continue
        device, fstype = points[path]
        lines.append(f"{device} {path} {fstype}")
        if spec["fstype"] and fstype != spec["fstype"]:
            lines[-1] += f" (expected {spec['fstype']})"
            bad.append((f"{path} is {fstype}, not {spec['fstype']}", unit))
            continue
        if not spec["writable"]:
            continue
        if capture:
            lines[-1] += "; writability not probed (capture)"
            notes.append(path)
            continue
        probe = probes.get(path)
        if probe is None:
            lines[-1] += "; writability not probed"
            notes.append(path)
        elif probe["result"] == "ok":
            lines[-1] += f"; probe file {probe['file']} written, read back, removed"
        elif probe["result"] == "timeout":
            lines[-1] += f"; probe: {probe['error']}"
            broken.append((f"{path}: mount not responding", unit))
        else:
            lines[-1] += f"; probe {probe.get('step')} failed: {probe['error']}"
            bad.append((f"{path} not writable ({probe.get('step')}: {probe['error']})", unit))
    found = evidence(mounts.command, lines, mounts.file)
    units = sorted({unit for _what, unit in missing + bad + broken})
    remedy = (
        f"check and restart {', '.join(units)} (systemctl status; journalctl -u); a JuiceFS mount needs "
        "its metadata engine and object store reachable, a CephFS mount its monitors and keyring; "
        "jobs on this node would not find their data"
    )
    if missing or bad:
        said = [f"not mounted: {', '.join(path for path, _unit in missing)}"] if missing else []
        said += [what for what, _unit in bad + broken]
        return failed(check, "; ".join(said), found, remedy)
    if broken:
        return errored(check, "; ".join(what for what, _unit in broken), found, remedy)
    message = f"required mounts present: {', '.join(s['path'] for s in specs)}"
    if notes:
        message += f" (writability not probed{' in a capture' if capture else ''}: {', '.join(notes)})"
    return passed(check, message, found)


# --- node.time_sync ---------------------------------------------------------------------------

# chronyd's leap status words when it is synchronised (chronyc tracking, "Leap status").
_SYNCED_LEAP = ("normal", "insert second", "delete second")
MAX_OFFSET_S = 0.1
_SYNC_REMEDY = (
    "check that the NTP servers (base_chrony_servers) are reachable from the node: chronyc -n sources "
    "shows their state; synchronisation takes a few minutes after chronyd starts"
)
_NO_TIME_SERVICE = (
    "install and start chrony (apt-get install chrony; systemctl enable --now chrony), as the base role "
    "does, with base_chrony_servers set to the site's NTP servers"
)


def key_values(text: str, separator: str = ":") -> dict:
    """'Key : value' (or key=value) lines -> {lower-case key: value}."""
    pairs = {}
    for line in text.splitlines():
        key, sep, value = line.partition(separator)
        if sep and key.strip():
            pairs[key.strip().lower()] = value.strip()
    return pairs


def parse_tracking(text: str) -> dict:
    """`chronyc -n tracking` -> {leap, reference, offset_s}; ValueError when it is not that output."""
    pairs = key_values(text)
    if "leap status" not in pairs or "reference id" not in pairs:
        raise ValueError("not `chronyc tracking` output: no 'Reference ID' and 'Leap status' lines")
    offset = None
    # 'System time     : 0.000012345 seconds slow of NTP time'
    words = pairs.get("system time", "").split()
    if len(words) >= 3 and words[1] == "seconds" and words[2] in ("slow", "fast"):
        try:
            offset = float(words[0]) * (-1 if words[2] == "slow" else 1)
        except ValueError:
            offset = None
    return {"leap": pairs["leap status"], "reference": pairs["reference id"], "offset_s": offset}


def _tracking_lines(output) -> list[str]:
    wanted = ("reference id", "stratum", "system time", "leap status")
    return [line.strip() for line in output.lines() if line.split(":", 1)[0].strip().lower() in wanted]


def node_time_sync(chrony, timedatectl=None) -> dict:
    """chronyd's view (`chronyc -n tracking`); systemd's (`timedatectl`) when chronyc gave none.

    `timedatectl` is None when it was not asked (chronyc answered).
    """
    check = "node.time_sync"
    if chrony.ok:
        return _judge_tracking(check, chrony)
    if timedatectl is not None and timedatectl.ok:
        return _judge_timedatectl(check, timedatectl, chrony)
    if chrony.state == "failed":
        # chronyc is installed but no chronyd answers ('506 Cannot talk to daemon'), and
        # systemd names no other synchronised time service.
        lines = [chrony.error, *chrony.stderr.splitlines()[:2]]
        if timedatectl is not None and timedatectl.error:
            lines.append(timedatectl.error)
        return failed(
            check,
            f"no time service is running: {chrony.error}",
            evidence(chrony.command, lines, chrony.file),
            _NO_TIME_SERVICE,
        )
    asked = [o for o in (chrony, timedatectl) if o is not None]
    if all(o.state == "not_found" for o in asked):
        return errored(
            check,
            "could not check: neither chronyc nor timedatectl can be run on the node",
            evidence("; ".join(o.command for o in asked), [o.error for o in asked]),
            _NO_TIME_SERVICE,
        )
    return unavailable(
        check, timedatectl if timedatectl is not None and chrony.state == "not_found" else chrony
    )


def _judge_tracking(check: str, chrony) -> dict:
    try:
        tracking = parse_tracking(chrony.text)
    except ValueError as exc:
        return errored(
            check,
            f"could not check: {exc}",
            evidence(chrony.command, chrony.lines()[:3], chrony.file),
            "run `chronyc -n tracking` on the node and check its output",
        )
    found = evidence(chrony.command, _tracking_lines(chrony), chrony.file)
    if tracking["leap"].lower() not in _SYNCED_LEAP:
        return warned(
            check,
            f"chronyd runs but is not synchronised yet (leap status: {tracking['leap']})",
            found,
            _SYNC_REMEDY,
        )
    offset = tracking["offset_s"]
    if offset is not None and abs(offset) > MAX_OFFSET_S:
        return warned(
            check,
            f"synchronised, but the clock is {abs(offset):.3f} s off NTP time (more than {MAX_OFFSET_S} s)",
            found,
            "chronyd is still slewing the clock: wait and check again; `chronyc makestep` steps it at once",
        )
    where = tracking["reference"]
    said = f", offset {offset:+.6f} s" if offset is not None else ""
    return passed(check, f"synchronised by chronyd to {where}{said}", found)


def _judge_timedatectl(check: str, output, chrony) -> dict:
    commands = "; ".join(o.command for o in (chrony, output) if o is not None)
    pairs = key_values(output.text, "=")
    ntp, synced = pairs.get("ntp", "").lower(), pairs.get("ntpsynchronized", "").lower()
    found = evidence(commands, [line.strip() for line in output.lines() if "=" in line], output.file)
    if synced not in ("yes", "no"):
        return errored(
            check,
            "could not check: timedatectl printed no NTPSynchronized=yes|no",
            evidence(output.command, output.lines()[:3], output.file),
            "run `timedatectl show -p NTP -p NTPSynchronized` on the node and check its output",
        )
    if synced == "yes":
        return passed(check, "the clock is NTP-synchronised (timedatectl: NTPSynchronized=yes)", found)
    if ntp == "no":
        return failed(
            check,
            "NTP is off (timedatectl: NTP=no): no time service keeps the clock",
            found,
            _NO_TIME_SERVICE,
        )
    return warned(
        check,
        "a time service runs but the clock is not synchronised yet (timedatectl: NTPSynchronized=no)",
        found,
        _SYNC_REMEDY,
    )


# --- node.root_fs -----------------------------------------------------------------------------

GIB_KIB = 1024 * 1024


def node_root_fs(space, min_free_gib: float) -> tuple:
    """(result, metrics): free space of `/` against `root_min_free_gib` (warn below twice that)."""
    check = "node.root_fs"
    if not space.ok or not space.data:
        return unavailable(check, space), {}
    free = space.data["avail_kib"] / GIB_KIB
    total = space.data["total_kib"] / GIB_KIB
    metrics = {"node.root_free_gib": round(free, 2)}
    figures = f"{free:.1f} GiB free of {total:.1f} GiB on {space.data.get('mount') or '/'}"
    lines = [line.strip() for line in space.lines()] or [figures]
    found = evidence(space.command, lines, space.file)
    remedy = (
        "free space on / (journalctl --vacuum-size=1G, apt-get clean, old container images and core dumps) "
        "or grow the file system"
    )
    if free < min_free_gib:
        return failed(
            check, f"only {figures}: below the {min_free_gib:g} GiB minimum", found, remedy
        ), metrics
    if free < 2 * min_free_gib:
        message = f"{figures}: less than twice the {min_free_gib:g} GiB minimum"
        return warned(check, message, found, remedy), metrics
    return passed(check, figures, found), metrics


# --- node.os_release --------------------------------------------------------------------------


def parse_os_release(text: str) -> dict:
    """/etc/os-release -> {KEY: value} (quotes removed); ValueError when it has no ID."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            fields[key] = value
    if not fields.get("ID"):
        raise ValueError("not an os-release file: no ID= line")
    return fields


def node_os_release(os_release, plan) -> dict:
    check = "node.os_release"
    if not plan:
        return skipped(check, 'no os_release planned (set os_release, e.g. "debian 12")')
    if not os_release.ok:
        return unavailable(check, os_release)
    try:
        fields = parse_os_release(os_release.text)
    except ValueError as exc:
        return errored(
            check,
            f"could not check: {os_release.command}: {exc}",
            evidence(os_release.command, os_release.lines()[:3], os_release.file),
            "check /etc/os-release on the node (package base-files)",
        )
    have_id, have_version = fields.get("ID", ""), fields.get("VERSION_ID", "")
    want_id, want_version = str(plan["id"]), str(plan["version_id"])
    lines = [f"{key}={fields[key]}" for key in ("ID", "VERSION_ID", "PRETTY_NAME") if key in fields]
    found = evidence(os_release.command, lines, os_release.file)
    same_version = have_version == want_version or have_version.startswith(want_version + ".")
    if have_id == want_id and same_version:
        return passed(check, f"{have_id} {have_version} as planned ({plan.get('text') or want_id})", found)
    return failed(
        check,
        f"the node runs {have_id or '?'} {have_version or '?'}, the plan says {want_id} {want_version}",
        found,
        "reinstall the node with the planned OS release, or fix os_release in the inventory",
    )
