"""plugins/filter/slurm.py as Ansible loads it, module slurm_node_probe on fake Slurm programs,
and role slurm's argument specs."""

from __future__ import annotations

import base64
import os
import stat

import module_runner
import pytest
import role_specs
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])


def flt(name):
    return filter_loader.get(f"clusterforge.cluster.{name}").j2_function


cluster = flt("cf_slurm_cluster")
members = flt("cf_slurm_partition_members")
restart_reasons = flt("cf_slurm_restart_reasons")
munge_key = flt("cf_slurm_munge_key")
munge_problem = flt("cf_slurm_munge_key_problem")
version_problems = flt("cf_slurm_version_problems")

HW = {
    "node_name": "w1",
    "CPUs": 2,
    "Boards": 1,
    "SocketsPerBoard": 1,
    "CoresPerSocket": 2,
    "ThreadsPerCore": 1,
    "RealMemory": 24105,
    "extra": {},
}
H100 = {"vendor": "nvidia", "accelerator_count": 8, "accelerator_models": ["NVIDIA H100 80GB HBM3"]}
GROUPS = {"slurm_controller": ["ctl"], "slurm_workers": ["w1", "w2"], "gpu_nvidia": ["w1", "w2"]}


def hostvars():
    return {
        "ctl": {"slurm__probe": {"hostname": "ctl", "hardware": None}, "slurm_node_address": "10.0.0.1"},
        "w1": {
            "slurm__probe": {"hardware": HW, "nvml_plugin": True, "nvml_library": False},
            "ansible_facts": {"clusterforge_accelerators": H100},
            "node_sku": "hgx-h100-8gpu",
        },
        "w2": {
            "slurm__probe": {
                "hardware": {**HW, "node_name": "w2"},
                "nvml_plugin": True,
                "nvml_library": True,
            },
            "ansible_facts": {"clusterforge_accelerators": H100},
        },
    }


def test_cluster_from_hostvars():
    parts = [{"name": "gpu", "nodes_group": "gpu_nvidia", "default": True}]
    result = cluster(hostvars(), ["w1", "w2"], GROUPS, parts, reserve_mib=2048, controllers=["ctl"])
    assert result["controllers"] == ["SlurmctldHost=ctl(10.0.0.1)"]
    assert result["nodes"][0] == (
        "NodeName=w1 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=22057 "
        "Gres=gpu:h100:8 State=UNKNOWN"
    )
    # NVML needs both the plugin and the library.
    assert result["gres_conf"]["w1"][0].endswith("AutoDetect=off Name=gpu Type=h100 File=/dev/nvidia[0-7]")
    assert "AutoDetect=nvml" in result["gres_conf"]["w2"][0]
    assert result["partitions"] == ["PartitionName=gpu Nodes=w1,w2 Default=YES MaxTime=INFINITE State=UP"]


def test_cluster_errors_name_the_fix():
    hv = hostvars()
    hv["w1"]["node_sku"] = "hgx-h100"
    with pytest.raises(AnsibleFilterError, match=r"w1: node_sku unknown SKU 'hgx-h100'.*fix:"):
        cluster(hv, ["w1", "w2"], GROUPS, [])
    with pytest.raises(AnsibleFilterError, match=r"partition cpu is empty.*\(fix: "):
        members([{"name": "cpu", "nodes_group": "cpu_nodes"}], ["w1"], GROUPS)


def test_restart_reasons_filter():
    assert restart_reasons(None, "ClusterName=a\n") == ["no previous slurm.conf"]
    assert (
        restart_reasons("ClusterName=a\nHealthCheckInterval=1\n", "ClusterName=a\nHealthCheckInterval=2\n")
        == []
    )


def test_munge_key_content_keeps_the_bytes():
    raw = bytes(range(256))
    text = munge_key(base64.b64encode(raw).decode())
    assert text.encode("utf-8", "surrogateescape") == raw
    assert munge_problem(base64.b64encode(raw).decode()) == ""
    with pytest.raises(AnsibleFilterError, match=r"decodes to 4 bytes.*vault_slurm_munge_key"):
        munge_key("dGVzdA==")


def test_version_problems_filter():
    assert version_problems({"slurmd": "22.05.8"}, "22.05.8") == []
    assert version_problems({"slurmd": None}, "22.05.8", True) == []
    with pytest.raises(AnsibleFilterError, match="slurm_version"):
        version_problems({"slurmd": "22.05.8"}, "latest")


# --- module slurm_node_probe ----------------------------------------------------------------

FAKE_SLURMD = """#!/bin/sh
case "$1" in
  -V) echo "slurm 22.05.8" ;;
  -C) printf '%s\\n' "$SLURMD_C_OUT" ;;
esac
"""


@pytest.fixture
def fake_bin(tmp_path):
    (tmp_path / "bin").mkdir()
    for name, text in {
        "slurmd": FAKE_SLURMD,
        "ldconfig": "#!/bin/sh\necho '\tlibnvidia-ml.so.1 (libc6,x86-64) => /x'\n",
    }.items():
        path = tmp_path / "bin" / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "gpu_nvml.so").write_text("")
    return tmp_path


def probe(fake_bin, out, **args):
    env = {**os.environ, "PATH": f"{fake_bin / 'bin'}:/usr/bin:/bin", "SLURMD_C_OUT": out}
    params = {
        "daemons": ["slurmd", "slurmctld"],
        "hardware": True,
        "plugin_dirs": [str(fake_bin / "plugins")],
        **args,
    }
    return module_runner.run_module("slurm_node_probe", params, env=env)


def test_probe_reads_versions_shape_and_nvml(fake_bin):
    result = probe(fake_bin, "NodeName=w1 CPUs=2 RealMemory=24105\nUpTime=0-01:00:00")
    assert not result.get("failed"), result
    assert result["changed"] is False
    assert result["versions"]["slurmd"] == "22.05.8"
    assert result["hardware"]["CPUs"] == 2 and result["hardware"]["RealMemory"] == 24105
    assert result["nvml_plugin"] is True and result["nvml_library"] is True


def test_probe_fails_loudly_on_other_output(fake_bin):
    result = probe(fake_bin, "slurmd: error: something else")
    assert result["failed"] and "slurmd -C" in result["msg"]


def test_probe_rejects_unknown_daemons(fake_bin):
    result = probe(fake_bin, "", daemons=["sshd"])
    assert result["failed"] and "sshd" in result["msg"]


# --- argument specs -------------------------------------------------------------------------

REQUIRED = {"slurm_cluster_name": "lab", "slurm_version": "22.05.8", "slurm_munge_key": "x" * 44}


def test_specs_accept_a_site_plan():
    parts = [{"name": "gpu", "nodes_group": "gpu_nvidia", "default": True, "max_time": "1-00:00:00"}]
    assert role_specs.validate("slurm", REQUIRED, slurm_partitions=parts) == []


@pytest.mark.parametrize(
    "values",
    [
        {"slurm_package_source": "spack"},
        {"slurm_cgroup_plugin": "cgroup/v3"},
        {"slurm_partitions": [{"nodes_group": "gpu_nvidia"}]},
    ],
)
def test_specs_refuse(values):
    assert role_specs.validate("slurm", REQUIRED, **values)


def test_specs_require_the_munge_key():
    assert any(
        "slurm_munge_key" in e
        for e in role_specs.validate("slurm", {"slurm_cluster_name": "a", "slurm_version": "22.05.8"})
    )
