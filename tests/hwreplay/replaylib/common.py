"""What every replayed tool shares: where things live, the clock, results and errors."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

# Where the tool keeps things on a node; each can be redirected by an
# environment variable so tests on the controller need neither root nor a node.
INSTALL_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
DEFAULTS = {
    "HWREPLAY_PROFILE_DIR": os.path.join(INSTALL_DIR, "profiles"),
    "HWREPLAY_STATE_DIR": "/var/lib/hwreplay",
    "HWREPLAY_OVERRIDES": "/etc/hwreplay/overrides.json",
    "HWREPLAY_SYSROOT": "/opt/hwreplay/sysroot",
    "HWREPLAY_BIN_DIR": "/usr/local/bin",
    "HWREPLAY_UNIT_DIR": "/etc/systemd/system",
    # What installed NVIDIA packages leave (installed.py): NVML's library, package units, FM's state.
    "HWREPLAY_LIB_DIR": "/usr/lib/x86_64-linux-gnu",
    "HWREPLAY_PACKAGE_UNIT_DIRS": "/lib/systemd/system:/usr/lib/systemd/system",
    "HWREPLAY_FM_STATE": "/run/nvidia-fabricmanager/fabric.state",
}
PROGRAM = os.path.join(INSTALL_DIR, "hwreplay.py")


class ReplayError(Exception):
    """A problem with hwreplay itself (bad profile, no profile selected...).

    Rendered as "hwreplay: <message>" plus a fix line; never looks like tool output.
    """

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def render(self) -> str:
        text = "hwreplay: error: " + self.message + "\n"
        if self.fix:
            text += "  fix: " + self.fix + "\n"
        return text


@dataclass
class ToolResult:
    """What a replayed command prints and returns, like a finished process."""

    rc: int = 0
    stdout: str = ""
    stderr: str = ""


def fail(rc: int, message: str) -> ToolResult:
    """A tool's own error (as the real tool prints it) with its exit status."""
    return ToolResult(rc=rc, stderr=message if message.endswith("\n") else message + "\n")


@dataclass
class Context:
    """Paths, the clock and the environment one replayed command runs with."""

    env: dict = field(default_factory=dict)

    def path(self, name: str) -> str:
        return self.env.get(name) or DEFAULTS[name]

    @property
    def profile_dir(self) -> str:
        return self.path("HWREPLAY_PROFILE_DIR")

    @property
    def state_dir(self) -> str:
        return self.path("HWREPLAY_STATE_DIR")

    @property
    def overrides_path(self) -> str:
        return self.path("HWREPLAY_OVERRIDES")

    @property
    def sysroot(self) -> str:
        return self.path("HWREPLAY_SYSROOT")

    @property
    def bin_dir(self) -> str:
        return self.path("HWREPLAY_BIN_DIR")

    @property
    def unit_dir(self) -> str:
        return self.path("HWREPLAY_UNIT_DIR")

    @property
    def lib_dir(self) -> str:
        return self.path("HWREPLAY_LIB_DIR")

    @property
    def package_unit_dirs(self) -> list:
        return [part for part in self.path("HWREPLAY_PACKAGE_UNIT_DIRS").split(":") if part]

    @property
    def fm_state(self) -> str:
        return self.path("HWREPLAY_FM_STATE")

    @property
    def now(self) -> float:
        """Seconds since the epoch; HWREPLAY_NOW pins it so outputs are reproducible."""
        pinned = self.env.get("HWREPLAY_NOW")
        if pinned:
            try:
                return float(pinned)
            except ValueError as exc:
                raise ReplayError(
                    f"HWREPLAY_NOW={pinned!r} is not a number of seconds since the epoch",
                    "set HWREPLAY_NOW to e.g. 1718935388, or unset it",
                ) from exc
        return time.time()

    @property
    def uptime(self) -> float:
        """Seconds since boot (the kernel log's clock); HWREPLAY_UPTIME pins it."""
        pinned = self.env.get("HWREPLAY_UPTIME")
        if pinned:
            return float(pinned)
        try:
            with open("/proc/uptime") as handle:
                return float(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            return 86400.0

    @property
    def manage_systemd(self) -> bool:
        """Whether `profile set` may start/stop units: systemd must be running (not in tests)."""
        setting = self.env.get("HWREPLAY_SYSTEMD", "auto")
        if setting == "auto":
            return os.path.isdir("/run/systemd/system")
        return setting in ("1", "yes", "true")


def ctime(epoch: float) -> str:
    """'Fri Jun 21 02:03:08 2024' in local time, day space-padded ('Jul  3') like C's ctime()."""
    parts = time.localtime(epoch)
    return f"{time.strftime('%a %b', parts)} {parts.tm_mday:2d} {time.strftime('%H:%M:%S %Y', parts)}"


def pci_domain4(bus_id: str) -> str:
    """'00000000:1B:00.0' -> '0000:1b:00.0' (lspci -D, dmesg and sysfs form)."""
    domain, rest = bus_id.split(":", 1)
    return f"{int(domain, 16):04x}:{rest.lower()}"
