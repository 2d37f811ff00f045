"""Role ppu's decisions: which package file, the install command line, and whether to run it.

No public installer contract exists for the Alibaba T-Head PPU SDK (docs/design.md,
"Alibaba PPU"), so everything a site's SDK may differ in is a variable and only these
rules are fixed:

- `ppu_packages` maps file name -> sha256 (a SHA256SUMS file as YAML); the file installed
  is `ppu_package_name` rendered with the version and arch (default
  `PPU_SDK_{version}_linux-{arch}.run`, an ASSUMPTION) and must be in the manifest;
- exactly one of `ppu_package_url` / `ppu_package_dir` is set;
- `ppu_install_command` is an argv list; `{package}` (the cached file) and `{prefix}`
  (`ppu_sdk_prefix`) are replaced in each element, nothing else is interpreted;
- the command runs only when the recorded install (/etc/clusterforge/ppu.json:
  package, sha256, version) differs from the planned one.

    plan(packages, version, name_pattern, arch, url, directory, command, prefix, cache_dir, recorded)
      -> {"package", "sha256", "path", "source", "url", "argv", "record", "install", "reasons"}

Raises cfcore.inputs.InputError naming the variable and the fix. Stdlib only.
"""

from __future__ import annotations

import json
import posixpath
import re

from .inputs import InputError

DEFAULT_NAME_PATTERN = "PPU_SDK_{version}_linux-{arch}.run"
PLACEHOLDERS = ("{package}", "{prefix}")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_SAFE_NAME = re.compile(r"[A-Za-z0-9._+-]+")
RECORD_KEYS = ("package", "sha256", "version")


def package_name(pattern: str, version: str, arch: str) -> str:
    """The file name `pattern` names for `version` and `arch` ({version}, {arch} replaced)."""
    if not version or not str(version).strip():
        raise InputError(
            "ppu_sdk_version is empty", 'set ppu_sdk_version in group_vars/all/versions.yml, e.g. "2.1.0"'
        )
    if "{version}" not in pattern:
        raise InputError(
            f"ppu_package_name {pattern!r} has no {{version}}",
            f"use a pattern such as {DEFAULT_NAME_PATTERN!r}, so the file follows ppu_sdk_version",
        )
    name = pattern.replace("{version}", str(version).strip()).replace("{arch}", str(arch))
    if not _SAFE_NAME.fullmatch(name):
        raise InputError(
            f"ppu_package_name gives {name!r}, not a plain file name",
            "use letters, digits and . _ + - only (no directories, no spaces)",
        )
    return name


def _manifest(packages) -> dict:
    if not isinstance(packages, dict) or not packages:
        raise InputError(
            "ppu_packages is empty or not a mapping",
            "set ppu_packages: {<file name>: <sha256>} for every PPU SDK file the site may install",
        )
    manifest = {}
    for name, digest in packages.items():
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest.strip()):
            raise InputError(
                f"ppu_packages[{name!r}] is not a sha256 ({digest!r})",
                f"set it to the 64 hex digits of `sha256sum {name}`",
            )
        manifest[str(name)] = digest.strip().lower()
    return manifest


def install_argv(command, package: str, prefix: str) -> list:
    """`command` with {package} and {prefix} replaced in each element."""
    if not isinstance(command, (list, tuple)) or not command or not all(isinstance(a, str) for a in command):
        raise InputError(
            f"ppu_install_command must be a non-empty list of strings, got {command!r}",
            'write it as an argv list, e.g. ["bash", "{package}", "--silent", "--prefix={prefix}"]',
        )
    if not any("{package}" in part for part in command):
        raise InputError(
            f"ppu_install_command {list(command)!r} never names {{package}}",
            "put {package} where the installer file goes, e.g. ['bash', '{package}', ...]",
        )
    return [part.replace("{package}", package).replace("{prefix}", prefix) for part in command]


def read_record(text) -> dict | None:
    """/etc/clusterforge/ppu.json as written by the role; None when absent or unreadable."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {key: str(data.get(key) or "") for key in RECORD_KEYS}


def plan(
    packages,
    version: str,
    name_pattern: str = DEFAULT_NAME_PATTERN,
    arch: str = "x86_64",
    url: str = "",
    directory: str = "",
    command=None,
    prefix: str = "/usr/local/PPU_SDK",
    cache_dir: str = "/var/cache/clusterforge/ppu",
    recorded=None,
) -> dict:
    """Everything role ppu decides before it changes anything (see the module docstring)."""
    url, directory = (url or "").strip(), (directory or "").strip()
    if bool(url) == bool(directory):
        raise InputError(
            "set exactly one of ppu_package_url and ppu_package_dir"
            + (" (both are set)" if url else " (neither is set)"),
            "ppu_package_url: a mirror serving <url>/<file name>; ppu_package_dir: a directory on the "
            "controller holding the files of ppu_packages",
        )
    if not str(prefix).startswith("/"):
        raise InputError(f"ppu_sdk_prefix {prefix!r} is not an absolute path", "use e.g. /usr/local/PPU_SDK")
    manifest = _manifest(packages)
    name = package_name(name_pattern or DEFAULT_NAME_PATTERN, version, arch)
    if name not in manifest:
        raise InputError(
            f"ppu_packages has no {name} (ppu_package_name for ppu_sdk_version {version}, arch {arch}); "
            f"it lists: {', '.join(sorted(manifest))}",
            f"add {name}: <sha256> to ppu_packages, or set ppu_package_name to the site's file name pattern",
        )
    path = posixpath.join(cache_dir, name)
    argv = install_argv(
        command if command is not None else ["bash", "{package}", "--silent", "--prefix={prefix}"],
        path,
        prefix,
    )
    record = {"package": name, "sha256": manifest[name], "version": str(version).strip()}
    current = recorded if isinstance(recorded, dict) or recorded is None else read_record(recorded)
    reasons = []
    if current is None:
        reasons.append(f"no recorded PPU SDK install: installing {name}")
    else:
        for key in RECORD_KEYS:
            if current.get(key) != record[key]:
                reasons.append(f"recorded {key} {current.get(key) or '(none)'} -> {record[key]}")
    return {
        "package": name,
        "sha256": record["sha256"],
        "path": path,
        "source": "url" if url else "dir",
        "url": f"{url.rstrip('/')}/{name}" if url else "",
        "argv": argv,
        "record": record,
        "install": bool(reasons),
        "reasons": reasons,
    }
