#!/usr/bin/env python3
"""Build ClusterForge's test Ascend and PPU vendor packages (tests only).

    python3 tests/ascend_pkgs/build.py [--out CACHE_DIR]    -> prints the package root

It writes self-contained bash installers that keep the command-line contract of Huawei's
`.run` packages (driver, firmware, CANN toolkit, operator packages, NNAL, Ascend Docker
Runtime), the npu-exporter zip, and the PPU SDK `.run` of ClusterForge's assumed contract:

    <root>/<Huawei file name>        every Huawei file, flat (ascend_package_url = BASE)
    <root>/SHA256SUMS                their sha256
    <root>/ppu/<PPU file name>       the PPU SDK packages (ppu_package_url = BASE/ppu)
    <root>/ppu/SHA256SUMS
    <root>/manifest.json             {"ascend": {file: sha256}, "ppu": {file: sha256}}

Each installer is one bash file: header variables (PKG_*), installers/lib.sh, the kind's
part(s) from installers/, then a base64 tar.gz payload after a marker line, whose sha256 the
header carries (`--check` and every run verify it). The build is deterministic: the same
inputs give the same bytes.

The root is <cache>/ascend-pkgs-<hash>, <cache> being --out, else $CF_ASCEND_PKGS_CACHE, else
~/.cache/clusterforge; <hash> covers this file and installers/, so a rebuild happens only when
one of them changes. Python 3.8+ standard library only.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import gzip
import hashlib
import io
import json
import os
import shlex
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
INSTALLERS = HERE / "installers"
FORMAT = "1"  # bump when the layout changes without any input file changing
MTIME = 1735689600  # 2025-01-01: the fixed timestamp of every archive member
MARKER = "__PAYLOAD_BELOW__"

# Driver -> the firmware versions it declares compatible (the hardware replay reports
# `npu-smi info -t board` Compatibility from the installed driver's record).
DRIVERS = {
    "25.2.0": {
        "compatible_firmware": ["7.7.0.6.236"],
        "ascendhal_version": "7.35.23",
        "innerversion": "V100R001C25SPC001B220",
    },
    "25.5.0": {
        # Only its own firmware: upgrading this driver before the firmware is refused (wrong order).
        "compatible_firmware": ["7.8.0.5.216"],
        "ascendhal_version": "7.35.26",
        "innerversion": "V100R001C25SPC005B230",
    },
    # Only in these test installers (no Huawei release of this number is claimed): a
    # driver-only update over 25.5.0's firmware, for the rolling-upgrade lab test.
    "25.5.1": {
        "compatible_firmware": ["7.8.0.5.216"],
        "ascendhal_version": "7.35.26",
        "innerversion": "V100R001C25SPC005B231",
    },
}
FIRMWARES = ("7.7.0.6.236", "7.8.0.5.216")
HDK_CHIPS = ("910b", "910c")
CANN_VERSIONS = ("8.2.RC1", "8.5.0")
OPS_CHIPS = ("910b", "A3")
DOCKER_RUNTIME_VERSIONS = ("6.0.0", "7.0.0")
NPU_EXPORTER_VERSIONS = ("6.0.0",)
PPU_SDK_VERSIONS = ("2.1.1", "2.2.0")
NOTE = "ClusterForge test stand-in: not vendor software"


class BuildError(Exception):
    """Something the user can fix: printed as 'error: ...' and '  fix: ...'."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


# ------------------------------------------------------------------ the list


