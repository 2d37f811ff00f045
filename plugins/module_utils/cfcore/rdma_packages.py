"""The RDMA stack of role `rdma`: what each install method installs and from where.

    install_plan(method="doca", os_family="Debian", distribution="Ubuntu", distribution_version="22.04",
                 architecture="x86_64", doca_version="2.9.1", key_sha256="sha256:...", keyring=...)
    -> {"method": "doca", "packages": ["doca-ofed"], "version": "2.9.1",
        "repository": {"url": ".../doca/2.9.1/ubuntu22.04/x86_64/", "key_url": ..., "key_checksum": ...,
                       "apt_source": "deb [signed-by=...] .../ ./", "distro": "ubuntu22.04",
                       "arch": "x86_64"}}

Methods: `distro` (the OS's rdma-core, ibverbs-utils, infiniband-diags, perftest: no repository),
`doca` (NVIDIA's DOCA-OFED repository or a site mirror, the profile meta-package such as doca-ofed)
and `mlnx_ofed` (the legacy MLNX_OFED repository, 24.10 the last release). Both vendor methods need
the site's sha256 of the repository key. Errors raise PlanError naming the variable and the fix.

Also: `parse_ofed_info` (the version `ofed_info -s` prints) and `hcas_from_sysfs` (the HCA facts of
the design's contract from parsers/infiniband.read_sysfs_infiniband's shape).

Stdlib only, Python 3.8: used by a filter and by the module hca_facts.
"""

from __future__ import annotations

import re

METHODS = ("distro", "doca", "mlnx_ofed")
# The userspace and tools of the distribution's RDMA stack, one transaction.
DISTRO_PACKAGES = {
    "Debian": ["rdma-core", "ibverbs-utils", "infiniband-diags", "perftest"],
    "RedHat": ["rdma-core", "libibverbs-utils", "infiniband-diags", "perftest"],
}
DOCA_BASE_URL = "https://linux.mellanox.com/public/repo/doca"
DOCA_KEY_URL = "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
MLNX_OFED_BASE_URL = "https://linux.mellanox.com/public/repo/mlnx_ofed"
MLNX_OFED_KEY_URL = "https://www.mellanox.com/downloads/ofed/RPM-GPG-KEY-Mellanox"
# MLNX_OFED became DOCA-OFED: 24.10 is the last standalone release.
MLNX_OFED_LAST = (24, 10)

_DOCA_VERSION = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)*$")
_MLNX_VERSION = re.compile(r"^([0-9]+)\.([0-9]+)-[0-9]+(\.[0-9]+)*$")
_SHA256 = re.compile(r"^(sha256:)?([0-9A-Fa-f]{64})$")
_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._-]*$")
_REPO_NAME = re.compile(r"^[a-z]+[0-9][0-9.]*$")
_RHEL_LIKE = {"redhat", "rhel", "rocky", "almalinux", "centos", "oraclelinux", "ol"}
_OFED_INFO = re.compile(r"(?:MLNX_OFED_LINUX|OFED-internal|OFED)-([0-9][0-9A-Za-z.\-]*?)(?::|\s|$)")


class PlanError(ValueError):
    """A setting the role cannot act on: the message names the variable and the fix."""


def _text(value) -> str:
    return "" if value is None else str(value).strip()


def mlnx_ofed_release(version) -> tuple:
    """'24.10-1.1.4.0' -> (24, 10); PlanError for a malformed or a too new version."""
    text = _text(version)
    match = _MLNX_VERSION.match(text)
    if not match:
        raise PlanError(
            f"rdma_mlnx_ofed_version is {text!r}, not a MLNX_OFED version: set the full release, "
            'quoted, e.g. rdma_mlnx_ofed_version: "24.10-1.1.4.0"'
        )
    release = (int(match.group(1)), int(match.group(2)))
    if release > MLNX_OFED_LAST:
        raise PlanError(
            f"rdma_mlnx_ofed_version {text} is newer than the last MLNX_OFED release "
            f"({MLNX_OFED_LAST[0]}.{MLNX_OFED_LAST[1]}): MLNX_OFED continues as DOCA-OFED; set "
            'rdma_install_method: doca and rdma_doca_version (e.g. "2.9.1"), or a 24.10-x or older release'
        )
    return release


def repo_distro(method: str, os_family: str, distribution: str, distribution_version: str) -> str:
    """The repository's distribution folder: ubuntu22.04; rhel9 (DOCA) or rhel9.5 (MLNX_OFED); debian12.x.

    DOCA builds for major releases of RHEL (from 3.2 only those); MLNX_OFED per minor release.
    """
    name = _text(distribution).lower().replace(" ", "")
    version = _text(distribution_version)
    if name == "ubuntu":
        return f"ubuntu{version}"
    if name in _RHEL_LIKE or os_family == "RedHat":
        return f"rhel{version}" if method == "mlnx_ofed" else f"rhel{version.split('.')[0]}"
    if name == "debian":
        return f"debian{version}"
    raise PlanError(
        f"no {method} repository folder is known for {distribution} {version}: set rdma_repo_distro to the "
        "folder name of the repository (e.g. ubuntu22.04, rhel9, debian12.5)"
    )


def repo_arch(method: str, architecture: str) -> str:
    """x86_64, or the vendor's name for 64-bit Arm (DOCA: arm64-sbsa, MLNX_OFED: aarch64)."""
    arch = _text(architecture)
    if arch in ("aarch64", "arm64"):
        return "arm64-sbsa" if method == "doca" else "aarch64"
    if arch in ("x86_64", "amd64"):
        return "x86_64"
    raise PlanError(
        f"no {method} repository for the architecture {arch!r}: set rdma_repo_arch (x86_64, arm64-sbsa)"
    )


