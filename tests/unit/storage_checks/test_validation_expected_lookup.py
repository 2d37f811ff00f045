"""Lookup validation_expected (role node_expectation) on a real ansible-playbook run: it reads the
variables cfcore/expected.py names, templated by Ansible, with the first juicefs_meta host's
Redis as the default meta URL and the run's skips added, and gives what the CLI's pre-flight
gives for the same inventory, and never reaches the fact cache; a malformed value fails with the
host and the variable named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cfcore.expected import build_expected, with_run_skips
from clusterforge.validation.inventory import load_inventory
from clusterforge.validation.workflow import _validation_inputs

ROOT = Path(__file__).resolve().parents[3]
ENV_BIN = Path(sys.executable).parent
PLAY = """
- name: Expectations of every host
  hosts: all
  gather_facts: false
  tasks:
    - name: Role node_expectation
      ansible.builtin.import_role:
        name: clusterforge.cluster.node_expectation
    - name: Write them out
      ansible.builtin.copy:
        content: "{{ validate_expected | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""
INVENTORY = """
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: PYTHON
    driver_branch: "535"
    juicefs_volumes:
      - {name: jfs, storage: s3, bucket: "https://s3.example/jfs", access_key: AK, secret_key: SK}
  children:
    gpu_nvidia:
      hosts:
        gpu-1:
          node_sku: hgx-h100-8gpu
          nvidia_driver_version: "{{ driver_branch }}.183.01"
          validate_skip_checks: [gpu.mig]
          juicefs_mounts: [{volume: jfs, path: /mnt/jfs}]
    juicefs_meta:
      hosts:
        ctl-1:
          node_sku: cpu-generic
          juicefs_redis_bind_address: 10.0.3.10
"""


def playbook(tmp_path, *extra):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "hosts.yml").write_text(INVENTORY.replace("PYTHON", sys.executable))
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"),  # ansible.cfg's jsonfile cache, here
        "ANSIBLE_NOCOLOR": "1",
    }
    argv = [str(ENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
            "-e", json.dumps({"out": str(tmp_path)}), *extra]  # fmt: skip
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_playbook_and_the_cli_expect_the_same(tmp_path, monkeypatch):
    # load_inventory points this process at the checkout's ansible.cfg: undone after the test
    monkeypatch.setenv("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
    skips = ["node.mounts"]
    done = playbook(tmp_path, "-e", json.dumps({"validate_extra_skip_checks": skips}))
    assert done.returncode == 0, done.stdout + done.stderr
    gpu = json.loads((tmp_path / "gpu-1.json").read_text())
    assert gpu["bom"] == {"nvidia_driver_version": "535.183.01"}  # templated by Ansible
    assert gpu["skip_checks"] == ["gpu.mig", "node.mounts"]
    assert gpu["juicefs_mounts"][0]["meta_url"] == "redis://10.0.3.10:6379/1"
    assert gpu["root_min_free_gib"] == 10.0  # cfcore's default, written nowhere else
    assert gpu["metrics_textfile_dir"] == "/var/lib/prometheus/node-exporter"  # the role's default
    cached = "".join(p.read_text() for p in (tmp_path / "facts").glob("*"))
    assert "validate_expected" not in cached and "10.0.3.10" not in cached  # in memory only
    inventory = load_inventory(tmp_path / "hosts.yml")
    for host in ("gpu-1", "ctl-1"):
        inputs = with_run_skips(_validation_inputs(inventory, host), skips)
        inputs["group_names"] = inventory.groups_of(host)
        inputs.setdefault("monitoring_textfile_dir", "/var/lib/prometheus/node-exporter")
        cli = json.loads(json.dumps(build_expected(host, inputs)))
        assert json.loads((tmp_path / f"{host}.json").read_text()) == cli, host


def test_a_malformed_value_names_the_host_and_the_variable(tmp_path):
    done = playbook(tmp_path, "-e", json.dumps({"validate_skip_checks": "gpu.mig"}))
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "variable validate_skip_checks must be a list of strings" in said and "fix:" in said
    assert "host gpu-1" in said
