"""cfcore/slurm_conf.py: slurmd -C, versions, memory, GRES, partitions, the cluster, munge, restarts."""

from __future__ import annotations

import base64

import pytest
from cfcore import slurm_conf as sc
from cfcore.catalog import load_catalog
from cfcore.inputs import InputError

# What slurmd -C printed on a lab worker (Debian 12, slurm-wlm 22.05.8).
SLURMD_C = (
    "NodeName=lab-gpu-01 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 "
    "RealMemory=24105\n"
    "UpTime=0-10:58:49\n"
)
HGX = (
    "NodeName=gpu-r1-n03 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 "
    "RealMemory=2063731\nUpTime=12-01:02:03\n"
)
CATALOG = load_catalog()
H100_FACTS = {"vendor": "nvidia", "accelerator_count": 8, "accelerator_models": ["NVIDIA H100 80GB HBM3"]}
A2_FACTS = {"vendor": "huawei", "accelerator_count": 8, "accelerator_models": ["910B3"], "npus": [{}] * 8}
A3_FACTS = {
    "vendor": "huawei",
    "accelerator_count": 8,
    "accelerator_models": ["Ascend910"],
    "npus": [{}] * 16,
}
CPU_FACTS = {"vendor": None, "accelerator_count": 0, "accelerator_models": []}


# --- slurmd -C -------------------------------------------------------------------------------


def test_parse_real_output():
    hw = sc.parse_slurmd_c(SLURMD_C)
    assert hw == {
        "node_name": "lab-gpu-01",
        "CPUs": 2,
        "Boards": 1,
        "SocketsPerBoard": 1,
        "CoresPerSocket": 2,
        "ThreadsPerCore": 1,
        "RealMemory": 24105,
        "extra": {},
    }


def test_parse_tolerates_spacing_case_order_and_unknown_keys():
    text = (
        "\n  RealMemory=1000   nodename=w7\tcpus=4  Gres=gpu:h100:8 Features=x  Boards=1\n\n"
        "UpTime=1-00:00:00   \n"
    )
    hw = sc.parse_slurmd_c(text)
    assert hw["node_name"] == "w7" and hw["CPUs"] == 4 and hw["RealMemory"] == 1000 and hw["Boards"] == 1
    assert hw["extra"] == {"Gres": "gpu:h100:8", "Features": "x"}
    assert "SocketsPerBoard" not in hw


@pytest.mark.parametrize(
    "text",
    [
        "",
        "slurmd: error: Unable to determine this slurmd's NodeName\n",
        "sh: 1: slurmd: not found\n",
        "Usage: slurmd [OPTIONS]\n  -C  Print node configuration",
        "NodeName=a CPUs=2 RealMemory=100\nNodeName=b CPUs=2 RealMemory=100\n",
        "NodeName=a CPUs=two RealMemory=100\n",
        "NodeName=a CPUs=2\n",
        "NodeName=a CPUs=2 RealMemory=100 garbage\n",
        "NodeName=bad/name CPUs=2 RealMemory=100\n",
    ],
)
def test_parse_rejects_what_is_not_slurmd_c(text):
    with pytest.raises(InputError, match="slurmd -C"):
        sc.parse_slurmd_c(text)


# --- versions --------------------------------------------------------------------------------


def test_parse_version():
    assert sc.parse_version("slurm 22.05.8\n") == "22.05.8"
    assert sc.parse_version("slurm-wlm 24.05.4\n") == "24.05.4"
    for bad in ("", "slurmd: command not found", "slurm 22.05\nmore"):
        with pytest.raises(InputError):
            sc.parse_version(bad)


def test_version_matches_exact_and_prefix():
    assert sc.version_matches("22.05.8", "22.05.8")
    assert sc.version_matches("22.05", "22.05.11")
    assert not sc.version_matches("24.05.4", "22.05.8")
    assert not sc.version_matches("22.05.8", "22.05.80")
    with pytest.raises(InputError, match="slurm_version"):
        sc.version_matches("latest", "22.05.8")


def test_version_problems_name_the_daemons():
    versions = {"slurmctld": "22.05.8", "slurmd": "23.02.1", "slurmdbd": None}
    assert sc.version_problems(versions, "22.05.8") == ["slurmd 23.02.1", "slurmdbd (not installed)"]
    assert sc.version_problems(versions, "22.05.8", allow_missing=True) == ["slurmd 23.02.1"]


