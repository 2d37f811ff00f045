"""The lossless-RoCE check (`roce.qos`): trust, PFC, ECN, CNP DSCP, traffic class, MTU, GID as planned.

    observed = collect(collector, plan, sysfs_root)     # one Output for every planned netdev
    result = roce_qos(observed, plan)

`collect` runs `mlnx_qos -i IF` per planned interface through the Collector (in
parallel; a capture answers from `mlnx_qos-<IF>.txt`, with `<file>.err` for a failed
run as cf-capture.sh writes them) and reads the netdev's sysfs/configfs attributes
(cfcore/roce.py says which). Its Output's data is `{"interfaces": {IF: state}}`
(`cfcore.roce.observe`), its text the mlnx_qos outputs, each after a
`# mlnx_qos -i IF` line, for evidence. It is unusable (the check `error`) when
mlnx_qos could not run at all: not installed, timed out, not captured, refused, or
printing something that is not its output on an interface that exists.
"""

from __future__ import annotations

import os

from .. import roce
from ..files import UnsafeFile, confined
from ..outputs import Output
from ..parsers.mlnx_qos import evidence_lines
from ..results import evidence, failed, merge, skipped
from .common import unavailable

CHECK = "roce.qos"
UNUSABLE = ("not_found", "timeout", "not_captured", "refused")
MAX_ATTRIBUTE_BYTES = 4096


def capture_file(iface: str) -> str:
    """The capture file of `mlnx_qos -i IF` (tools/cf-capture.sh writes it)."""
    return f"mlnx_qos-{iface}.txt"


def mlnx_qos_argv(iface: str) -> tuple:
    return ("mlnx_qos", "-i", iface)


def _from_capture(collector, iface: str) -> Output:
    """`mlnx_qos -i IF` as a capture holds it (captures name files by command, not by this argv)."""
    command = " ".join(mlnx_qos_argv(iface))
    name = capture_file(iface)
    out = collector.read("/" + name)
    if out.state == "ok":
        return Output(command, "ok", text=out.text, file=name)
    err = collector.read("/" + name + ".err")
    if err.state != "ok":
        if "refused" in (out.state, err.state):
            refused = out if out.state == "refused" else err
            return Output(command, "refused", error=refused.error, file=name)
        where = getattr(collector.source, "path", "")
        return Output(command, "not_captured", error=f"{name} is not in the capture {where}", file=name)
    first, _, rest = err.text.partition("\n")
    try:
        rc = int(first.split(":", 1)[1])
    except (IndexError, ValueError):
        rc = 1
    state = "not_found" if rc == 127 else "failed"
    return Output(
        command, state, stderr=rest, rc=rc, error=f"{command} exited {rc}: {rest.strip()}", file=name
    )


def _reader(collector, capture: bool):
    def read(path: str):
        output = collector.read(path)
        if output.state != "ok":
            return None
        return output.text

    return read


def _lister(collector, capture: bool):
    base = getattr(collector.source, "path", None) if capture else None

    def listdir(path: str):
        real = os.path.join(base, path.lstrip("/")) if capture else path
        try:
            if capture:
                real = confined(real, base)
            return sorted(os.listdir(real))
        except (OSError, UnsafeFile):
            return None

    return listdir


def collect(collector, plan: dict, sysfs_root: str) -> Output:
    """mlnx_qos and sysfs of every planned interface, as one Output (see the module docstring)."""
    capture = collector.source.kind == "capture"
    # A capture holds the node's tree under its own root: paths are read as "/sys/..." there.
    root = "/" if capture else collector.source.sysfs_root(sysfs_root)
    interfaces = plan["interfaces"]
    if not capture:
        collector.prefetch([(mlnx_qos_argv(iface), None) for iface in interfaces])
    reader, lister = _reader(collector, capture), _lister(collector, capture)
    states, texts, files = {}, [], []
    command = "; ".join(" ".join(mlnx_qos_argv(iface)) for iface in interfaces) + f"; read {root}sys"
    for iface in interfaces:
        qos = _from_capture(collector, iface) if capture else collector.run(mlnx_qos_argv(iface))
        sysfs = roce.read_sysfs(iface, plan, root, reader, lister)
        if qos.file:
            files.append(qos.file)
        if qos.state in UNUSABLE:
            return Output(command, qos.state, error=qos.error, stderr=qos.stderr, rc=qos.rc, file=qos.file)
        if qos.state in ("failed", "unparsable") and sysfs["present"]:
            # The netdev exists and mlnx_qos still could not read it: the tool's problem, not the plan's.
            return Output(command, qos.state, error=qos.error, stderr=qos.stderr, rc=qos.rc, file=qos.file)
        text = qos.text if qos.state == "ok" else None
        state = roce.observe(text, sysfs)
        if state["present"] and "mlnx_qos" in state["errors"]:
            return Output(
                command,
                "unparsable",
                text=qos.text,
                error=f"mlnx_qos -i {iface} printed no usable output: {state['errors']['mlnx_qos']}",
                file=qos.file,
            )
        states[iface] = state
        texts.append(f"# mlnx_qos -i {iface}\n{qos.text}")
    return Output(
        command,
        "ok",
        text="\n".join(texts),
        data={"interfaces": states, "sysfs_root": root},
        file=", ".join(files) or None,
    )


def _qos_text(observed: Output, iface: str) -> str:
    marker = f"# mlnx_qos -i {iface}\n"
    text = observed.text or ""
    if marker not in text:
        return ""
    return text.split(marker, 1)[1].split("\n# mlnx_qos -i ", 1)[0]


def _evidence_lines(observed: Output, difference: dict) -> list:
    iface, setting = difference["interface"], difference["setting"]
    state = observed.data["interfaces"].get(iface) or {}
    if setting in ("trust", "pfc", "dscp2prio"):
        lines = evidence_lines(_qos_text(observed, iface), [setting])
        if lines:
            return [f"{iface} (mlnx_qos -i {iface}): {line}" for line in lines]
    where = (state.get("paths") or {}).get("gid_type" if setting == "gid" else setting)
    if setting == "gid":
        gid_path = (state.get("paths") or {}).get("gid")
        raw = state.get("raw") or {}
        return [f"{where}: {raw.get('gid_type')}", f"{gid_path}: {raw.get('gid')}"]
    if where:
        return [f"{where}: {(state.get('raw') or {}).get(setting)}"]
    return [roce.describe(difference)]


def roce_qos(observed: Output | None, plan: dict | None) -> dict:
    if not plan:
        return skipped(CHECK, "no RoCE plan for this node (fabric_roce_interfaces is not set)")
    if observed is None or not observed.usable:
        return unavailable(CHECK, observed)
    differences = roce.compare(plan, observed.data["interfaces"], observed.data.get("sysfs_root") or "/")
    findings = [
        failed(
            CHECK,
            roce.describe(difference),
            evidence(observed.command, _evidence_lines(observed, difference), observed.file),
            difference["fix"],
        )
        for difference in differences
    ]
    interfaces = ", ".join(plan["interfaces"])
    ok = f"{len(plan['interfaces'])} RoCE interface(s) {interfaces} as planned: {roce.summary(plan)}"
    lines = []
    for iface in plan["interfaces"]:
        lines += [f"{iface}: {line}" for line in evidence_lines(_qos_text(observed, iface), ["trust", "pfc"])]
    return merge(CHECK, findings, ok, evidence(observed.command, lines, observed.file))
