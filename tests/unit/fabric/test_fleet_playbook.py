"""playbooks/validate.yml end to end on three local hosts whose HCA sysfs trees differ in firmware:
the fleet rule runs once, after every host has its result, and only warns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ENV_BIN = Path(sys.executable).parent


def sysfs_tree(root: Path, firmware: str) -> None:
    for n in range(8):
        ca = root / "sys" / "class" / "infiniband" / f"mlx5_{n}"
        port = ca / "ports" / "1"
        port.mkdir(parents=True)
        for name, value in (("fw_ver", firmware), ("hca_type", "MT4129"), ("board_id", "MT_0000000838")):
            (ca / name).write_text(value + "\n")
        for name, value in (
            ("state", "4: ACTIVE"),
            ("phys_state", "5: LinkUp"),
            ("rate", "400 Gb/sec (4X NDR)"),
            ("link_layer", "InfiniBand"),
        ):
            (port / name).write_text(value + "\n")


def test_validate_playbook_prints_the_fleet_rule_once_and_does_not_fail(tmp_path):
    hosts = {"n1": "28.39.2048", "n2": "28.39.2048", "n3": "28.36.1010"}
    lines = ["[gpu_nvidia]"]
    for host, firmware in hosts.items():
        sysfs_tree(tmp_path / host, firmware)
        lines.append(
            f"{host} ansible_connection=local ansible_python_interpreter={sys.executable} "
            f"node_sku=hgx-h100-8gpu validate_sysfs_root={tmp_path / host}"
        )
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("\n".join(lines) + "\n")
    env = {
        **os.environ,
        "PATH": f"{ENV_BIN}:/usr/bin:/bin",  # no ibstat: the sysfs trees answer
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "ANSIBLE_NOCOLOR": "1",
    }
    done = subprocess.run(
        [
            str(ENV_BIN / "ansible-playbook"),
            "-i",
            str(inventory),
            str(ROOT / "playbooks" / "validate.yml"),
            "-e",
            json.dumps({"validate_only_checks": ["ib.*"]}),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    fleet_task = report["plays"][1]["tasks"][0]
    assert fleet_task["task"]["name"].startswith("Compare HCA firmware across nodes of the same SKU")
    assert list(fleet_task["hosts"]) == ["n1"]  # run_once
    messages = fleet_task["hosts"]["n1"]["msg"]
    assert len(messages) == 1
    assert messages[0].startswith("n3 (hgx-h100-8gpu): warn fleet.hca_firmware: MT4129 HCA firmware differs")
    assert "2 of 3 nodes run 28.39.2048" in messages[0]
    stop = report["plays"][1]["tasks"][1]
    assert {host: result.get("failed", False) for host, result in stop["hosts"].items()} == dict.fromkeys(
        hosts, False
    )
