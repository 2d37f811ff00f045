"""Filters of role ppu: the install plan, and the ACK node labels from ppu-smi's output.

    {{ ppu_packages | clusterforge.cluster.cf_ppu_plan(version=..., url=..., directory=..., ...) }}
    {{ ppu_smi_L_stdout | clusterforge.cluster.cf_ppu_labels(ppu_smi_q_stdout) }}

The rules live once in cfcore (ppu_packages.py; parsers/ppu.py for ppu-smi and the labels);
these filters adapt them to Ansible and turn their input errors into task failures that name
the variable and the fix.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import ppu_packages
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers import ParseError, parse
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.ppu import ack_labels


def _plain(value: Any) -> Any:
    """Ansible's tagged str/dict/list subclasses as plain Python values."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def cf_ppu_plan(
    packages: Any,
    version: Any = "",
    name_pattern: Any = ppu_packages.DEFAULT_NAME_PATTERN,
    arch: Any = "x86_64",
    url: Any = "",
    directory: Any = "",
    command: Any = None,
    prefix: Any = "/usr/local/PPU_SDK",
    cache_dir: Any = "/var/cache/clusterforge/ppu",
    recorded: Any = None,
) -> dict[str, Any]:
    try:
        return ppu_packages.plan(
            _plain(packages),
            str(version or ""),
            str(name_pattern or ppu_packages.DEFAULT_NAME_PATTERN),
            str(arch),
            str(url or ""),
            str(directory or ""),
            _plain(command),
            str(prefix),
            str(cache_dir),
            _plain(recorded) if recorded not in (None, "") else None,
        )
    except InputError as err:
        raise AnsibleFilterError(f"{err.message} (fix: {err.fix})" if err.fix else err.message) from None


def cf_ppu_labels(list_stdout: Any, q_stdout: Any = None) -> dict[str, Any]:
    """{resource, count, labels} from `ppu-smi -L` (and `ppu-smi -q` for ppu_mem)."""
    try:
        listed = parse("ppu-smi-list", str(list_stdout or ""))
        detail = parse("ppu-smi-q", str(q_stdout)) if q_stdout else None
        return ack_labels(listed, detail)
    except ParseError as err:
        raise AnsibleFilterError(
            f"ppu-smi output not understood: {err} (fix: {err.fix or 'run ppu-smi -L on the node'})"
        ) from None
    except ValueError as err:
        raise AnsibleFilterError(f"{err} (fix: check the node's PPUs with ppu-smi -L)") from None


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cf_ppu_plan": cf_ppu_plan, "cf_ppu_labels": cf_ppu_labels}
