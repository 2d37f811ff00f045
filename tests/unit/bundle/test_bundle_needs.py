"""What a bring-up needs (docs/design.md, "Air-gapped installs"): cfcore/os_facts.py and its filters,
the roles' tasks/bundle.yml, and playbooks/bundle_needs.yml, which mirrors playbooks/site.yml.

Static checks (YAML only): bundle_needs.yml applies each role that has a tasks/bundle.yml to the
same hosts, in the same order and under the same `when` as site.yml's import tree does; every role
whose tasks install a package, add a repository or download a file has a tasks/bundle.yml; a
bundle.yml uses only modules that run on the controller. Then the playbook itself, on a copy of
the example inventory: real needs of real hosts, and no node contacted.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import init_plugin_loader
from cfcore import os_facts as of
from cfcore.inputs import InputError
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
flt = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.bundle")

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOKS = ROOT / "playbooks"
ROLES = ROOT / "roles"
ENV_BIN = Path(sys.executable).parent
KINDS = ("os_package", "apt_repo", "yum_repo", "file", "wheel", "image")

# --------------------------------------------------------------------------- cf_os_facts ----

FACTS = {
    "debian 12": ("Debian", "Debian", "bookworm", "12", "12"),
    "ubuntu 22.04": ("Debian", "Ubuntu", "jammy", "22", "22.04"),
    "ubuntu 24.04": ("Debian", "Ubuntu", "noble", "24", "24.04"),
    "rhel 9.4": ("RedHat", "RedHat", "Plow", "9", "9.4"),
    "rhel 9": ("RedHat", "RedHat", "Plow", "9", "9"),
    "rocky 9.4": ("RedHat", "Rocky", "Blue Onyx", "9", "9.4"),
    "openeuler 22.03": ("RedHat", "openEuler", "", "22", "22.03"),
    "kylin v10": ("RedHat", "Kylin Linux Advanced Server", "", "V10", "V10"),
}


@pytest.mark.parametrize("plan", sorted(FACTS))
def test_os_facts_of_each_planned_os(plan):
    family, distribution, release, major, version = FACTS[plan]
    assert flt.cf_os_facts(plan) == {
        "os_family": family,
        "distribution": distribution,
        "distribution_release": release,
        "distribution_major_version": major,
        "distribution_version": version,
        "architecture": "x86_64",
        "kernel": "unknown",
        "system": "Linux",
    }


def test_os_facts_take_the_architecture_and_kernel_given():
    facts = flt.cf_os_facts("Ubuntu 22.04", arch="aarch64", kernel="5.15.0-119-generic")
    assert (facts["architecture"], facts["kernel"], facts["distribution"]) == (
        "aarch64",
        "5.15.0-119-generic",
        "Ubuntu",
    )
    assert flt.cf_os_facts("debian 12", kernel=None)["kernel"] == "unknown"
    assert flt.cf_os_facts("debian 12", kernel="")["kernel"] == "unknown"


@pytest.mark.parametrize(
    ("plan", "words"),
    [
        ("arch 2024", ["'arch'", "debian 12", "ubuntu 22.04", "rhel <version>", 'os_release: "debian 12"']),
        ("debian 14", ["Debian 14", "debian 12", "debian 13"]),
        ("ubuntu 23.10", ["Ubuntu 23.10", "ubuntu 24.04"]),
        ("debian", ["ID and VERSION_ID", "got 'debian'"]),
        (None, ["os_release is not set", 'os_release: "debian 12"']),
    ],
)
def test_an_unknown_os_is_refused_naming_the_value_and_the_supported_ones(plan, words):
    with pytest.raises(ValueError) as raised:
        of.os_facts(plan)
    assert isinstance(raised.value, InputError)
    for word in words:
        assert word in str(raised.value)
    with pytest.raises(AnsibleFilterError) as failed:
        flt.cf_os_facts(plan)
    assert str(raised.value) in str(failed.value)


def test_the_os_release_rule_is_cfcore_expected_s():
    """One parser of os_release: cfcore/expected.py's (node validation reads the same plan)."""
    source = (ROOT / "plugins" / "module_utils" / "cfcore" / "os_facts.py").read_text()
    assert "from .expected import _os_release" in source
    # The ID in any case, as node validation takes it.
    assert of.os_facts("Debian 12")["distribution_release"] == "bookworm"


