"""Helpers for inventory-check tests: a scratch copy of the example inventory, edits, and a CLI runner.

Broken inventories are made in tmp_path from inventories/example (so they
track it) instead of being committed: yamllint checks every YAML file of the
repository, and most of these are broken on purpose.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from clusterforge.main import main
from clusterforge.paths import project_root

EXAMPLE = project_root() / "inventories" / "example"


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def problems(self) -> list[dict[str, Any]]:
        return json.loads(self.out)

    def errors(self, rule: str | None = None) -> list[dict[str, Any]]:
        return [p for p in self.problems if p["severity"] == "error" and (rule is None or p["rule"] == rule)]


def run_check(
    capsys: pytest.CaptureFixture, *sources: Path | str, fmt: str = "json", flags: tuple[str, ...] = ()
) -> Outcome:
    argv = ["inventory", "check", "--format", fmt, *flags]
    for source in sources:
        argv += ["-i", str(source)]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(argv)
    captured = capsys.readouterr()
    return Outcome(exc.value.code, captured.out, captured.err)


class Inventory:
    """A writable copy of the example inventory."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(EXAMPLE, root)

    def path(self, rel: str) -> Path:
        return self.root / rel

    def load(self, rel: str) -> Any:
        return yaml.safe_load(self.path(rel).read_text())

    def dump(self, rel: str, data: Any) -> None:
        self.path(rel).parent.mkdir(parents=True, exist_ok=True)
        self.path(rel).write_text(yaml.safe_dump(data, sort_keys=False))

    def write(self, rel: str, text: str) -> None:
        self.path(rel).parent.mkdir(parents=True, exist_ok=True)
        self.path(rel).write_text(text)

    def set_var(self, rel: str, name: str, value: Any) -> None:
        data = self.load(rel) if self.path(rel).exists() else {}
        data = data or {}
        data[name] = value
        self.dump(rel, data)

    def del_var(self, rel: str, name: str) -> None:
        data = self.load(rel)
        del data[name]
        self.dump(rel, data)

    def host_entry(self, data: dict[str, Any], host: str) -> dict[str, Any] | None:
        """The mapping of `host` inside a YAML inventory tree (first definition with variables)."""
        for group in _groups(data):
            hosts = group.get("hosts") or {}
            if hosts.get(host):
                return hosts[host]
        return None

    def set_host_var(self, host: str, name: str, value: Any) -> None:
        data = self.load("hosts.yml")
        self.host_entry(data, host)[name] = value
        self.dump("hosts.yml", data)

    def del_host_var(self, host: str, name: str) -> None:
        data = self.load("hosts.yml")
        del self.host_entry(data, host)[name]
        self.dump("hosts.yml", data)

    def group(self, data: dict[str, Any], name: str) -> dict[str, Any]:
        return data["all"]["children"][name]

    def hccn(self, host: str) -> list[dict[str, Any]]:
        return self.load(f"host_vars/{host}.yml")["hccn_devices"]

    def set_hccn(self, host: str, devices: list[dict[str, Any]]) -> None:
        self.set_var(f"host_vars/{host}.yml", "hccn_devices", devices)


def _groups(data: dict[str, Any]):
    for group in (data or {}).values():
        if isinstance(group, dict):
            yield group
            yield from _groups(group.get("children") or {})


def plan(addresses: list[str], netmask: str = "255.255.255.0", gateway_last: int = 1) -> list[dict[str, Any]]:
    """An hccn_devices plan: device i gets addresses[i]; gateway .gateway_last of its own /24."""
    devices = []
    for device_id, address in enumerate(addresses):
        gateway = ".".join([*address.split(".")[:3], str(gateway_last)])
        devices.append(
            {
                "id": device_id,
                "address": address,
                "netmask": netmask,
                "gateway": gateway,
                "netdetect": gateway,
            }
        )
    return devices
