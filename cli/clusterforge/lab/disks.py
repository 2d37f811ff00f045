"""Data disks of lab storage nodes: a sparse file per node, attached as a loop device.

A storage server has data disks besides its OS disk (Ceph OSDs take whole
block devices). A container has none, so each lab storage node gets one: a
sparse image file in the lab's state folder, attached to a free loop device on
the host and handed to the container as /dev/vdb. It costs no disk space until
written. `lab down` detaches it and deletes the file with the state folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from clusterforge.errors import EnvironmentNotReady
from clusterforge.lab.runner import Runner

DATA_DISK = "/dev/vdb"  # the data disk's path inside the node
DISK_SIZE_BYTES = 20 * 1024**3
_LOSETUP_LINE = re.compile(r"^(/dev/loop\d+):")


class LabDisks:
    def __init__(self, state_dir: Path, runner: Runner):
        self.folder = state_dir / "disks"
        self._run = runner

    def image(self, host: str) -> Path:
        return self.folder / f"{host}-vdb.img"

    def attached(self, image: Path) -> list[str]:
        """Loop devices the host has attached to this image file."""
        result = self._run(["losetup", "--associated", str(image)], timeout=30)
        return [m.group(1) for line in result.stdout.splitlines() if (m := _LOSETUP_LINE.match(line))]

    def attach(self, host: str) -> tuple[str, bool]:
        """(loop device backing the host's data disk, whether this call attached it)."""
        image = self.image(host)
        if image.is_file():
            devices = self.attached(image)
            if devices:
                return devices[0], False
        else:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            with image.open("wb") as fh:
                os.ftruncate(fh.fileno(), DISK_SIZE_BYTES)  # sparse: no blocks until written
        result = self._run(["losetup", "--find", "--show", str(image)], timeout=30)
        device = result.stdout.strip()
        if not result.ok or not _LOSETUP_LINE.match(device + ":"):
            raise EnvironmentNotReady(
                f"could not attach the data disk of {host} ({image}) to a loop device: "
                f"{result.last_error_line()}",
                "free a loop device (`losetup --list` shows them), or bring the lab up without "
                "storage nodes (--storage 0) on a host without loop devices",
            )
        return device, True

    def detach(self, device: str) -> None:
        self._run(["losetup", "--detach", device], timeout=30)

    def detach_all(self) -> list[str]:
        """Detach every loop device of this lab's disk images; returns the devices."""
        devices = []
        for image in sorted(self.folder.glob("*.img")) if self.folder.is_dir() else []:
            for device in self.attached(image):
                self.detach(device)
                devices.append(device)
        return devices
