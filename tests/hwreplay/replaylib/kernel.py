"""Replayed `dmesg`: the profile's kernel log (a container cannot read the host's).

Profile entries are {"t": seconds since boot, "level": "err", "msg": "..."}; a
message may name profile values as {nvidia[driver_version]} or
{nvidia[gpus][2][uuid]} (Python format fields), so fault lines stay true to the
hardware they describe.
"""

from __future__ import annotations

import string
import time

from .common import Context, ReplayError, ToolResult, ctime

LEVELS = ("emerg", "alert", "crit", "err", "warn", "notice", "info", "debug")
TIME_FORMATS = ("raw", "ctime", "iso", "notime")


def messages(profile: dict) -> list:
    """(seconds, level, text) for every kernel log line, in time order, with fields filled in."""
    entries = []
    formatter = string.Formatter()
    for position, entry in enumerate(profile.get("kernel_log", [])):
        try:
            text = formatter.vformat(entry["msg"], (), profile)
        except (KeyError, IndexError, ValueError) as exc:
            raise ReplayError(
                f"kernel_log[{position}] of profile {profile['profile']['name']} "
                f"names a value the profile lacks: {exc}",
                "fix the {...} field in the message (or double the braces for a literal one)",
            ) from exc
        level = entry.get("level", "info")
        if level not in LEVELS:
            raise ReplayError(
                f"kernel_log[{position}]: unknown level {level!r}", "use one of " + ", ".join(LEVELS)
            )
        entries.append((float(entry["t"]), level, text))
    return sorted(entries, key=lambda item: item[0])


def iso_time(epoch: float) -> str:
    parts = time.localtime(epoch)
    offset = parts.tm_gmtoff or 0
    sign = "+" if offset >= 0 else "-"
    offset = abs(offset)
    micros = round((epoch - int(epoch)) * 1e6) % 1000000
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", parts)
    return f"{stamp},{micros:06d}{sign}{offset // 3600:02d}:{offset % 3600 // 60:02d}"


def parse_args(args: list):
    """-> (options, error message); dmesg's own wording for bad options."""
    opts = {"time": "raw", "levels": None, "decode": False}
    position = 0
    while position < len(args):
        arg = args[position]
        value = None
        if arg.startswith("--") and "=" in arg:
            arg, value = arg.split("=", 1)
        if arg in ("-T", "--ctime"):
            opts["time"] = "ctime"
        elif arg in ("-t", "--notime"):
            opts["time"] = "notime"
        elif arg in ("-k", "--kernel"):
            pass  # the replayed log holds only kernel messages
        elif arg in ("-x", "--decode"):
            opts["decode"] = True
        elif arg in ("--time-format", "-l", "--level"):
            if value is None:
                position += 1
                if position >= len(args):
                    return None, f"dmesg: option '{arg}' requires an argument"
                value = args[position]
            if arg == "--time-format":
                if value not in TIME_FORMATS:
                    return None, f"dmesg: unknown time format: {value}"
                opts["time"] = value
            else:
                levels = value.split(",")
                unknown = [level for level in levels if level not in LEVELS]
                if unknown:
                    return None, f"dmesg: unknown level '{unknown[0]}'"
                opts["levels"] = set(levels)
        elif arg.startswith("--"):
            return None, f"dmesg: unrecognized option '{arg}'"
        else:
            return None, f"dmesg: invalid option -- '{arg.lstrip('-')[:1]}'"
        position += 1
    return opts, None


def dmesg(profile: dict, args: list, ctx: Context) -> ToolResult:
    opts, error = parse_args(args)
    if opts is None:
        return ToolResult(rc=1, stderr=error + "\nTry 'dmesg --help' for more information.\n")
    boot = ctx.now - ctx.uptime
    lines = []
    for seconds, level, text in messages(profile):
        if opts["levels"] is not None and level not in opts["levels"]:
            continue
        prefix = f"kern  :{level:<6}: " if opts["decode"] else ""
        if opts["time"] == "raw":
            micros = round(seconds * 1e6)
            stamp = f"[{micros // 1000000:5d}.{micros % 1000000:06d}] "
        elif opts["time"] == "ctime":
            stamp = f"[{ctime(boot + seconds)}] "
        elif opts["time"] == "iso":
            stamp = iso_time(boot + seconds) + " "
        else:
            stamp = ""
        lines.append(prefix + stamp + text)
    return ToolResult(stdout="".join(line + "\n" for line in lines))