def test_bundle_items_name_the_kernel_they_cannot_know():
    items = flt.cf_bundle_items(
        ["linux-headers-unknown", "dkms", "kernel-devel-unknown"], "os_package", "r", kernel="unknown"
    )
    assert items == [
        {
            "kind": "os_package",
            "name": "linux-headers-<kernel>",
            "role": "r",
            "unknown": of.UNKNOWN_KERNEL_WHY,
        },
        {"kind": "os_package", "name": "dkms", "role": "r"},
        {
            "kind": "os_package",
            "name": "kernel-devel-<kernel>",
            "role": "r",
            "unknown": of.UNKNOWN_KERNEL_WHY,
        },
    ]
    known = flt.cf_bundle_items(["linux-headers-6.1.0-18-amd64"], "os_package", "r", kernel="6.1.0-18-amd64")
    assert known == [{"kind": "os_package", "name": "linux-headers-6.1.0-18-amd64", "role": "r"}]
    assert flt.cf_bundle_items(
        ["numpy==1.26.4", ""], "wheel", "cann", index_url_var="cann_pip_index_url"
    ) == [
        {
            "kind": "wheel",
            "requirement": "numpy==1.26.4",
            "role": "cann",
            "index_url_var": "cann_pip_index_url",
        }
    ]
    assert flt.cf_bundle_items("r/x:1", "image", "v") == [{"kind": "image", "ref": "r/x:1", "role": "v"}]
    with pytest.raises(AnsibleFilterError, match="not one of"):
        flt.cf_bundle_items(["x"], "tarball", "r")


def test_mirror_files_are_fetched_under_the_url_with_their_sha256():
    files = [{"name": "a.run", "sha256": "AB" * 32, "path": "/c/a.run"}]
    assert flt.cf_bundle_mirror_files(files, "http://m/ascend/", "ascend_package_url", "cann") == [
        {
            "kind": "file",
            "url": "http://m/ascend/a.run",
            "url_var": "ascend_package_url",
            "sha256": "ab" * 32,
            "role": "cann",
        }
    ]


# ------------------------------------------------------------------ site.yml, read as YAML ----

ROLE_PREFIX = "clusterforge.cluster."
INCLUDE_ROLE = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")
TASK_LISTS = ("pre_tasks", "tasks", "post_tasks")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _role_name(name: str) -> str:
    return name[len(ROLE_PREFIX) :] if name.startswith(ROLE_PREFIX) else name


def _tasks(tasks: list | None):
    """Every task of a list, blocks opened."""
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _plays(playbook: Path) -> list[dict]:
    """The plays of a playbook with its imports opened, in order."""
    plays = []
    for entry in _load(playbook):
        if "ansible.builtin.import_playbook" in entry or "import_playbook" in entry:
            target = entry.get("ansible.builtin.import_playbook") or entry["import_playbook"]
            plays.extend(_plays(playbook.parent / target))
        else:
            plays.append(entry)
    return plays


def _applied(play: dict) -> list[tuple[str, str | None]]:
    """(role, when) of each role a play applies: its roles: list, then include_role/import_role tasks."""
    applied = []
    for entry in play.get("roles") or []:
        entry = {"role": entry} if isinstance(entry, str) else entry
        applied.append((_role_name(entry.get("role") or entry.get("name")), entry.get("when")))
    for key in TASK_LISTS:
        for task in _tasks(play.get(key)):
            for module in INCLUDE_ROLE:
                if module in task:
                    applied.append((_role_name(task[module]["name"]), task.get("when")))
    return applied


def _group_by_keys(play: dict) -> list[tuple[str, Any]]:
    return [
        (task["ansible.builtin.group_by"]["key"], task.get("when"))
        for key in TASK_LISTS
        for task in _tasks(play.get(key))
        if "ansible.builtin.group_by" in task
    ]


def has_bundle(role: str) -> bool:
    return (ROLES / role / "tasks" / "bundle.yml").is_file()


def site_pairs() -> list[tuple[str, str, Any]]:
    """(hosts, role, when) of site.yml's import tree for the roles with a tasks/bundle.yml, in order."""
    return [
        (play["hosts"], role, when)
        for play in _plays(PLAYBOOKS / "site.yml")
        for role, when in _applied(play)
        if has_bundle(role)
    ]


def bundle_pairs() -> list[tuple[str, str, Any]]:
    pairs = []
    for play in _load(PLAYBOOKS / "bundle_needs.yml"):
        for task in _tasks(play.get("tasks")):
            if "ansible.builtin.include_role" in task:
                include = task["ansible.builtin.include_role"]
                assert include.get("tasks_from") == "bundle", (
                    f"{task['name']}: include_role without tasks_from: bundle"
                )
                pairs.append((play["hosts"], _role_name(include["name"]), task.get("when")))
    return pairs


