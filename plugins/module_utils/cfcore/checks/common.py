"""Helpers shared by the check modules: reading parsed values, and `error` results."""

from __future__ import annotations

from ..results import errored, evidence

# What an operator does when a tool's output could not be had, by Output.state.
_RETRY = {
    "not_found": "install {tool} (the vendor's package for this SKU) or put it on PATH",
    "timeout": "{tool} hung: check the kernel log for Xid/driver errors; a reboot or device reset clears it",
    "not_captured": "run tools/cf-capture.sh again on the node: it saves {file}",
    "unparsable": "run `{command}` on the node and check its output; report it if the tool works",
    "failed": "run `{command}` on the node and fix what it reports",
    "refused": "run `{command}` on the node and see why it prints so much; report it if the tool works",
}
# A refused capture file: a link out of the capture, a FIFO or device, or an oversized file.
_REFUSED_FILE = "send an unmodified capture: run tools/cf-capture.sh again on the node ({file} was refused)"


def unavailable(check_id: str, output, why: str = "") -> dict:
    """`error`: the check could not run because `output` is missing or unusable. Never a pass."""
    if output is None:
        return errored(
            check_id,
            f"not evaluated: {why or 'its input was not collected'}",
            None,
            "report this as a ClusterForge bug with the node_result",
        )
    tool = output.command.split()[0] if output.command else "the tool"
    template = _RETRY.get(output.state, _RETRY["failed"])
    if output.state == "refused" and output.file:
        template = _REFUSED_FILE
    remedy = template.format(tool=tool, file=output.file or "it", command=output.command)
    lines = [line for line in (output.error, *output.stderr.splitlines()[:3]) if line]
    message = f"could not check: {output.error or output.state}"
    if why:
        message = f"not evaluated: {why}"
    return errored(check_id, message, evidence(output.command, _unique(lines), output.file), remedy)


def crashed(check_id: str, exc: BaseException, inputs=()) -> dict:
    """`error`: the check itself failed on input it did not foresee. The rest of the node still runs.

    Evidence names the commands/files the check read (`Output`s, also inside dicts) and the exception.
    """
    outputs = []
    for item in inputs:
        outputs.extend(item.values() if isinstance(item, dict) else [item])
    outputs = [o for o in outputs if hasattr(o, "command") and hasattr(o, "state")]
    commands = _unique([o.command for o in outputs])
    files = _unique([o.file for o in outputs if o.file])
    found = evidence(
        "; ".join(commands) or check_id, [f"{type(exc).__name__}: {exc}"], ", ".join(files) or None
    )
    return errored(
        check_id,
        f"could not check: the check failed on this node's input ({type(exc).__name__}: {exc})",
        found,
        "report this as a ClusterForge bug with the node_result and a capture (tools/cf-capture.sh)",
    )


def _unique(lines):
    seen = []
    for line in lines:
        if line not in seen:
            seen.append(line)
    return seen


def as_int(value) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().lower().rstrip("x").strip()
    try:
        return int(float(text))
    except ValueError:
        return None


def as_float(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip().split()[0])
    except (ValueError, IndexError):
        return None


def as_flag(value) -> bool | None:
    """Enabled/Yes/true -> True, Disabled/No/false -> False, N/A or missing -> None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("enabled", "yes", "true", "on", "1", "active"):
        return True
    if text in ("disabled", "no", "false", "off", "0", "inactive"):
        return False
    return None


def field(data: dict, *names):
    """The first present value among `names`, matching keys case- and punctuation-insensitively."""
    if not isinstance(data, dict):
        return None
    folded = {_fold(key): value for key, value in data.items()}
    for name in names:
        value = folded.get(_fold(name))
        if value is not None:
            return value
    return None


def _fold(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())