# --- memory ----------------------------------------------------------------------------------


def test_memory_reserve_and_floor():
    assert sc.real_memory(24105, 2048) == 22057
    assert sc.real_memory(2063731) == 2063731 - 2048
    assert sc.real_memory(3000, 2048) == 1500  # floored at half
    assert sc.real_memory(1000, 0) == 1000
    with pytest.raises(InputError, match="slurm_memory_reserve_mib"):
        sc.real_memory(1000, -1)


# --- GRES ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vendor", "model", "chips", "expected"),
    [
        ("nvidia", "H100", None, "h100"),
        ("nvidia", "NVIDIA H100 80GB HBM3", None, "h100"),
        ("nvidia", "NVIDIA H200", None, "h200"),
        ("nvidia", "B200", None, "b200"),
        ("nvidia", "NVIDIA A100-SXM4-80GB", None, "a100"),
        ("huawei", "910B", None, "910b"),
        ("huawei", "910B3", None, "910b"),
        ("huawei", "Ascend910", 2, "910c"),
        ("huawei", "910C", None, "910c"),
        ("huawei", "910", None, "910"),
        ("huawei", "910ProB", None, "910"),
    ],
)
def test_gres_type(vendor, model, chips, expected):
    assert sc.gres_type(vendor, model, chips) == expected


def test_gres_type_refuses_other_vendors():
    with pytest.raises(InputError, match="alibaba"):
        sc.gres_type("alibaba", "PPU-ZW810E")


def test_node_gres_nvidia_from_sku():
    gres = sc.node_gres(H100_FACTS, CATALOG["hgx-h100-8gpu"])
    assert gres == {"name": "gpu", "type": "h100", "count": 8, "files": "/dev/nvidia[0-7]"}


def test_node_gres_nvidia_from_the_model_without_sku():
    facts = {"vendor": "nvidia", "accelerator_count": 1, "accelerator_models": ["NVIDIA H200"]}
    assert sc.node_gres(facts) == {"name": "gpu", "type": "h200", "count": 1, "files": "/dev/nvidia0"}


def test_node_gres_ascend_a2_and_a3_count_device_files():
    a2 = sc.node_gres(A2_FACTS, CATALOG["atlas-800t-a2"])
    assert a2 == {"name": "npu", "type": "910b", "count": 8, "files": "/dev/davinci[0-7]"}
    a3 = sc.node_gres(A3_FACTS, CATALOG["atlas-800t-a3"])
    assert a3 == {"name": "npu", "type": "910c", "count": 16, "files": "/dev/davinci[0-15]"}


def test_node_gres_cpu_only_is_none():
    assert sc.node_gres(CPU_FACTS, CATALOG["cpu-generic"]) is None
    assert sc.node_gres({}) is None


def test_node_gres_needs_a_model_or_a_sku():
    with pytest.raises(InputError, match="node_sku"):
        sc.node_gres({"vendor": "nvidia", "accelerator_count": 8, "accelerator_models": []})


def test_node_line_nvidia():
    line = sc.node_line("lab-gpu-01", sc.parse_slurmd_c(SLURMD_C), sc.node_gres(H100_FACTS))
    assert line == (
        "NodeName=lab-gpu-01 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 "
        "RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN"
    )


def test_node_line_cpu_only_with_address_and_other_hostname():
    line = sc.node_line("n03", sc.parse_slurmd_c(HGX), None, reserve_mib=0, address="10.10.1.13")
    assert line == (
        "NodeName=n03 NodeHostname=gpu-r1-n03 NodeAddr=10.10.1.13 CPUs=224 Boards=1 SocketsPerBoard=2 "
        "CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063731 State=UNKNOWN"
    )