def cann_layout(version: str) -> str:
    """'cann' from CANN 8.5 on (<prefix>/cann-<ver>), 'legacy' before (<prefix>/ascend-toolkit/<ver>)."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return "cann" if (major, minor) >= (8, 5) else "legacy"


def stub(name: str, what: str) -> tuple:
    return (f"{NOTE}. {name} of {what}.\n", 0o644)


def script(text: str) -> tuple:
    return (text, 0o755)


def driver_version_info(version: str) -> str:
    data = DRIVERS[version]
    return "\n".join(
        [
            f"Version={version}",
            f"ascendhal_version={data['ascendhal_version']}",
            "aicpu_version=1.0",
            "tdt_version=1.0",
            "log_version=1.0",
            "prof_version=2.0",
            "dvppkernels_version=1.1",
            "tsfw_version=1.0",
            f"Innerversion={data['innerversion']}",
        ]
    )


def docker_runtime_tree(version: str) -> dict:
    what = f"Ascend Docker Runtime {version}"
    runtime = (
        "#!/bin/sh\n"
        f"# {NOTE}: ascend-docker-runtime {version}. It injects no device; it hands over to runc.\n"
        'case "${1:-}" in\n'
        f'  --version | -v | version) echo "ascend-docker-runtime version: v{version}"; exit 0 ;;\n'
        "esac\n"
        'exec runc "$@"\n'
    )
    tree = {"Ascend-Docker-Runtime/ascend-docker-runtime": script(runtime)}
    for tool in ("ascend-docker-hook", "ascend-docker-cli", "ascend-docker-destroy"):
        tree[f"Ascend-Docker-Runtime/{tool}"] = script(
            "#!/bin/sh\n"
            f"# {NOTE}: {tool} of {what}; it does nothing but answer --version.\n"
            f'if [ "${{1:-}}" = --version ]; then echo "{tool} version: v{version}"; fi\n'
            "exit 0\n"
        )
    return tree


def package_list() -> list:
    """Every package: {file, kind, group ('ascend'|'ppu'), header (PKG_* values), tree}."""
    packages = []
    for chip in HDK_CHIPS:
        for version in DRIVERS:
            what = f"Ascend HDK {chip} NPU driver {version}"
            packages.append(
                {
                    "file": f"Ascend-hdk-{chip}-npu-driver_{version}_linux-x86-64.run",
                    "kind": "driver",
                    "name": f"Ascend HDK {chip} NPU driver",
                    "version": version,
                    "header": {
                        "PKG_CHIP": chip,
                        "PKG_COMPAT_FIRMWARE": " ".join(DRIVERS[version]["compatible_firmware"]),
                        "PKG_VERSION_INFO": driver_version_info(version),
                    },
                    "tree": {
                        "driver/lib64/driver/libascend_hal.so": stub("libascend_hal.so", what),
                        "driver/lib64/driver/libdrvdsmi_host.so": stub("libdrvdsmi_host.so", what),
                        "driver/lib64/common/libc_sec.so": stub("libc_sec.so", what),
                        "driver/lib64/common/libmmpa.so": stub("libmmpa.so", what),
                        "driver/include/dsmi_common_interface.h": stub("a header", what),
                    },
                }
            )
        for version in FIRMWARES:
            what = f"Ascend HDK {chip} NPU firmware {version}"
            packages.append(
                {
                    "file": f"Ascend-hdk-{chip}-npu-firmware_{version}.run",
                    "kind": "firmware",
                    "name": f"Ascend HDK {chip} NPU firmware",
                    "version": version,
                    "header": {"PKG_CHIP": chip},
                    "tree": {f"firmware/image/{chip}-npu-firmware.hpm": stub("The firmware image", what)},
                }
            )
    for version in CANN_VERSIONS:
        layout = cann_layout(version)
        what = f"CANN toolkit {version}"
        packages.append(
            {
                "file": f"Ascend-cann-toolkit_{version}_linux-x86_64.run",
                "kind": "toolkit",
                "name": "CANN toolkit",
                "version": version,
                "header": {"PKG_LAYOUT": layout},
                "tree": {
                    "lib64/libascendcl.so": stub("libascendcl.so", what),
                    "lib64/libruntime.so": stub("libruntime.so", what),
                    "include/acl/acl.h": stub("acl.h", what),
                    "bin/atc": script(f'#!/bin/sh\n# {NOTE}: atc of {what}.\necho "ATC run success"\n'),
                    "opp/version.info": (f"Version={version}\n", 0o644),
                    "python/site-packages/README": stub("The Python packages directory", what),
                },
            }
        )
        for chip in OPS_CHIPS:
            ops_name = f"Ascend-cann-{chip}-ops" if layout == "cann" else f"Ascend-cann-kernels-{chip}"
            packages.append(
                {
                    "file": f"{ops_name}_{version}_linux-x86_64.run",
                    "kind": "ops",
                    "name": f"CANN operator package ({chip})",
                    "version": version,
                    "header": {"PKG_LAYOUT": layout, "PKG_CHIP": chip, "PKG_OPS_NAME": ops_name},
                    "tree": {
                        f"opp/built-in/op_impl/ai_core/tbe/kernel/{chip}/kernels.o": stub(
                            "Operator kernels", f"{ops_name} {version}"
                        )
                    },
                }
            )
        packages.append(
            {
                "file": f"Ascend-cann-nnal_{version}_linux-x86_64.run",
                "kind": "nnal",
                "name": "CANN NNAL",
                "version": version,
                "header": {"PKG_LAYOUT": layout},
                "tree": {
                    "atb/lib/libatb.so": stub("libatb.so", f"CANN NNAL {version}"),
                    "atb/include/atb/atb.h": stub("atb.h", f"CANN NNAL {version}"),
                },
            }
        )
    for version in DOCKER_RUNTIME_VERSIONS:
        packages.append(
            {
                "file": f"Ascend-docker-runtime_{version}_linux-x86_64.run",
                "kind": "docker_runtime",
                "name": "Ascend Docker Runtime",
                "version": version,
                "header": {},
                "tree": docker_runtime_tree(version),
            }
        )
    for version in NPU_EXPORTER_VERSIONS:
        packages.append(
            {
                "file": f"Ascend-mindxdl-npu-exporter_{version}_linux-x86_64.zip",
                "kind": "npu_exporter",
                "version": version,
            }
        )
    for version in PPU_SDK_VERSIONS:
        what = f"PPU SDK {version}"
        packages.append(
            {
                "file": f"PPU_SDK_{version}_linux-x86_64.run",
                "kind": "ppu_sdk",
                "group": "ppu",
                "name": "PPU SDK",
                "version": version,
                "header": {},
                "tree": {
                    f"lib64/libhgml.so.{version}": stub(f"libhgml.so.{version}", what),
                    "ppu-smi/bin/ppu-smi": script(
                        f"#!/bin/sh\n# {NOTE}: ppu-smi of {what}; the hardware replay answers.\n"
                        'exec /opt/hwreplay/bin/ppu-smi "$@"\n'
                    ),
                },
            }
        )
    for package in packages:
        package.setdefault("group", "ascend")
    return packages


# Which installers/ parts make up each kind, and the function the installer ends by calling.
PARTS = {
    "driver": (["lib.sh", "driver.sh"], "huawei_main"),
    "firmware": (["lib.sh", "firmware.sh"], "huawei_main"),
    "toolkit": (["lib.sh", "cann.sh", "toolkit.sh"], "huawei_main"),
    "ops": (["lib.sh", "cann.sh", "ops.sh"], "huawei_main"),
    "nnal": (["lib.sh", "cann.sh", "nnal.sh"], "huawei_main"),
    "docker_runtime": (["lib.sh", "docker_runtime.sh"], "huawei_main"),
    "ppu_sdk": (["lib.sh", "ppu_sdk.sh"], "ppu_main"),
}


# ------------------------------------------------------------------ archives


def tar_gz(tree: dict) -> bytes:
    """A deterministic tar.gz of {path: (text, mode)} with its parent directories."""
    directories = set()
    for path in tree:
        parts = path.split("/")[:-1]
        directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for path in sorted(directories | set(tree)):
            info = tarfile.TarInfo(path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = MTIME, 0, 0, "root", "root"
            if path in directories:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
                continue
            text, mode = tree[path]
            data = text.encode()
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0)


def shell_value(value: str) -> str:
    return shlex.quote(value) if value else "''"


def installer_text(package: dict) -> str:
    parts, entry = PARTS[package["kind"]]
    payload = tar_gz(package["tree"])
    header = {
        "PKG_FILE": package["file"],
        "PKG_KIND": package["kind"],
        "PKG_NAME": package["name"],
        "PKG_VERSION": package["version"],
        "PKG_CHIP": "",
        "PKG_LAYOUT": "",
        **package["header"],
        "PKG_PAYLOAD_SHA256": hashlib.sha256(payload).hexdigest(),
    }
    lines = [
        "#!/bin/bash",
        f"# {package['file']}",
        "# ClusterForge test stand-in (tests only): keeps the command-line contract of the vendor",
        "# installer of this name and contains no vendor software. See tests/ascend_pkgs/README.md.",
        "# Run it as: bash <file> <options> (--help lists them).",
    ]
    lines += [f"{name}={shell_value(value)}" for name, value in header.items()]
    text = "\n".join(lines) + "\n"
    for part in parts:
        path = INSTALLERS / part
        if not path.is_file():
            raise BuildError(f"installer part {path} is missing", "restore it from the repository")
        text += path.read_text()
    text += f'\n{entry} "$@"\nexit $?\n{MARKER}\n'
    return text + base64.encodebytes(payload).decode()


def exporter_zip(version: str) -> bytes:
    source = (INSTALLERS / "npu_exporter.py").read_text().replace("@VERSION@", version)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("npu-exporter", date_time=(2025, 1, 1, 0, 0, 0))
        info.external_attr = (0o100755 & 0xFFFF) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 3  # unix: unzip honours the mode bits
        archive.writestr(info, source)
    return buffer.getvalue()


def package_bytes(package: dict) -> bytes:
    if package["kind"] == "npu_exporter":
        return exporter_zip(package["version"])
    return installer_text(package).encode()


# --------------------------------------------------------------- the build


def input_hash() -> str:
    digest = hashlib.sha256(FORMAT.encode())
    for path in [Path(__file__).resolve(), *sorted(INSTALLERS.iterdir())]:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def sha256sums(sums: dict) -> str:
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items()))


def build_into(root: Path) -> dict:
    manifest: dict = {"ascend": {}, "ppu": {}}
    for package in package_list():
        directory = root if package["group"] == "ascend" else root / "ppu"
        directory.mkdir(parents=True, exist_ok=True)
        data = package_bytes(package)
        target = directory / package["file"]
        target.write_bytes(data)
        os.chmod(target, 0o644)
        manifest[package["group"]][package["file"]] = hashlib.sha256(data).hexdigest()
    (root / "SHA256SUMS").write_text(sha256sums(manifest["ascend"]))
    (root / "ppu" / "SHA256SUMS").write_text(sha256sums(manifest["ppu"]))
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def default_cache() -> Path:
    configured = os.environ.get("CF_ASCEND_PKGS_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "clusterforge"


def build(cache: Path | None = None) -> Path:
    """The package root for the current inputs, built when it is not in the cache yet."""
    cache = (cache or default_cache()).expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".ascend-pkgs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two builds at once: the second waits and reuses
        root = cache / f"ascend-pkgs-{input_hash()}"
        if (root / "manifest.json").is_file():
            return root
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=cache))
        try:
            build_into(staging)
            os.chmod(staging, 0o755)
            os.chmod(staging / "ppu", 0o755)
            staging.rename(root)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return root


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build (or reuse) the test Ascend and PPU vendor packages; prints their root."
    )
    parser.add_argument(
        "--out", type=Path, help="cache directory (default $CF_ASCEND_PKGS_CACHE or ~/.cache/clusterforge)"
    )
    args = parser.parse_args(argv)
    try:
        print(build(args.out))
    except BuildError as exc:
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc}\n  fix: check that the cache directory is writable (--out)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
