"""What the roles' tasks/bundle.yml compute without the node (docs/design.md, "Air-gapped installs").

The Ansible facts a planned OS would report, and the need items built from the roles' own lists:

    os_facts("debian 12")
      -> {"os_family": "Debian", "distribution": "Debian", "distribution_release": "bookworm",
          "distribution_major_version": "12", "distribution_version": "12", "architecture": "x86_64",
          "kernel": "unknown", "system": "Linux"}
    os_facts("rhel 9.4", "aarch64")
      -> {"os_family": "RedHat", "distribution": "RedHat", "distribution_release": "Plow", ...,
          "distribution_version": "9.4", "architecture": "aarch64", ...}

`os_release` is the inventory's plan (`ID VERSION_ID` of /etc/os-release, docs/design.md "Inventory
model"), parsed by cfcore.expected's rule (one implementation). playbooks/bundle_needs.yml gives the
result to the roles' tasks/bundle.yml as `ansible_facts`, so the roles decide their package names and
repositories from the same facts as on the node. What only the node knows (its running kernel) is
"unknown" unless given. An OS no role supports raises InputError (a ValueError) naming the value and
the supported ones.

    need_items(["slurmd", "munge"], "os_package", "slurm")
      -> [{"kind": "os_package", "name": "slurmd", "role": "slurm"}, {... "munge" ...}]
    need_items(["linux-headers-unknown", "dkms"], "os_package", "nvidia_driver", kernel="unknown")
      -> [{"kind": "os_package", "name": "linux-headers-<kernel>", "role": "nvidia_driver",
           "unknown": "needs the node's running kernel: set cf_bundle_kernel"}, {... "dkms" ...}]

Stdlib only, Python 3.8.
"""

from __future__ import annotations

import re

from .expected import _os_release
from .inputs import InputError

UNKNOWN_KERNEL = "unknown"

# /etc/os-release ID -> (Ansible's distribution, os_family, {major version: distribution_release}).
# Debian and Ubuntu: every supported release by its codename (the suite of their apt sources). RHEL
# family: the release names Ansible reports where they are one per major version, else "".
_DISTRIBUTIONS = {
    "debian": ("Debian", "Debian", {"11": "bullseye", "12": "bookworm", "13": "trixie"}),
    "ubuntu": ("Ubuntu", "Debian", {"20.04": "focal", "22.04": "jammy", "24.04": "noble"}),
    "rhel": ("RedHat", "RedHat", {"8": "Ootpa", "9": "Plow", "10": "Coughlan"}),
    "rocky": ("Rocky", "RedHat", {"8": "Green Obsidian", "9": "Blue Onyx"}),
    "almalinux": ("AlmaLinux", "RedHat", {}),
    "openeuler": ("openEuler", "RedHat", {}),
    "kylin": ("Kylin Linux Advanced Server", "RedHat", {}),
}
# Debian and Ubuntu name their apt suites by release: an unknown release has no suite to use.
_RELEASE_REQUIRED = ("debian", "ubuntu")
_EXAMPLES = '"ubuntu 22.04", "ubuntu 24.04", "rhel 9.4", "rocky 9.4", "openeuler 22.03", "kylin v10"'


def supported() -> list[str]:
    """The planned OSes this module knows, as `ID VERSION` (RHEL family: any version of the ID)."""
    names = []
    for os_id, (_dist, _family, releases) in _DISTRIBUTIONS.items():
        if os_id in _RELEASE_REQUIRED:
            names.extend(f"{os_id} {version}" for version in releases)
        else:
            names.append(f"{os_id} <version>")
    return names


