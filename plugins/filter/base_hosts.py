"""Filter of role base: the cluster's /etc/hosts lines from the inventory.

    {{ base_hosts_group | base_hosts_lines(groups, hostvars, base_cluster_domain) }}

One line per host of the group, in inventory order: ``address [fqdn] name``.
A host's address is, in this order: its ``base_cluster_address`` variable, its
``ansible_host`` when that is an IP address, the address of its default IPv4
route from its facts. A host with none of them, an address that is not an IP
address, or two hosts sharing one address is an inventory error: the filter
names the host and the fix instead of writing a wrong /etc/hosts to every node.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError


def _ip(value: Any) -> str | None:
    """`value` as a normalised IP address string, or None when it is not one."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def _host_address(name: str, hostvars: Mapping[str, Any]) -> str:
    explicit = hostvars.get("base_cluster_address")
    if explicit not in (None, ""):
        address = _ip(explicit)
        if address is None:
            raise AnsibleFilterError(
                f"host {name}: base_cluster_address {explicit!r} is not an IP address; "
                "set it to the node's cluster IPv4/IPv6 address"
            )
        return address
    address = _ip(hostvars.get("ansible_host"))
    if address is not None:
        return address
    facts = hostvars.get("ansible_facts") or {}
    for default_ipv4 in (facts.get("default_ipv4"), hostvars.get("ansible_default_ipv4")):
        if isinstance(default_ipv4, Mapping):
            address = _ip(default_ipv4.get("address"))
            if address is not None:
                return address
    raise AnsibleFilterError(
        f"host {name}: no cluster address for /etc/hosts: set base_cluster_address or an IP "
        "ansible_host for it in the inventory, or include it in the play so that its facts "
        "(default IPv4 address) are gathered"
    )


def _names(name: str, domain: str) -> list[str]:
    """FQDN first (the canonical name for resolvers), then the short name."""
    short = name.split(".", 1)[0]
    if "." in name:
        fqdn = name
    elif domain:
        fqdn = f"{name}.{domain.strip('.')}"
    else:
        fqdn = ""
    return [n for n in (fqdn, short) if n]


def base_hosts_lines(
    group: str,
    groups: Mapping[str, Iterable[str]],
    hostvars: Mapping[str, Mapping[str, Any]],
    domain: str = "",
) -> list[str]:
    if group not in groups:
        raise AnsibleFilterError(
            f"base_hosts_group {group!r} is not a group of this inventory; "
            f"set it to one of: {', '.join(sorted(groups))}"
        )
    lines: list[str] = []
    owner_of: dict[str, str] = {}
    for name in groups[group]:
        address = _host_address(name, hostvars[name])
        if address in owner_of:
            raise AnsibleFilterError(
                f"hosts {owner_of[address]} and {name} both have the cluster address {address}; "
                "fix ansible_host/base_cluster_address of one of them in the inventory"
            )
        owner_of[address] = name
        lines.append(" ".join([address, *_names(name, domain or "")]))
    return lines


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"base_hosts_lines": base_hosts_lines}