def test_the_site_tree_is_read():
    """The mirror check is only as good as this reading of site.yml: it sees the stages' roles."""
    roles = {role for _hosts, role, _when in site_pairs()}
    assert {
        "base",
        "rdma",
        "nvidia_driver",
        "ascend_driver",
        "ppu",
        "ceph",
        "juicefs",
        "slurm",
        "kubernetes",
    } <= roles
    assert ("cf_k8s_deploy", "kubernetes", None) in site_pairs()


def test_bundle_needs_mirrors_site_yml():
    """Each (hosts, role) of site.yml whose role has tasks/bundle.yml, in site.yml's order, with its when."""
    assert bundle_pairs() == site_pairs(), (
        "playbooks/bundle_needs.yml no longer mirrors playbooks/site.yml: apply each role that has a "
        "tasks/bundle.yml with the same hosts pattern, order and when as the stage playbooks do"
    )


def test_every_bundle_play_contacts_no_node():
    for play in _load(PLAYBOOKS / "bundle_needs.yml"):
        assert play.get("gather_facts") is False, play["name"]
        assert "become" not in play, play["name"]
        for task in _tasks(play.get("tasks")):
            assert "become" not in task and "delegate_to" not in task, task["name"]


def test_the_groups_the_mirrored_patterns_name_are_made_the_same_way():
    """cf_k8s_deploy, cf_grafana_deploy: made by group_by plays in site.yml, so made so here first."""
    site_groups = {}
    for play in _plays(PLAYBOOKS / "site.yml"):
        for key, when in _group_by_keys(play):
            site_groups.setdefault(key, (play["hosts"], when))
    made: dict[str, tuple] = {}
    for play in _load(PLAYBOOKS / "bundle_needs.yml"):
        for name in re.split(r"[:,&!]", re.sub(r"\[[^]]*\]", "", play["hosts"])):
            if name in site_groups and any(
                has_bundle(r) for _h, r, _w in bundle_pairs() if _h == play["hosts"]
            ):
                assert made.get(name) == site_groups[name], (
                    f"{play['name']}: group {name} is not made as site.yml does"
                )
        for key, when in _group_by_keys(play):
            made[key] = (play["hosts"], when)


# ------------------------------------------------------------- which roles need a bundle.yml ----

# Modules whose task installs a package, adds a repository or downloads a file.
INSTALLING = {
    "ansible.builtin.apt": ("name", "deb"),
    "ansible.builtin.dnf": ("name",),
    "ansible.builtin.yum": ("name",),
    "ansible.builtin.package": ("name",),
    "ansible.builtin.pip": ("name", "requirements"),
    "ansible.builtin.get_url": ("url",),
    "ansible.builtin.apt_repository": ("repo",),
    "ansible.builtin.yum_repository": ("baseurl",),
    "ansible.builtin.deb822_repository": ("uris",),
    # The collection's own: packages in one task (refresh + install), pinned packages, a repository.
    "clusterforge.cluster.os_packages": ("name",),
    "clusterforge.cluster.signed_repository": ("url",),
    "clusterforge.cluster.pinned_packages": ("wanted",),
}
# Roles whose tasks install something though no bring-up needs a bundle.yml of them; each with why.
NO_BUNDLE = {
    # Only `apt update` (available.yml); the packages of an upgrade come through the stack roles'
    # own tasks, whose bundle.yml files name them. Not applied by site.yml.
    "upgrade_node": "upgrades install through nvidia_driver, nvidia_fabricmanager, dcgm, ascend_driver, cann",
}


def installing_tasks(role: str) -> list[tuple[str, str]]:
    """(file, task name) of each task of the role (but bundle.yml) that installs or downloads."""
    found = []
    for path in sorted((ROLES / role / "tasks").glob("*.yml")):
        if path.name == "bundle.yml":
            continue
        for task in _tasks(_load(path) or []):
            for module, keys in INSTALLING.items():
                if isinstance(task.get(module), dict) and any(key in task[module] for key in keys):
                    found.append((path.name, task.get("name", module)))
    return found


def uses_installing_modules(role: str) -> bool:
    return any(
        module in task
        for path in (ROLES / role / "tasks").glob("*.yml")
        for task in _tasks(_load(path) or [])
        for module in INSTALLING
    )


ALL_ROLES = sorted(path.parent.parent.name for path in ROLES.glob("*/tasks/main.yml"))


