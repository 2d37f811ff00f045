"""`clusterforge facts`: parse captured vendor-tool outputs offline.

    clusterforge facts kinds                        # the KINDs and the command capturing each
    clusterforge facts parse nvidia-smi-q-xml gpu.xml --json
    ssh node nvidia-smi -q | clusterforge facts parse nvidia-smi-q -

The parsing is cfcore.parsers, the very code node validation runs on the nodes.
"""

from __future__ import annotations

import json
import sys

import click
from cfcore.files import UnsafeFile, read_text
from cfcore.parsers import HCCN_KINDS, KINDS, ParseError, max_bytes, parse, strip_source_header, too_large
from rich.console import Console
from rich.table import Table

from clusterforge.errors import InvalidInput

BAD = "bold red"


@click.group()
def facts() -> None:
    """Parse captured outputs of nvidia-smi, npu-smi, hccn_tool, ibstat, lspci and dmesg."""


@facts.command("kinds")
def kinds() -> None:
    """List the KINDs `facts parse` reads and the command that captures each."""
    table = Table(title="clusterforge facts parse KIND FILE")
    table.add_column("KIND", style="bold")
    table.add_column("capture with")
    table.add_column("what it reports")
    for kind in KINDS.values():
        table.add_row(kind.name, kind.capture, kind.description)
    (Console() if sys.stdout.isatty() else Console(width=200)).print(table)


@facts.command("parse")
@click.argument("kind", type=click.Choice(list(KINDS)), metavar="KIND")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE")
@click.option("--json", "as_json", is_flag=True, help="Print the parsed facts as JSON.")
@click.option("--device", type=int, help="NPU device id the hccn_tool output belongs to (hccn-* kinds).")
@click.option(
    "--fields",
    help="Field list of a `--format=csv,noheader` capture (nvidia-smi-csv), as given to --query-gpu.",
)
def parse_command(kind: str, file: str, as_json: bool, device: int | None, fields: str | None) -> None:
    """Parse FILE (a captured output; `-` reads stdin) as the output of KIND.

    KIND is one of the names `clusterforge facts kinds` lists. A first line starting
    with '# source:' is ignored. Exits 2 when FILE is not KIND's output.
    """
    if device is not None and kind not in HCCN_KINDS:
        raise InvalidInput(f"--device applies to {', '.join(HCCN_KINDS)} only, not {kind}")
    if fields and kind != "nvidia-smi-csv":
        raise InvalidInput(f"--fields applies to nvidia-smi-csv only, not {kind}")
    text = strip_source_header(_read(file, max_bytes(kind)))
    try:
        result = KINDS[kind].parser(text, fields=fields) if fields else parse(kind, text, device=device)
    except ParseError as err:
        raise InvalidInput(f"{_name(file)}: {err}", err.fix) from None
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    # wide enough for the tables when piped to a file or a pager; a terminal keeps its own width
    console = Console() if sys.stdout.isatty() else Console(width=160)
    _SUMMARIES.get(kind, _summary_generic)(console, kind, result)


def _name(file: str) -> str:
    return "<stdin>" if file == "-" else file


def _read(file: str, limit: int) -> str:
    """FILE's text, at most `limit` bytes (KIND's input limit); a FIFO or a device is refused, never read."""
    fix = "pass the captured output as a regular file (or `-` for stdin)"
    if file == "-":
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise InvalidInput(f"<stdin>: {too_large(limit)}", fix)
        return data.decode("utf-8", errors="replace")
    if not file.strip():
        raise InvalidInput("FILE is empty: pass the path of a captured output", fix)
    try:
        return read_text(file, limit)
    except UnsafeFile as err:
        raise InvalidInput(str(err), fix) from None


