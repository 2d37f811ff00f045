"""An air-gapped lab: its nodes reach the lab network and this host, never anything beyond.

`clusterforge lab offline --name LAB --vars FILE` records the inventory
variables of an offline bundle (what `clusterforge bundle serve --vars-out`
wrote) and cuts the lab network off: one iptables rule rejects every packet the
host would forward from the lab's subnet elsewhere, so Debian's mirror is gone
while a bundle server on this host (the lab network's gateway address) and the
other lab containers still answer. The lab's inventory then carries the
bundle's variables: they replace the stand-ins' URL variables in place (the
stand-ins' checksums and package lists stay) and the rest go to
group_vars/all/bundle.yml. `--online` undoes both; `lab down` removes the rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab.context import LabContext

OFFLINE_FILE = "offline.json"  # in the lab's state folder: the bundle's variables
BUNDLE_VARS_NAME = "bundle"  # group_vars/all/bundle.yml


def offline_vars(ctx: LabContext, lab: str) -> dict[str, Any] | None:
    path = ctx.state_dir(lab) / OFFLINE_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise EnvironmentNotReady(
            f"{path} is unreadable: {err}", f"clusterforge lab offline --name {lab} --online"
        ) from None


def overlay(
    standin_vars: dict[str, dict[str, Any]], offline: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """The stand-ins' variables with the bundle's in place, and the bundle's others as one more file.

    A stand-in URL the bundle does not carry (ppu_package_url in a lab without PPU nodes) is
    dropped: an offline lab has no URL elsewhere, and its preflight refuses any.
    """
    if not offline:
        return standin_vars
    merged = {
        name: {
            key: offline.get(key, value)
            for key, value in values.items()
            if key in offline or not key.endswith("_url")
        }
        for name, values in standin_vars.items()
    }
    taken = {key for values in standin_vars.values() for key in values}
    merged[BUNDLE_VARS_NAME] = {key: value for key, value in offline.items() if key not in taken}
    return merged


def read_vars_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise InvalidInput(
            f"--vars {path} is not readable YAML: {err}", "pass the file `bundle serve --vars-out` wrote"
        ) from None
    if not isinstance(data, dict) or "cf_bundle_url" not in data:
        raise InvalidInput(
            f"--vars {path} has no cf_bundle_url",
            "pass the file `clusterforge bundle serve --vars-out` wrote",
        )
    return data


def go_offline(ctx: LabContext, lab: str, subnet: str, values: dict[str, Any]) -> None:
    state = ctx.state_dir(lab)
    state.mkdir(parents=True, exist_ok=True)
    (state / OFFLINE_FILE).write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
    cut_off(ctx, lab, subnet)


def go_online(ctx: LabContext, lab: str, subnet: str | None) -> None:
    (ctx.state_dir(lab) / OFFLINE_FILE).unlink(missing_ok=True)
    if subnet:
        reconnect(ctx, lab, subnet)


def _rule(lab: str, subnet: str) -> list[str]:
    return ["FORWARD", "-s", subnet, "!", "-d", subnet, "-m", "comment", "--comment",
            f"clusterforge-lab-{lab}-offline", "-j", "REJECT"]  # fmt: skip


def cut_off(ctx: LabContext, lab: str, subnet: str) -> None:
    """Insert the rule first in FORWARD (before podman's own accepts), once."""
    rule = _rule(lab, subnet)
    if ctx.runner(["iptables", "-C", *rule]).ok:
        return
    result = ctx.runner(["iptables", "-I", rule[0], "1", *rule[1:]])
    if not result.ok:
        raise EnvironmentNotReady(
            f"could not cut lab {lab} off ({subnet}): iptables: {result.last_error_line()}",
            "run as root on a host with iptables (the lab's podman networks use it too)",
        )


def reconnect(ctx: LabContext, lab: str, subnet: str) -> bool:
    """Remove the rule (every copy); whether there was one."""
    rule = _rule(lab, subnet)
    removed = False
    while ctx.runner(["iptables", "-C", *rule]).ok:
        if not ctx.runner(["iptables", "-D", *rule]).ok:
            break
        removed = True
    return removed