@pytest.mark.parametrize("role", ALL_ROLES)
def test_a_role_that_installs_or_downloads_has_a_bundle_yml(role):
    found = installing_tasks(role)
    if role in NO_BUNDLE:
        assert not has_bundle(role), f"{role} has a bundle.yml but is allow-listed: drop it from NO_BUNDLE"
        assert uses_installing_modules(role), (
            f"{role} no longer uses a package module: drop it from NO_BUNDLE"
        )
        return
    if found:
        assert has_bundle(role), (
            f"role {role} installs or downloads ({', '.join(f'{f}: {n}' for f, n in found)}) but has no "
            "tasks/bundle.yml: add one (docs/design.md, 'Air-gapped installs') or allow-list it, with the why"
        )


def test_the_roles_without_a_bundle_yml_install_nothing():
    """hccn, gpudirect, node_expectation, node_healthcheck, scheduler_drain: pure configuration;
    perf runs benchmarks the stack roles installed (nccl-tests: role nccl, perftest: role rdma);
    backup and ops_timers run what is there (openssl, tar, the services' own tools, clusterforge);
    restore installs through roles slurm, juicefs_redis and juicefs, whose bundle.yml name it all."""
    without = {role for role in ALL_ROLES if not has_bundle(role)}
    assert without == {
        "backup",
        "gpudirect",
        "hccn",
        "node_expectation",
        "node_healthcheck",
        "ops_timers",
        "perf",
        "restore",
        "scheduler_drain",
        "upgrade_node",
    }


def test_every_bundle_yml_is_applied_by_the_playbook():
    applied = {role for _hosts, role, _when in bundle_pairs()}
    assert applied == {role for role in ALL_ROLES if has_bundle(role)}


def test_a_literal_package_list_of_a_task_is_in_the_bundle_yml():
    """A package list written in a task (not a role variable) has to be repeated in bundle.yml: kept equal."""
    for role in ALL_ROLES:
        if not has_bundle(role):
            continue
        bundle = (ROLES / role / "tasks" / "bundle.yml").read_text()
        for path in sorted((ROLES / role / "tasks").glob("*.yml")):
            for task in _tasks(_load(path) or []):
                for module in (
                    "ansible.builtin.apt",
                    "ansible.builtin.dnf",
                    "ansible.builtin.package",
                    "clusterforge.cluster.os_packages",
                ):
                    names = (
                        (task.get(module) or {}).get("name") if isinstance(task.get(module), dict) else None
                    )
                    for name in (
                        names if isinstance(names, list) else [names] if isinstance(names, str) else []
                    ):
                        if "{{" not in name:
                            assert f"'{name}'" in bundle, (
                                f"{role}/tasks/{path.name}: {name} is not in bundle.yml"
                            )


# ------------------------------------------------------------------ what a bundle.yml may do ----

BUNDLE_MODULES = {"ansible.builtin.include_vars", "ansible.builtin.set_fact"}
BUNDLE_KEYWORDS = {"name", "when", "vars", "block", "tags"}
BUNDLE_FILES = sorted(ROLES.glob("*/tasks/bundle.yml"))


@pytest.mark.parametrize("path", BUNDLE_FILES, ids=lambda path: path.parent.parent.name)
def test_a_bundle_yml_runs_nothing_on_the_node(path):
    role = path.parent.parent.name
    for task in _tasks(_load(path)):
        assert task.get("name"), f"{role}: a task without a name"
        modules = set(task) - BUNDLE_KEYWORDS
        if "block" in task:
            assert not modules, f"{role}: {task['name']}: {sorted(modules)}"
            continue
        assert len(modules) == 1 and modules <= BUNDLE_MODULES, (
            f"{role}: {task['name']} uses {sorted(modules)}: a bundle.yml only loads variables and sets "
            f"cf_bundle_needs ({sorted(BUNDLE_MODULES)}), so that it never contacts the node"
        )
        if "ansible.builtin.set_fact" in task:
            assert set(task["ansible.builtin.set_fact"]) == {"cf_bundle_needs"}, f"{role}: {task['name']}"
            assert "cf_bundle_needs | default([])" in task["ansible.builtin.set_fact"]["cf_bundle_needs"]


# ------------------------------------------------------------------- the playbook, run ----