def test_gres_conf_lines():
    gpu, npu = sc.node_gres(H100_FACTS), sc.node_gres(A2_FACTS, CATALOG["atlas-800t-a2"])
    assert sc.gres_conf_lines("w1", gpu) == [
        "NodeName=w1 AutoDetect=off Name=gpu Type=h100 File=/dev/nvidia[0-7]"
    ]
    assert sc.gres_conf_lines("w1", gpu, nvml=True) == [
        "NodeName=w1 AutoDetect=nvml Name=gpu Type=h100 Count=8"
    ]
    # NVML detects NVIDIA GPUs only: an Ascend node keeps its device files.
    assert sc.gres_conf_lines("n1", npu, nvml=True) == [
        "NodeName=n1 AutoDetect=off Name=npu Type=910b File=/dev/davinci[0-7]"
    ]
    assert sc.gres_conf_lines("c1", None) == []


# --- partitions ------------------------------------------------------------------------------

GROUPS = {
    "gpu_nvidia": ["g1", "g2", "g3"],
    "npu_ascend": ["n1"],
    "k8s_workers": ["g1"],
    "slurm_workers": ["g2", "g3", "n1"],
}
WORKERS = GROUPS["slurm_workers"]


def test_partition_members_are_slurm_workers_in_the_group():
    parts = [
        {"name": "h100", "nodes_group": "gpu_nvidia", "default": True},
        {"name": "npu", "nodes_group": "npu_ascend"},
    ]
    members = sc.partition_members(parts, WORKERS, GROUPS)
    assert members == {"h100": ["g2", "g3"], "npu": ["n1"]}
    lines = sc.partition_lines(parts, members, {"g2": "g2", "g3": "g3", "n1": "n1"})
    assert lines == [
        "PartitionName=h100 Nodes=g2,g3 Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=npu Nodes=n1 Default=NO MaxTime=INFINITE State=UP",
    ]


def test_empty_partition_fails_with_its_name():
    parts = [{"name": "k8sonly", "nodes_group": "k8s_workers"}]
    with pytest.raises(InputError, match=r"slurm partition k8sonly is empty.*k8s_workers"):
        sc.partition_members(parts, WORKERS, GROUPS)
    with pytest.raises(InputError, match="partition ghost is empty"):
        sc.partition_members([{"name": "ghost", "nodes_group": "no_such_group"}], WORKERS, GROUPS)


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ({"name": "x"}, "must be a list"),
        ([{"name": "a b", "nodes_group": "gpu_nvidia"}], "not a partition name"),
        ([{"name": "a", "nodes_group": "gpu_nvidia"}, {"name": "a", "nodes_group": "gpu_nvidia"}], "twice"),
        ([{"name": "a"}], "nodes_group is missing"),
        ([{"name": "a", "nodes_group": "gpu_nvidia", "max_time": "3 days"}], "not a Slurm time"),
        ([{"name": "a", "nodes_group": "gpu_nvidia", "maxtime": "1"}], "unknown keys"),
        (
            [
                {"name": "a", "nodes_group": "gpu_nvidia", "default": True},
                {"name": "b", "nodes_group": "npu_ascend", "default": True},
            ],
            "a, b are all default",
        ),
    ],
)
def test_bad_partitions_are_refused(parts, message):
    with pytest.raises(InputError, match=message):
        sc.partition_members(parts, WORKERS, GROUPS)


@pytest.mark.parametrize("max_time", ["INFINITE", "60", "1:00:00", "3-00:00:00", "1-12"])
def test_slurm_times_accepted(max_time):
    parts = [{"name": "a", "nodes_group": "gpu_nvidia", "max_time": max_time}]
    assert sc.partition_members(parts, WORKERS, GROUPS) == {"a": ["g2", "g3"]}


# --- the cluster -----------------------------------------------------------------------------


def worker(host, text=SLURMD_C, facts=H100_FACTS, sku="hgx-h100-8gpu", **extra):
    probe = None if text is None else sc.parse_slurmd_c(text.replace("lab-gpu-01", host))
    return {"host": host, "probe": probe, "accelerators": facts, "sku": CATALOG.get(sku), **extra}


