"""What a bring-up of an inventory downloads, per host and per target OS.

docs/design.md, "Air-gapped installs", has the contract.

The roles say it themselves: playbooks/bundle_needs.yml runs each role's
tasks/bundle.yml on every host (contacting no node) and returns the hosts'
needs through set_stats, so the package names and URLs stay in the roles'
variables, never copied here.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.paths import project_root
from clusterforge.validation.runner import run_playbook

PLAYBOOK = "bundle_needs.yml"
STATS_KEY = "cf_bundle_needs"  # set_stats: {host: {os_release, needs: [items]}}
KINDS = ("os_package", "apt_repo", "yum_repo", "file", "wheel", "image")
# Ansible's architecture fact -> the Debian architecture of the packages.
DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
DEBIAN_FAMILY = ("debian", "ubuntu")  # os_release IDs whose packages come from APT


def need_id(item: dict[str, Any]) -> str:
    """A need's identity across hosts and builds: `kind:name` (the name, URL, requirement or image)."""
    kind = item.get("kind", "")
    key = item.get("name") or item.get("url") or item.get("requirement") or item.get("ref") or ""
    return f"{kind}:{key}"


@dataclass
class TargetNeeds:
    """The union of the needs of every host planned on one OS."""

    os_release: str
    arch: str = "amd64"
    hosts: list[str] = field(default_factory=list)
    packages: dict[str, list[str]] = field(default_factory=dict)  # spec -> hosts
    apt_repos: dict[str, dict[str, Any]] = field(default_factory=dict)  # url -> item
    yum_repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # url -> item
    wheels: dict[str, dict[str, Any]] = field(default_factory=dict)  # requirement -> item
    images: dict[str, dict[str, Any]] = field(default_factory=dict)  # ref -> item
    unknown: list[dict[str, Any]] = field(default_factory=list)  # items the nodes' facts would decide

    @property
    def apt(self) -> bool:
        """A Debian-family target: its packages come from APT repositories."""
        return self.os_release.split()[0] in DEBIAN_FAMILY if self.os_release else False

    @property
    def os_dir(self) -> str:
        """`os/debian-12-amd64`: the target's flat package repository in the bundle."""
        return "os/" + "-".join(self.os_release.lower().split()) + f"-{self.arch}"

    def add(self, host: str, item: dict[str, Any]) -> None:
        if item.get("unknown"):
            self.unknown.append({**item, "host": host})
            return
        kind = item.get("kind")
        if kind == "os_package":
            self.packages.setdefault(str(item["name"]), []).append(host)
        elif kind in ("apt_repo", "yum_repo"):
            (self.apt_repos if kind == "apt_repo" else self.yum_repos).setdefault(str(item["url"]), item)
        elif kind == "file":
            self.files.setdefault(str(item["url"]), item)
        elif kind == "wheel":
            self.wheels.setdefault(str(item["requirement"]), item)
        elif kind == "image":
            self.images.setdefault(str(item["ref"]), item)


@dataclass
class Needs:
    hosts: dict[str, dict[str, Any]]  # host -> {os_release, needs: [items]}
    targets: dict[str, TargetNeeds]  # os_release -> union

    def hosts_needing(self, ident: str) -> list[str]:
        return sorted(
            h for h, entry in self.hosts.items() if any(need_id(i) == ident for i in entry["needs"])
        )


# Variables that name or place a host rather than decide what it installs: hosts alike but for
# these share one needs computation (a 1,000-node fleet is a handful of kinds of node).
IDENTITY_VARS = frozenset(
    {
        "inventory_hostname",
        "inventory_hostname_short",
        "ansible_host",
        "ansible_port",
        "rack",
        "leaf_switch",
        "spine",
        "pod",
        "nvlink_domain",
        "hccn_devices",
    }
)
POSITIONS = 3  # hosts past the third of every group they are in differ by their variables only
IDENTITY_SUFFIXES = ("_address", "_addresses", "_ip", "_mac", "_hostname")


def representatives(inventory: Any, hosts: list[str]) -> dict[str, list[str]]:
    """One host per kind of host (same groups, same variables but for IDENTITY_VARS) -> its kind's hosts."""
    kinds: dict[str, list[str]] = {}
    for host in hosts:
        values = inventory.vars_of(host)
        decisive = {
            name: values[name]
            for name in sorted(values)
            if name not in IDENTITY_VARS and not name.endswith(IDENTITY_SUFFIXES)
        }
        # Roles pick hosts by position too (the first control-plane node runs kubeadm init, the
        # first monitoring host Grafana): a host among the first POSITIONS of a group is its own kind.
        places = {
            group: min(inventory.group_hosts(group).index(host), POSITIONS)
            for group in inventory.groups_of(host)
        }
        signature = json.dumps([places, decisive], sort_keys=True, default=str)
        kinds.setdefault(signature, []).append(host)
    return {members[0]: members for members in kinds.values()}


def compute_needs(
    inventory: Any,
    *,
    extravars: dict[str, Any] | None = None,
    private_dir: Path | None = None,
) -> Needs:
    """The needs of the inventory's targets (its --limit applied), from playbooks/bundle_needs.yml.

    The playbook runs on one representative of each kind of host (`representatives`): its
    needs are its kind's, so the cost grows with the kinds of node, not the fleet.
    """
    kinds = representatives(inventory, list(inventory.targets))
    with tempfile.TemporaryDirectory(prefix="clusterforge-bundle-needs-") as scratch:
        limit_file = Path(scratch) / "limit.txt"
        limit_file.write_text("".join(f"{host}\n" for host in kinds))
        run = run_playbook(
            project_root() / "playbooks" / PLAYBOOK,
            inventory.path,
            private_dir or Path(scratch) / "runner",
            lambda _name, _data: None,
            operator_vars=extravars,  # the operator's -e of `bundle build`
            limit=f"@{limit_file}",
        )
        tail = run.stdout_tail(25)
    found = (run.stats.get("artifact_data") or {}).get(STATS_KEY) or {}
    per_host = {host: found[rep] for rep, members in kinds.items() if rep in found for host in members}
    if run.status != "successful" or not per_host:
        raise InvalidInput(
            f"playbooks/{PLAYBOOK} could not compute the hosts' needs ({run.status}, rc {run.rc}):\n{tail}",
            "fix the variable or host named above (it reads the inventory only; no node is contacted)",
        )
    return needs_from_stats(per_host, inventory.hostvars)


def needs_from_stats(per_host: dict[str, Any], hostvars: Any = None) -> Needs:
    """Group the playbook's per-host needs by target OS; InvalidInput on a malformed item."""
    targets: dict[str, TargetNeeds] = {}
    for host, entry in sorted(per_host.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("needs"), list):
            raise EnvironmentNotReady(f"{PLAYBOOK} returned no needs list for {host}: {entry!r}", _REPORT)
        os_release = str(entry.get("os_release") or "").strip().lower()
        arch_fact = (
            str((hostvars or {}).get(host, {}).get("cf_bundle_arch", "x86_64")) if hostvars else "x86_64"
        )
        target = targets.setdefault(os_release, TargetNeeds(os_release, DEB_ARCH.get(arch_fact, arch_fact)))
        target.hosts.append(host)
        for item in entry["needs"]:
            if not isinstance(item, dict) or item.get("kind") not in KINDS:
                raise EnvironmentNotReady(
                    f"{host}: a role returned a need of no known kind: {item!r}", _REPORT
                )
            target.add(host, item)
    return Needs(hosts=dict(per_host), targets=targets)


_REPORT = "a role's tasks/bundle.yml breaks the contract of docs/design.md; report it with the item shown"