def key_checksum(value) -> str:
    """'sha256:<hex>' from the bare digest or the prefixed one; PlanError when unset or malformed."""
    text = _text(value)
    match = _SHA256.match(text)
    if not match:
        what = "not set" if not text else f"not a sha256 digest: {text!r}"
        raise PlanError(
            f"rdma_doca_repo_key_sha256 is {what}. The vendor methods trust only a repository key the site "
            "pinned: set it to the sha256 of the key file you verified (sha256sum of it), e.g. "
            'rdma_doca_repo_key_sha256: "sha256:<64 hex digits>"'
        )
    return "sha256:" + match.group(2).lower()


def _package(value, variable: str, example: str) -> str:
    text = _text(value)
    if not _PACKAGE.match(text):
        raise PlanError(f"{variable} is {text!r}, not a package name: set it, e.g. {variable}: {example}")
    return text


def install_plan(
    method,
    os_family,
    distribution="",
    distribution_version="",
    architecture="x86_64",
    doca_version="",
    doca_profile="doca-ofed",
    doca_repo_url="",
    mlnx_ofed_version="",
    mlnx_ofed_profile="mlnx-ofed-all",
    mlnx_ofed_repo_url="",
    key_url="",
    key_sha256="",
    keyring="/etc/apt/keyrings/clusterforge-rdma.asc",
    distro_override="",
    arch_override="",
) -> dict:
    """Packages and repository of one install method on one OS (PlanError: the variable and the fix)."""
    method = _text(method)
    if method not in METHODS:
        raise PlanError(f"rdma_install_method is {method!r}: use one of {', '.join(METHODS)}")
    if os_family not in DISTRO_PACKAGES:
        raise PlanError(
            f"role rdma supports the Debian and RedHat OS families, not {os_family!r} ({distribution}): "
            "install the RDMA stack on this node by hand or leave rdma_enabled false"
        )
    if method == "distro":
        return {
            "method": method,
            "packages": list(DISTRO_PACKAGES[os_family]),
            "version": None,
            "repository": None,
        }
    if method == "doca":
        version = _text(doca_version)
        if not _DOCA_VERSION.match(version):
            raise PlanError(
                f"rdma_doca_version is {version!r}, not a DOCA release: set it, quoted, e.g. "
                'rdma_doca_version: "2.9.1"'
            )
        packages = [_package(doca_profile, "rdma_doca_profile", "doca-ofed")]
        url, base, default_key = _text(doca_repo_url), DOCA_BASE_URL, DOCA_KEY_URL
    else:
        mlnx_ofed_release(mlnx_ofed_version)
        version = _text(mlnx_ofed_version)
        packages = [_package(mlnx_ofed_profile, "rdma_mlnx_ofed_profile", "mlnx-ofed-all")]
        url, base, default_key = _text(mlnx_ofed_repo_url), MLNX_OFED_BASE_URL, MLNX_OFED_KEY_URL
    checksum = key_checksum(key_sha256)
    distro = _text(distro_override) or repo_distro(method, os_family, distribution, distribution_version)
    arch = _text(arch_override) or repo_arch(method, architecture)
    if not _REPO_NAME.match(distro):
        raise PlanError(f"rdma_repo_distro is {distro!r}: use the repository's folder name, e.g. ubuntu22.04")
    if not url:
        url = f"{base}/{version}/{distro}/{arch}/"
    elif not re.match(r"^(https?|file)://\S+$", url):
        variable = "rdma_doca_repo_url" if method == "doca" else "rdma_mlnx_ofed_repo_url"
        raise PlanError(f"{variable} is {url!r}: set the repository's URL (https://, http:// or file://)")
    url = url.rstrip("/") + "/"
    # A flat repository (Packages at its root): the suite is "./".
    return {
        "method": method,
        "packages": packages,
        "version": version,
        "repository": {
            "url": url,
            "distro": distro,
            "arch": arch,
            "key_url": _text(key_url) or default_key,
            "key_checksum": checksum,
            "apt_source": f"deb [signed-by={keyring}] {url} ./",
        },
    }


def parse_ofed_info(text) -> str | None:
    """The release `ofed_info -s` prints ('MLNX_OFED_LINUX-24.10-1.1.4.0:' -> '24.10-1.1.4.0'), or None."""
    for line in _text(text).splitlines():
        match = _OFED_INFO.search(line.strip())
        if match:
            return match.group(1).rstrip(".-")
    return None


def hcas_from_sysfs(parsed: dict) -> dict:
    """{cas: [...]} of read_sysfs_infiniband -> the contract's {name: {type, board_id, firmware,
    node_guid, ports: {"<n>": {state, physical_state, rate_gbps, link_layer}}}}.

    Port numbers are strings: the fact is JSON, whose keys are strings anyway.
    """
    hcas = {}
    for ca in parsed.get("cas", []):
        hcas[ca["name"]] = {
            "type": ca.get("type"),
            "board_id": ca.get("board_id"),
            "firmware": ca.get("firmware"),
            "node_guid": ca.get("node_guid"),
            "ports": {
                str(port["port"]): {
                    "state": port.get("state"),
                    "physical_state": port.get("physical_state"),
                    "rate_gbps": port.get("rate_gbps"),
                    "link_layer": port.get("link_layer"),
                }
                for port in ca.get("ports", [])
            },
        }
    return hcas
