"""What the test package stand-ins' tests share (unique name: not conftest)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from patience import HANG_S

PKGS_DIR = Path(__file__).resolve().parents[2] / "ascend_pkgs"
HWREPLAY = Path(__file__).resolve().parents[2] / "hwreplay" / "hwreplay.py"

DRIVER = "Ascend-hdk-{chip}-npu-driver_{version}_linux-x86-64.run"
FIRMWARE = "Ascend-hdk-{chip}-npu-firmware_{version}.run"
TOOLKIT = "Ascend-cann-toolkit_{version}_linux-x86_64.run"
KERNELS = "Ascend-cann-kernels-{chip}_{version}_linux-x86_64.run"
OPS = "Ascend-cann-{chip}-ops_{version}_linux-x86_64.run"
NNAL = "Ascend-cann-nnal_{version}_linux-x86_64.run"
RUNTIME = "Ascend-docker-runtime_{version}_linux-x86_64.run"
EXPORTER = "Ascend-mindxdl-npu-exporter_{version}_linux-x86_64.zip"
PPU = "PPU_SDK_{version}_linux-x86_64.run"


def build_module():
    """tests/ascend_pkgs/build.py as a module (it is a script, not a package)."""
    if "ascend_pkgs_build" not in sys.modules:
        spec = importlib.util.spec_from_file_location("ascend_pkgs_build", PKGS_DIR / "build.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["ascend_pkgs_build"] = module
        spec.loader.exec_module(module)
    return sys.modules["ascend_pkgs_build"]


class Sandbox:
    """A fake root (ASCEND_PKGS_ROOT) with HwHiAiUser, and the built packages to run in it."""

    def __init__(self, root: Path, packages: Path) -> None:
        self.root, self.packages = root, packages
        (root / "etc").mkdir(parents=True)
        (root / "etc" / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n"
        )
        (root / "etc" / "group").write_text("root:x:0:\nHwHiAiUser:x:1000:\n")

    def path(self, logical: str) -> Path:
        return self.root / logical.lstrip("/")

    def read(self, logical: str) -> str:
        return self.path(logical).read_text()

    def run(self, file: str, *args: str, env: dict | None = None, stdin: str = "", ppu: bool = False):
        package = self.packages / ("ppu" if ppu else "") / file
        assert package.is_file(), f"{file} was not built"
        environment = {k: v for k, v in os.environ.items() if k != "ASCEND_TOOLKIT_HOME"}
        environment.update(ASCEND_PKGS_ROOT=str(self.root), **(env or {}))
        return subprocess.run(
            ["bash", str(package), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=environment,
            timeout=HANG_S,
            check=False,
        )

    def ok(self, file: str, *args: str, **kwargs):
        done = self.run(file, *args, **kwargs)
        assert done.returncode == 0, f"{file} {' '.join(args)}: rc {done.returncode}\n{done.stderr}"
        return done

    def refused(self, file: str, *args: str, expect: str, **kwargs):
        """The call fails with exit 1 and a stderr message holding `expect`; nothing printed on stdout."""
        done = self.run(file, *args, **kwargs)
        assert done.returncode == 1, (
            f"{file} {' '.join(args)}: rc {done.returncode}\n{done.stdout}{done.stderr}"
        )
        assert expect in done.stderr, done.stderr
        assert "ERROR:" in done.stderr and "fix:" in done.stderr, done.stderr
        return done


def info(text: str) -> dict:
    """A key=value file as a dict."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