def test_build_cluster_mixed_fleet():
    workers = [worker("g2"), worker("g3", nvml=True), worker("n1", facts=A2_FACTS, sku="atlas-800t-a2")]
    parts = [
        {"name": "h100", "nodes_group": "gpu_nvidia", "default": True},
        {"name": "npu", "nodes_group": "npu_ascend"},
    ]
    controllers = [{"host": "ctl-1.example", "name": "ctl-1", "address": "10.0.0.1"}, {"host": "ctl-2"}]
    cluster = sc.build_cluster(workers, parts, GROUPS, controllers=controllers)
    assert cluster["controllers"] == ["SlurmctldHost=ctl-1(10.0.0.1)", "SlurmctldHost=ctl-2"]
    assert [line.split()[0] for line in cluster["nodes"]] == ["NodeName=g2", "NodeName=g3", "NodeName=n1"]
    assert "Gres=npu:910b:8" in cluster["nodes"][2]
    assert cluster["gres_types"] == ["gpu", "npu"]
    assert cluster["gres_conf"]["g3"] == ["NodeName=g3 AutoDetect=nvml Name=gpu Type=h100 Count=8"]
    assert cluster["gres_conf"]["n1"][0].endswith("File=/dev/davinci[0-7]")
    assert cluster["partitions"][0] == "PartitionName=h100 Nodes=g2,g3 Default=YES MaxTime=INFINITE State=UP"
    assert cluster["kept"] == []


def test_build_cluster_cpu_only_has_no_gres_types():
    cluster = sc.build_cluster([worker("g2", facts=CPU_FACTS, sku="cpu-generic")], [], GROUPS)
    assert cluster["gres_types"] == [] and "Gres=" not in cluster["nodes"][0]
    assert cluster["gres_conf"] == {"g2": []} and cluster["partitions"] == []


def test_build_cluster_uses_slurm_node_name():
    cluster = sc.build_cluster([worker("g2.dc1.example", name="g2")], [], GROUPS)
    assert cluster["names"] == {"g2.dc1.example": "g2"}
    assert cluster["nodes"][0].startswith("NodeName=g2 NodeHostname=g2.dc1.example ")


def test_unprobed_worker_keeps_its_current_line():
    previous = sc.build_cluster([worker("g2"), worker("g3")], [], GROUPS)
    conf = "ClusterName=x\n" + "\n".join(previous["nodes"]) + "\n"
    cluster = sc.build_cluster([worker("g2"), worker("g3", text=None)], [], GROUPS, previous_conf=conf)
    assert cluster["nodes"] == previous["nodes"]
    assert cluster["kept"] == ["g3"] and cluster["gres_types"] == ["gpu"]


def test_unprobed_worker_without_a_line_fails_naming_it():
    with pytest.raises(InputError, match="slurm_workers g3 were not probed"):
        sc.build_cluster([worker("g2"), worker("g3", text=None)], [], GROUPS, previous_conf="ClusterName=x\n")


def test_duplicate_node_names_fail():
    with pytest.raises(InputError, match="used by another worker"):
        sc.build_cluster([worker("a.x", name="a"), worker("a.y", name="a")], [], GROUPS)


@pytest.mark.parametrize("count", [0, 3])
def test_controller_count(count):
    with pytest.raises(InputError, match="slurm_controller has"):
        sc.controller_lines([{"host": f"c{i}"} for i in range(count)])


# --- munge key -------------------------------------------------------------------------------


def test_munge_key_decodes_to_its_bytes():
    raw = bytes(range(256)) * 4
    text = base64.b64encode(raw).decode()
    assert sc.munge_key_bytes(text) == raw
    assert sc.munge_key_bytes(text[:40] + "\n  " + text[40:] + "\n") == raw  # wrapped as base64 -w76 does
    assert sc.munge_key_problem(text) == ""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "decodes to 0 bytes"),
        (None, "decodes to 0 bytes"),
        (base64.b64encode(b"x" * 31).decode(), "decodes to 31 bytes"),
        ("not base64 at all!", "not base64"),
    ],
)
def test_munge_key_refused_with_fix(value, message):
    with pytest.raises(InputError, match=message):
        sc.munge_key_bytes(value)
    problem = sc.munge_key_problem(value)
    assert message in problem and "fix:" in problem


# --- restart or reconfigure ------------------------------------------------------------------

BASE = """# header
ClusterName=lab
SlurmctldHost=ctl
SlurmctldPort=6817
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
HealthCheckInterval=300
NodeName=w1 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN
NodeName=w2 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN
PartitionName=gpu Nodes=w1,w2 Default=YES MaxTime=INFINITE State=UP
"""