SHA = {
    name: f"{i:x}" * 64
    for i, name in enumerate(["driver", "firmware", "toolkit", "kernels", "nnal", "runtime", "exporter"], 1)
}
ASCEND_FILES = {
    "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run": SHA["driver"],
    "Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run": SHA["firmware"],
    "Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run": SHA["toolkit"],
    "Ascend-cann-kernels-910b_8.2.RC1_linux-x86_64.run": SHA["kernels"],
    "Ascend-cann-nnal_8.2.RC1_linux-x86_64.run": SHA["nnal"],
    "Ascend-docker-runtime_6.0.0_linux-x86_64.run": SHA["runtime"],
    "Ascend-mindxdl-npu-exporter_6.0.0_linux-x86_64.zip": "sha256:" + SHA["exporter"].upper(),
    # Another version and architecture: never picked.
    "Ascend-cann-toolkit_8.5.0_linux-x86_64.run": "e" * 64,
    "Ascend-docker-runtime_6.0.0_linux-aarch64.run": "f" * 64,
}
JUICEFS_SHA = "ab" * 32
KERNEL = "6.1.0-18-amd64"


def run_needs(inventory: Path, tmp: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.json",
        "ANSIBLE_SHOW_CUSTOM_STATS": "true",
        "ANSIBLE_CACHE_PLUGIN": "memory",  # no fact cache of these stand-in hosts
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local"),
        "ANSIBLE_NOCOLOR": "1",
    }
    return subprocess.run(
        [str(ENV_BIN / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOKS / "bundle_needs.yml")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """bundle_needs.yml on the example inventory, with what a bring-up of it needs set too: the
    planned OS, the Ascend manifest, the JuiceFS pin, and one GPU host's kernel."""
    tmp = tmp_path_factory.mktemp("bundle")
    inventory = tmp / "example"
    shutil.copytree(ROOT / "inventories" / "example", inventory)
    extra = {
        "os_release": "debian 12",
        "juicefs_download_sha256": f"sha256:{JUICEFS_SHA}",
        "slurm_repo_key_sha256": "cd" * 32,
        "nvidia_cuda_repo_key_sha256": "ef" * 32,
    }
    (inventory / "group_vars" / "all" / "zz_bundle_test.yml").write_text(yaml.safe_dump(extra))
    npu = inventory / "group_vars" / "npu_ascend.yml"
    npu.write_text(npu.read_text() + "\n" + yaml.safe_dump({"ascend_packages": ASCEND_FILES}))
    host = inventory / "host_vars" / "gpu-r1-n02.yml"
    host.write_text(yaml.safe_dump({"cf_bundle_kernel": KERNEL}))
    done = run_needs(inventory, tmp)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report = json.loads(done.stdout)
    return report, report["global_custom_stats"]["cf_bundle_needs"]


def needs(per_host, host, kind=None, role=None):
    return [
        item
        for item in per_host[host]["needs"]
        if (kind is None or item["kind"] == kind) and (role is None or item["role"] == role)
    ]


def names(per_host, host, role=None):
    return [item["name"] for item in needs(per_host, host, "os_package", role)]


@pytest.mark.slow
def test_every_host_is_answered_and_none_contacted(example_run):
    report, per_host = example_run
    assert len(per_host) == 16 and set(per_host) == set(report["stats"])
    for host, stats in report["stats"].items():
        assert stats["unreachable"] == 0 and stats["failures"] == 0, host
    assert {entry["os_release"] for entry in per_host.values()} == {"debian 12"}


@pytest.mark.slow
def test_every_need_is_a_rendered_item_of_the_design_s_kinds(example_run):
    _report, per_host = example_run
    assert "{{" not in json.dumps(per_host) and "{%" not in json.dumps(per_host)
    for host, entry in per_host.items():
        for item in entry["needs"]:
            assert item["kind"] in KINDS and item["role"], (host, item)
            if item["kind"] in ("apt_repo", "yum_repo") and not item.get("unknown"):
                assert set(item) >= {"url", "url_var", "key_url"}, item
            if item["kind"] == "file":
                assert set(item) >= {"url", "url_var", "sha256"}, item
                assert re.fullmatch(r"([0-9a-f]{64})?", item["sha256"]), item


@pytest.mark.slow
def test_a_gpu_host_needs_the_bom_s_driver_branch_and_the_cuda_repository(example_run):
    _report, per_host = example_run
    # BOM: nvidia_driver_version 535.183.01, open modules: branch 535 names, pinned to the version.
    driver = names(per_host, "gpu-r1-n01", "nvidia_driver")
    assert "nvidia-open-535=535.183.01-*" in driver and "dkms" in driver
    assert names(per_host, "gpu-r1-n01", "nvidia_fabricmanager") == [
        "nvidia-fabricmanager-535=535.183.01-*",
        "libnvidia-nscq-535=535.183.01-*",
    ]
    assert names(per_host, "gpu-r1-n01", "cuda_toolkit") == ["cuda-toolkit-12-2"]
    assert "libnccl2=2.18.5-1+cuda12.2" in names(per_host, "gpu-r1-n01", "nccl")
    repos = needs(per_host, "gpu-r1-n01", "apt_repo", "nvidia_cuda_repo")
    assert repos == [
        {
            "kind": "apt_repo",
            "url": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/",
            "url_var": "nvidia_cuda_repo_base_url",
            "key_url": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub",
            "role": "nvidia_cuda_repo",
        }
    ]
    key = needs(per_host, "gpu-r1-n01", "file", "nvidia_cuda_repo")
    assert [(k["url"], k["sha256"]) for k in key] == [(repos[0]["key_url"], "ef" * 32)]
    assert any(
        i["url_var"] == "nvidia_container_toolkit_repo_url" for i in needs(per_host, "gpu-r1-n01", "apt_repo")
    )
    # Nothing of the NVIDIA stack where there is no NVIDIA GPU.
    for host in ("npu-r2-n01", "ctl-r3-n01", "ceph-r3-n01"):
        assert not [
            i for i in per_host[host]["needs"] if i["role"].startswith(("nvidia", "cuda", "nccl", "dcgm"))
        ]


@pytest.mark.slow
def test_the_running_kernel_s_headers_are_unknown_until_given(example_run):
    _report, per_host = example_run
    unknown = [i for i in needs(per_host, "gpu-r1-n01", "os_package", "nvidia_driver") if i.get("unknown")]
    assert unknown == [
        {
            "kind": "os_package",
            "name": "linux-headers-<kernel>",
            "role": "nvidia_driver",
            "unknown": of.UNKNOWN_KERNEL_WHY,
        }
    ]
    given = needs(per_host, "gpu-r1-n02", "os_package", "nvidia_driver")
    assert {"kind": "os_package", "name": f"linux-headers-{KERNEL}", "role": "nvidia_driver"} in given
    assert not [i for i in given if i.get("unknown")]


@pytest.mark.slow
def test_slurm_workers_need_slurmd_and_the_controller_slurmctld(example_run):
    _report, per_host = example_run
    # The example installs Slurm 24.05 from the site's repository (SchedMD's slurm-smd-* names).
    worker, controller = names(per_host, "gpu-r1-n03", "slurm"), names(per_host, "ctl-r3-n01", "slurm")
    assert "slurm-smd-slurmd" in worker and "slurm-smd-slurmctld" not in worker and "munge" in worker
    assert "slurm-smd-slurmctld" in controller and "slurm-smd-slurmd" not in controller
    assert not needs(per_host, "gpu-r1-n01", role="slurm")  # a Kubernetes worker
    repo = needs(per_host, "gpu-r1-n03", "apt_repo", "slurm")
    assert [(r["url"], r["url_var"]) for r in repo] == [
        ("https://repo.example.internal/slurm/24.05/debian", "slurm_repo_url")
    ]


@pytest.mark.slow
def test_a_juicefs_client_needs_the_pinned_release(example_run):
    _report, per_host = example_run
    for host in ("gpu-r1-n01", "npu-r2-n02"):
        assert needs(per_host, host, "file", "juicefs") == [
            {
                "kind": "file",
                "url": "https://mirror.example.com/juicefs/juicefs-1.4.2-linux-amd64.tar.gz",
                "url_var": "juicefs_download_url",
                "sha256": JUICEFS_SHA,
                "role": "juicefs",
            }
        ]
        assert "fuse3" in names(per_host, host, "juicefs")
    assert not needs(per_host, "ctl-r3-n01", role="juicefs")  # no juicefs_mounts there
    assert names(per_host, "jfs-r3-n01", "juicefs_redis") == ["redis-server", "redis-tools"]


@pytest.mark.slow
def test_an_ascend_host_needs_its_manifest_files_and_cann_s_wheels(example_run):
    _report, per_host = example_run
    base = "http://mirror.example.internal/ascend/"
    files = {
        item["url"].removeprefix(base): (item["role"], item["sha256"], item["url_var"])
        for item in needs(per_host, "npu-r2-n01", "file")
        if item["url"].startswith(base)
    }
    assert files == {
        "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run": (
            "ascend_driver",
            SHA["driver"],
            "ascend_package_url",
        ),
        "Ascend-hdk-910b-npu-firmware_7.7.0.6.236.run": (
            "ascend_driver",
            SHA["firmware"],
            "ascend_package_url",
        ),
        "Ascend-cann-toolkit_8.2.RC1_linux-x86_64.run": ("cann", SHA["toolkit"], "ascend_package_url"),
        "Ascend-cann-kernels-910b_8.2.RC1_linux-x86_64.run": ("cann", SHA["kernels"], "ascend_package_url"),
        "Ascend-cann-nnal_8.2.RC1_linux-x86_64.run": ("cann", SHA["nnal"], "ascend_package_url"),
        "Ascend-docker-runtime_6.0.0_linux-x86_64.run": (
            "ascend_runtime",
            SHA["runtime"],
            "ascend_package_url",
        ),
        "Ascend-mindxdl-npu-exporter_6.0.0_linux-x86_64.zip": (
            "ascend_runtime",
            SHA["exporter"],
            "ascend_package_url",
        ),
    }
    wheels = needs(per_host, "npu-r2-n01", "wheel", "cann")
    assert {
        "kind": "wheel",
        "requirement": "numpy==1.26.4",
        "index_url_var": "cann_pip_index_url",
        "role": "cann",
    } in wheels
    assert len(wheels) == 12
    assert {"python3-venv", "python3-pip"} <= set(names(per_host, "npu-r2-n01", "cann"))
    assert "unzip" in names(per_host, "npu-r2-n01", "ascend_runtime")


@pytest.mark.slow
def test_storage_kubernetes_and_monitoring_needs(example_run):
    _report, per_host = example_run
    assert {"ceph-mon", "ceph-mgr", "ceph-osd", "ceph-common", "lvm2"} <= set(
        names(per_host, "ceph-r3-n01", "ceph")
    )
    assert {"ceph-mds", "radosgw"} <= set(names(per_host, "ceph-r3-n03", "ceph"))
    assert "ceph-mon" not in names(per_host, "ceph-r3-n04", "ceph")
    assert set(names(per_host, "gpu-r1-n01", "ceph_client")) == {"ceph-common", "ceph-fuse", "fuse3"}
    images = {item["ref"] for item in needs(per_host, "ctl-r3-n01", "image") if not item.get("unknown")}
    assert {
        "registry.example.internal:5000/volcanosh/vc-scheduler:v1.10.0",
        "registry.example.internal:5000/nvidia/k8s-device-plugin:v0.17.0",
        "registry.example.internal:5000/ascend-k8sdeviceplugin:v6.0.0",
        "registry.example.internal:5000/kube-apiserver:v1.30.6",
        "registry.example.internal:5000/pause:3.9",
    } <= images
    assert not needs(per_host, "ctl-r3-n02", role="volcano")  # only the first control-plane node
    binaries = {
        item["url"].rsplit("/", 1)[1]: item["sha256"]
        for item in needs(per_host, "gpu-r1-n01", "file", "kubernetes")
    }
    assert binaries["kubelet"] == "9d5585448bc34d37f70171c282febaa10d32687bfee4f8e4467c1bf149674d50"
    assert names(per_host, "ctl-r3-n03", "grafana") == ["grafana=11.2.0"]
    assert set(names(per_host, "ctl-r3-n03", "prometheus")) == {"prometheus", "prometheus-alertmanager"}
    assert "datacenter-gpu-manager-exporter=4.1.1-*" in names(per_host, "gpu-r1-n01", "exporters")
    assert names(per_host, "jfs-r3-n02", "exporters") == ["prometheus-node-exporter"]


PPU_SDK = "PPU_SDK_2.1.1_linux-x86_64.run"
SMALL = {
    "all": {
        "vars": {
            "nvidia_driver_version": "570.133.20",
            "cuda_version": "12.8",
            "nccl_version": "2.26.2",
            "dcgm_version": "4.2.3",
            "dcgm_exporter_version": "4.1.1",
            "ppu_sdk_version": "2.1.1",
        },
        "hosts": {
            "n1": {"ansible_host": "192.0.2.1", "os_release": "ubuntu 22.04"},
            "n2": {"ansible_host": "192.0.2.2"},
        },
        "children": {
            "gpu_nvidia": {
                "hosts": {
                    "r1": {
                        "ansible_host": "192.0.2.3",
                        "os_release": "rhel 9.4",
                        "node_sku": "hgx-h100-8gpu",
                        "rdma_install_method": "doca",
                        "rdma_doca_repo_url": "http://mirror.example.internal/doca/2.9.1/rhel9/x86_64/",
                        "rdma_doca_repo_key_url": "http://mirror.example.internal/doca/GPG-KEY-Mellanox.pub",
                        "rdma_doca_repo_key_sha256": "sha256:" + "12" * 32,
                        "nvidia_driver_install_method": "runfile",
                        "nvidia_driver_runfile_url": "http://mirror.example.internal/NVIDIA-Linux-x86_64-570.133.20.run",
                        "nvidia_driver_runfile_sha256": "34" * 32,
                    }
                }
            },
            "npu_ppu": {
                "hosts": {
                    "p1": {
                        "ansible_host": "192.0.2.4",
                        "os_release": "ubuntu 24.04",
                        "node_sku": "alibaba-ppu-zw810e-16",
                        "ppu_package_url": "http://mirror.example.internal/ppu",
                        "ppu_packages": {PPU_SDK: "56" * 32},
                        "cf_bundle_kernel": "6.8.0-45-generic",
                    }
                }
            },
        },
    }
}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A few hosts of other OSes and install methods, and one (n2) without os_release."""
    tmp = tmp_path_factory.mktemp("bundle-small")
    inventory = tmp / "hosts.yml"
    inventory.write_text(yaml.safe_dump(SMALL))
    done = run_needs(inventory, tmp)
    assert done.returncode != 0, "n2 plans no OS: the run must fail"
    report = json.loads(done.stdout)
    return report, report["global_custom_stats"]["cf_bundle_needs"]


@pytest.mark.slow
def test_a_host_without_os_release_is_refused_by_name(small_run):
    report, per_host = small_run
    assert report["stats"]["n2"]["failures"] == 1
    for host, stats in report["stats"].items():
        assert stats["unreachable"] == 0, host
        assert stats["failures"] == (1 if host == "n2" else 0), host
    messages = [
        result.get("msg", "")
        for play in report["plays"]
        for task in play["tasks"]
        for host, result in task["hosts"].items()
        if host == "n2" and result.get("failed")
    ]
    assert any("n2 has no os_release" in m and 'os_release: "debian 12"' in m for m in messages), messages
    assert set(per_host) == {"n1", "r1", "p1"}
    assert per_host["n1"]["os_release"] == "ubuntu 22.04"
    assert "iproute2" in names(per_host, "n1", "base")


@pytest.mark.slow
def test_a_rhel_gpu_host_needs_the_rhel_names_and_repositories(small_run):
    _report, per_host = small_run
    cuda = needs(per_host, "r1", "yum_repo", "nvidia_cuda_repo")
    assert [(r["url"], r["key_url"]) for r in cuda] == [
        (
            "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/",
            "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/D42D0685.pub",
        )
    ]
    doca = needs(per_host, "r1", role="rdma")
    assert {"kind": "os_package", "name": "doca-ofed", "role": "rdma"} in doca
    assert {
        "kind": "yum_repo",
        "url": "http://mirror.example.internal/doca/2.9.1/rhel9/x86_64/",
        "url_var": "rdma_doca_repo_url",
        "key_url": "http://mirror.example.internal/doca/GPG-KEY-Mellanox.pub",
        "role": "rdma",
    } in doca
    assert {
        "kind": "file",
        "url": "http://mirror.example.internal/doca/GPG-KEY-Mellanox.pub",
        "url_var": "rdma_doca_repo_key_url",
        "sha256": "12" * 32,
        "role": "rdma",
    } in doca
    driver = needs(per_host, "r1", role="nvidia_driver")
    assert {i["name"] for i in driver if i.get("unknown")} == {
        "kernel-devel-<kernel>",
        "kernel-headers-<kernel>",
    }
    assert {"gcc", "dkms", "libglvnd-devel"} <= {i["name"] for i in driver if i["kind"] == "os_package"}
    assert [(i["url"], i["sha256"]) for i in driver if i["kind"] == "file"] == [
        ("http://mirror.example.internal/NVIDIA-Linux-x86_64-570.133.20.run", "34" * 32)
    ]
    assert "python3-dnf-plugin-versionlock" in names(per_host, "r1", "dcgm")
    assert "datacenter-gpu-manager-4-core-4.2.3-*" in names(per_host, "r1", "dcgm")
    # RHEL's name before branch 580, at the driver's version.
    assert names(per_host, "r1", "nvidia_fabricmanager") == [
        "nvidia-fabric-manager-570.133.20",
        "libnvidia-nscq-570.133.20",
    ]


@pytest.mark.slow
def test_a_ppu_host_needs_the_sdk_of_its_manifest(small_run):
    _report, per_host = small_run
    assert needs(per_host, "p1", "file", "ppu") == [
        {
            "kind": "file",
            "url": f"http://mirror.example.internal/ppu/{PPU_SDK}",
            "url_var": "ppu_package_url",
            "sha256": "56" * 32,
            "role": "ppu",
        }
    ]
    assert names(per_host, "p1", "ppu") == ["pciutils", "dkms", "linux-headers-6.8.0-45-generic"]
