"""Action role_arguments: a play that runs several roles checks their argument specs in one
task before the first role, and imports each role with rolespec_validate: false. Its list is
the play's imports, and on the example inventory it passes where Ansible's own per-role checks
pass (the roles' defaults visible, their templates resolved) and fails on a bad variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
ACTION = "clusterforge.cluster.role_arguments"
IMPORT = "ansible.builtin.import_role"
# One host of each kind of the example inventory (inventories/example).
HOSTS = "gpu-r1-n01,npu-r2-n01,ctl-r3-n01,ceph-r3-n01,jfs-r3-n01"
# A group made by an earlier play of the same playbook, and what it holds in the example.
MADE_EARLIER = {"cf_k8s_deploy": "k8s_control_plane:k8s_workers"}


def plays_with_the_check():
    for playbook in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(playbook.read_text()) or []:
            checks = [t for t in play.get("pre_tasks") or [] if ACTION in t]
            if checks:
                yield playbook.name, play, checks


def imports_of(play) -> list[str]:
    return [t[IMPORT]["name"].split(".")[-1] for t in play.get("tasks") or [] if IMPORT in t]


def test_each_check_names_its_plays_imports_and_they_skip_their_own():
    found = list(plays_with_the_check())
    assert {name for name, _, _ in found} >= {"fabric.yml", "nvidia.yml", "ascend.yml", "storage.yml"}
    for name, play, checks in found:
        assert len(checks) == 1 and "roles" not in play, (name, play["name"])
        assert checks[0][ACTION]["roles"] == imports_of(play), (name, play["name"])
        assert all(t[IMPORT].get("rolespec_validate") is False for t in play["tasks"] if IMPORT in t)


def probe(tmp_path, *extra):
    """The plays' checks on the example inventory: each play's hosts, facts and imports, but
    every imported role skipped (`when: false`), so nothing runs on this machine."""
    plays = []
    for _, play, checks in plays_with_the_check():
        imports = [{**task, "when": False} for task in play["tasks"] if IMPORT in task]
        plays.append(
            {
                "name": play["name"],
                "hosts": MADE_EARLIER.get(play["hosts"], play["hosts"]),
                "gather_facts": True,
                "gather_subset": ["min"],
                "pre_tasks": checks,
                "tasks": imports,
            }
        )
    (tmp_path / "probe.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    inventory = ROOT / "inventories" / "example"
    sources = [*inventory.rglob("*.yml"), *ROOT.glob("roles/*/defaults/main.yml")]
    vault = sorted({word for path in sources for word in _vault_names(path.read_text())})
    local = {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "ansible_become": False,
    }
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
        # This machine's facts under the example's host names: never into the fact cache.
        "ANSIBLE_CACHE_PLUGIN": "memory",
    }
    extra_vars = json.dumps({**local, **dict.fromkeys(vault, "unset")})
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "-l", HOSTS,
            str(tmp_path / "probe.yml"), "-e", extra_vars, *extra]  # fmt: skip
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)


def _vault_names(text: str) -> set[str]:
    """The vault_* variables the example and the roles' defaults refer to (a site's vault file)."""
    import re

    return set(re.findall(r"\bvault_[a-z0-9_]+", text))


def test_the_example_inventory_passes_and_a_bad_variable_fails_naming_the_role(tmp_path):
    done = probe(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    bad = probe(tmp_path, "-e", json.dumps({"rdma_install_method": "ofed-please"}))
    assert bad.returncode == 2
    assert "role rdma:" in bad.stdout and "rdma_install_method" in bad.stdout