def _show(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _flag(value, bad: bool) -> str:
    text = _show(value)
    return f"[{BAD}]{text}[/]" if bad else text


def _pair(current, maximum, unit: str = "") -> str:
    text = f"{_show(current)}/{_show(maximum)}{unit}"
    degraded = current is not None and maximum is not None and current < maximum
    return f"[{BAD}]{text}[/]" if degraded else text


def _messages(console: Console, result: dict) -> None:
    for key in ("tool_messages", "warnings"):
        for message in result.get(key) or []:
            console.print(f"[yellow]{key.replace('_', ' ')}:[/] {message}", highlight=False)


def _summary_gpus(console: Console, kind: str, result: dict) -> None:
    gpus = result["gpus"]
    console.print(
        f"driver {_show(result['driver_version'])}, CUDA {_show(result['cuda_version'])}, {len(gpus)} GPU(s)"
    )
    table = Table()
    for column in (
        "#",
        "name",
        "bus id",
        "PCIe gen",
        "width",
        "persist",
        "MIG",
        "ECC",
        "uncorr ECC",
        "pending",
        "temp C",
        "power W",
        "memory MiB",
    ):
        table.add_column(column)
    for gpu in gpus:
        pending = [
            label
            for label, key in (
                ("retired pages", "retired_pages_pending"),
                ("row remap", "remapped_rows_pending"),
                ("remap FAILED", "remapped_rows_failure"),
            )
            if gpu[key]
        ]
        table.add_row(
            _show(gpu["index"]),
            _show(gpu["name"]),
            _show(gpu["pci_bus_id"]),
            _pair(gpu["pcie_gen_current"], gpu["pcie_gen_max"]),
            _pair(gpu["pcie_width_current"], gpu["pcie_width_max"]),
            _show(gpu["persistence_mode"]),
            _show(gpu["mig_mode"]),
            _show(gpu["ecc_mode"]),
            _flag(gpu["ecc_uncorrected_volatile"], bool(gpu["ecc_uncorrected_volatile"])),
            _flag(", ".join(pending) or "-", bool(pending)),
            _show(gpu["temperature_c"]),
            _show(gpu["power_draw_w"]),
            _show(gpu["memory_total_mib"]),
        )
    console.print(table)
    _messages(console, result)


def _summary_topo(console: Console, kind: str, result: dict) -> None:
    devices = result["devices"]
    table = Table(title="nvidia-smi topo -m")
    table.add_column("")
    for device in devices:
        table.add_column(device)
    table.add_column("CPU affinity")
    table.add_column("NUMA")
    rows = [(gpu, f"GPU{gpu['index']}") for gpu in result["gpus"]] + [
        (nic, nic["name"]) for nic in result["nics"]
    ]
    for entry, label in rows:
        cells = [entry["links"].get(peer, "X") for peer in devices]
        table.add_row(label, *cells, _show(entry.get("cpu_affinity")), _show(entry.get("numa_affinity")))
    console.print(table)
    for nic in result["nics"]:
        if nic["device"] != nic["name"]:
            console.print(f"{nic['name']} = {nic['device']}")


def _summary_nvlink(console: Console, kind: str, result: dict) -> None:
    table = Table(title="nvidia-smi nvlink -s")
    for column in ("#", "name", "links active", "speed GB/s", "inactive links", "error"):
        table.add_column(column)
    for gpu in result["gpus"]:
        links = gpu["links"]
        active = [link for link in links if link["state"] == "active"]
        inactive = [str(link["link"]) for link in links if link["state"] != "active"]
        speeds = sorted({link["speed_gbps"] for link in active})
        table.add_row(
            _show(gpu["index"]),
            _show(gpu["name"]),
            _flag(f"{len(active)}/{len(links)}", len(active) < len(links) or not links),
            ", ".join(str(speed) for speed in speeds) or "-",
            _flag(", ".join(inactive) or "-", bool(inactive)),
            _flag(gpu["nvlink_error"], gpu["nvlink_error"] is not None),
        )
    console.print(table)


def _summary_npus(console: Console, kind: str, result: dict) -> None:
    console.print(
        f"npu-smi {_show(result['version'])}, {result['npu_count']} NPU(s), {result['chip_count']} chip(s)"
    )
    table = Table()
    for column in ("NPU", "chip", "name", "health", "power W", "temp C", "AICore %", "HBM MB", "bus id"):
        table.add_column(column)
    for chip in result["npus"]:
        table.add_row(
            _show(chip["npu_id"]),
            _show(chip["chip_id"]),
            _show(chip["name"]),
            _flag(chip["health"], (chip["health"] or "OK") != "OK"),
            _show(chip["power_w"]),
            _show(chip["temperature_c"]),
            _show(chip["aicore_pct"]),
            f"{_show(chip['hbm_used_mb'])}/{_show(chip['hbm_total_mb'])}",
            _show(chip["bus_id"]),
        )
    console.print(table)


def _summary_health(console: Console, kind: str, result: dict) -> None:
    console.print(
        f"NPU {_show(result['npu_id'])}: health {_flag(result['health'], result['health'] != 'OK')}"
    )
    table = Table()
    for column in ("chip", "health", "error codes", "error information"):
        table.add_column(column)
    for chip in result["chips"]:
        table.add_row(
            _show(chip["chip_id"]),
            _flag(chip["health"], chip["health"] != "OK"),
            ", ".join(chip["error_codes"]) or "-",
            _show(chip["error_information"]),
        )
    console.print(table)


def _summary_ibstat(console: Console, kind: str, result: dict) -> None:
    table = Table(title="ibstat")
    for column in ("CA", "type", "firmware", "port", "state", "physical state", "rate Gb/s", "link layer"):
        table.add_column(column)
    for ca in result["cas"]:
        for port in ca["ports"]:
            table.add_row(
                ca["name"],
                _show(ca["type"]),
                _show(ca["firmware"]),
                _show(port["port"]),
                _flag(port["state"], port["state"] != "Active"),
                _flag(port["physical_state"], port["physical_state"] != "LinkUp"),
                _show(port["rate_gbps"]),
                _show(port["link_layer"]),
            )
    console.print(table)
    _messages(console, result)


def _summary_lspci(console: Console, kind: str, result: dict) -> None:
    linked = [device for device in result["devices"] if device["link_cap_width"] is not None]
    table = Table(title="PCIe links (LnkSta / LnkCap)")
    for column in ("bus id", "vendor:device", "class", "device", "speed GT/s", "width", "downgraded"):
        table.add_column(column)
    for device in linked:
        table.add_row(
            device["bus_id"],
            f"{_show(device['vendor_id'])}:{_show(device['device_id'])}",
            device["class"],
            device["description"][:48],
            _pair(device["link_sta_speed_gts"], device["link_cap_speed_gts"]),
            _pair(device["link_sta_width"], device["link_cap_width"], ""),
            _flag(device["downgraded"], device["downgraded"] is True),
        )
    console.print(table)
    hidden = len(result["devices"]) - len(linked)
    if hidden:
        console.print(f"{hidden} device(s) without a readable PCIe link not shown (see --json)")
    _messages(console, result)


def _summary_xid(console: Console, kind: str, result: dict) -> None:
    events = result["events"]
    if not events:
        console.print("no Xid event in this kernel log")
        return
    counts = ", ".join(f"Xid {xid} x{count}" for xid, count in result["counts"].items())
    console.print(f"{len(events)} Xid event(s): {counts}")
    table = Table()
    for column in ("line", "time", "bus id", "Xid", "meaning", "process", "message"):
        table.add_column(column)
    for event in events:
        table.add_row(
            str(event["line"]),
            _show(event["timestamp"]),
            _show(event["pci_bus_id"]),
            str(event["xid"]),
            _show(event["description"]),
            _show(event["process_name"]),
            event["message"][:70],
        )
    console.print(table)


def _summary_generic(console: Console, kind: str, result: dict) -> None:
    """Key/value view of flat results (npu-smi board, hccn_tool)."""
    rows = result.get("devices") or [result]
    for row in rows:
        table = Table(title=kind, show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value")
        for key, value in row.items():
            if isinstance(value, dict):
                for sub_key, sub_value in value.items():
                    table.add_row(f"{key}.{sub_key}", _show(sub_value))
            elif not isinstance(value, list):
                table.add_row(key, _show(value))
        console.print(table)


_SUMMARIES = {
    "nvidia-smi-q": _summary_gpus,
    "nvidia-smi-q-xml": _summary_gpus,
    "nvidia-smi-csv": _summary_gpus,
    "nvidia-smi-topo": _summary_topo,
    "nvidia-smi-nvlink": _summary_nvlink,
    "npu-smi-info": _summary_npus,
    "npu-smi-health": _summary_health,
    "ibstat": _summary_ibstat,
    "lspci": _summary_lspci,
    "xid": _summary_xid,
}