def edit(old, new, text=BASE):
    assert old in text
    return text.replace(old, new)


def test_same_file_needs_nothing():
    assert sc.restart_reasons(BASE, BASE) == [] and not sc.needs_restart(BASE, BASE)


def test_first_run_restarts():
    assert sc.restart_reasons("", BASE) == ["no previous slurm.conf"]
    assert sc.needs_restart(None, BASE)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("HealthCheckInterval=300", "HealthCheckInterval=10"),
        ("MaxTime=INFINITE", "MaxTime=1-00:00:00"),
        ("Nodes=w1,w2 Default=YES", "Nodes=w1 Default=YES"),
        ("# header", "# another comment"),
        ("HealthCheckInterval=300", "HealthCheckInterval=300\nDefMemPerCPU=1024"),
        ("ClusterName=lab", "clustername=lab"),  # keys are case-insensitive
        ("NodeName=w1 CPUs=2", "NodeName=w1   CPUs=2"),  # spacing
    ],
)
def test_edits_that_reconfigure(old, new):
    assert sc.restart_reasons(BASE, edit(old, new)) == []


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN\nNodeName=w2",
            "RealMemory=20000 Gres=gpu:h100:8 State=UNKNOWN\nNodeName=w2",
            "NodeName w1",
        ),
        ("NodeName=w2 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN\n", "", "NodeName w2"),
        ("State=UP\n", "State=UP\nNodeName=w3 CPUs=2 RealMemory=1 State=UNKNOWN\n", "NodeName w3"),
        ("SlurmctldHost=ctl", "SlurmctldHost=ctl\nSlurmctldHost=ctl2", "slurmctldhost"),
        ("SlurmctldPort=6817", "SlurmctldPort=7817", "slurmctldport"),
        ("ProctrackType=proctrack/cgroup", "ProctrackType=proctrack/linuxproc", "proctracktype"),
        ("TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/none", "taskplugin"),
        ("GresTypes=gpu", "GresTypes=gpu,npu", "grestypes"),
        ("SelectTypeParameters=CR_Core_Memory", "SelectTypeParameters=CR_Core", "selecttypeparameters"),
        ("ClusterName=lab", "ClusterName=lab2", "clustername"),
        (
            "HealthCheckInterval=300",
            "HealthCheckInterval=300\nAccountingStorageType=accounting_storage/slurmdbd",
            "accountingstoragetype",
        ),
    ],
)
def test_changes_that_restart(old, new, reason):
    reasons = sc.restart_reasons(BASE, edit(old, new))
    assert reason in reasons and sc.needs_restart(BASE, edit(old, new))


def test_node_order_alone_is_no_restart_but_controller_order_is():
    swapped = edit(
        "NodeName=w1 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN\n"
        "NodeName=w2 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN\n",
        "NodeName=w2 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN\n"
        "NodeName=w1 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN\n",
    )
    assert sc.restart_reasons(BASE, swapped) == []
    two = edit("SlurmctldHost=ctl", "SlurmctldHost=a\nSlurmctldHost=b")
    assert sc.restart_reasons(
        two, edit("SlurmctldHost=a\nSlurmctldHost=b", "SlurmctldHost=b\nSlurmctldHost=a", two)
    ) == ["slurmctldhost"]


def test_continuation_lines_and_comments_are_read():
    wrapped = edit(
        "NodeName=w1 CPUs=2 RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN",
        "NodeName=w1 CPUs=2 \\\n  RealMemory=22057 Gres=gpu:h100:8 State=UNKNOWN  # the memory",
    )
    assert sc.restart_reasons(BASE, wrapped) == []
    assert sc.conf_node_lines(wrapped)["w1"] == BASE.splitlines()[9]


def test_unlisted_workers_are_the_ones_without_a_node_line_on_the_controller():
    conf = "ClusterName=x\nNodeName=g1 CPUs=4\nNodeName=g2 CPUs=4\n"
    workers = [{"host": "g1.lab"}, {"host": "g2", "name": "g2"}, {"host": "g3"}, {"host": "x", "name": "g4"}]
    assert sc.unlisted_workers(workers, conf) == ["g3", "x"]
    assert sc.unlisted_workers(workers, "") == ["g1.lab", "g2", "g3", "x"]  # first run: every worker joins