def os_facts(os_release, arch: str = "x86_64", kernel=None) -> dict:
    """The facts the roles read (`ansible_facts` of a host planned on `os_release`)."""
    plan = _os_release(os_release)
    if plan is None:
        raise InputError(
            "os_release is not set: the planned OS decides the packages of every role",
            f'set os_release in the host\'s group_vars, e.g. os_release: "debian 12" or {_EXAMPLES}',
        )
    os_id, version = plan["id"], plan["version_id"]
    if os_id not in _DISTRIBUTIONS:
        raise InputError(
            f"os_release {plan['text']!r}: no role supports {os_id!r}; supported: {', '.join(supported())}",
            'set os_release to a supported one in the host\'s group_vars, e.g. os_release: "debian 12"',
        )
    distribution, family, releases = _DISTRIBUTIONS[os_id]
    if family == "Debian":
        # Ubuntu's VERSION_ID is "22.04" (its release key); Debian's is the major version.
        key = version if os_id == "ubuntu" else version.split(".")[0]
        if key not in releases:
            raise InputError(
                f"os_release {plan['text']!r}: {distribution} {version} is not a release the roles know "
                f"(its apt suite name); supported: {', '.join(supported())}",
                f'set os_release to one of them, e.g. os_release: "{os_id} {list(releases)[-1]}"',
            )
        release = releases[key]
        major = version.split(".")[0]
    else:
        # Kylin's VERSION_ID is "V10": Ansible reports that as the version and the major version.
        if os_id == "kylin":
            version = version.upper()
        major = version.split(".")[0]
        release = releases.get(major, "")
    arch_text = str(arch or "x86_64").strip() or "x86_64"
    kernel_text = str(kernel).strip() if kernel not in (None, "") else UNKNOWN_KERNEL
    return {
        "os_family": family,
        "distribution": distribution,
        "distribution_release": release,
        "distribution_major_version": major,
        "distribution_version": version,
        "architecture": arch_text,
        "kernel": kernel_text or UNKNOWN_KERNEL,
        "system": "Linux",
    }


# The kinds of docs/design.md's table, each with the field its values go into.
NEED_KEYS = {
    "os_package": "name",
    "apt_repo": "url",
    "yum_repo": "url",
    "file": "url",
    "wheel": "requirement",
    "image": "ref",
}
KERNEL_PLACEHOLDER = "<kernel>"
UNKNOWN_KERNEL_WHY = "needs the node's running kernel: set cf_bundle_kernel (uname -r of the node image)"
# A package name a role built from the unknown kernel (linux-headers-unknown, kernel-devel-unknown).
_UNKNOWN_KERNEL_NAME = re.compile(r"(?<=-)" + UNKNOWN_KERNEL + r"(?=$|[-.+])")


def need_items(values, kind: str, role: str, kernel=None, **fields) -> list:
    """One need item per value (package name, URL, requirement or image), with the fields given.

    An os_package named after the kernel while the kernel is unknown becomes an item with
    `unknown` (why) and `<kernel>` in its name, never a package name that does not exist.
    """
    if kind not in NEED_KEYS:
        raise InputError(
            f"need kind {kind!r} is not one of {', '.join(NEED_KEYS)}", "use a kind of docs/design.md"
        )
    if isinstance(values, (str, bytes)) or values is None:
        values = [] if values in (None, "") else [values]
    items = []
    for value in values:
        text = str(value).strip()
        if not text:
            continue
        item = {"kind": kind, NEED_KEYS[kind]: text, "role": str(role), **fields}
        if (
            kind == "os_package"
            and (kernel in (None, "", UNKNOWN_KERNEL))
            and _UNKNOWN_KERNEL_NAME.search(text)
        ):
            item["name"] = _UNKNOWN_KERNEL_NAME.sub(KERNEL_PLACEHOLDER, text)
            item["unknown"] = UNKNOWN_KERNEL_WHY
        items.append(item)
    return items


def mirror_file_items(files, base_url, url_var: str, role: str) -> list:
    """`file` items of manifest files fetched as <base_url>/<name> ([{name, sha256}], as the roles'
    plans list them: ascend_driver, cann, ascend_runtime)."""
    base = str(base_url or "").rstrip("/")
    items = []
    for entry in files or []:
        if not isinstance(entry, dict) or not entry.get("name"):
            raise InputError(
                f"a file to fetch must be a mapping with a name, got {entry!r}", "pass the plan's files"
            )
        items.append(
            {
                "kind": "file",
                "url": f"{base}/{entry['name']}",
                "url_var": str(url_var),
                "sha256": str(entry.get("sha256") or "").lower(),
                "role": str(role),
            }
        )
    return items
