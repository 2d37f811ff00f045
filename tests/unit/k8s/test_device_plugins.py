"""Role k8s_device_plugins: node labels from facts (cfcore/k8s_labels.py on cfcore/ascend_labels.py),
the rendered DaemonSets of the example inventory and of small clusters, validated as API documents."""

from __future__ import annotations

import importlib
import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import init_plugin_loader
from cfcore import k8s_labels as kl
from cfcore.ascend_labels import HOST_ARCH
from cfcore.inputs import InputError
from clusterforge.ansible_env import ensure_collection_link
from test_volcano_support import (
    architecture_of,
    documents,
    example_vars,
    facts_from_sku,
    render,
    validate,
)
from validate import validate_tree

init_plugin_loader([str(ensure_collection_link().parents[2])])
flt = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.k8s_labels")

REGISTRY = "registry.example.internal:5000"
H100 = {"vendor": "nvidia", "accelerator_count": 8, "accelerator_models": ["NVIDIA H100 80GB HBM3"]}
A2 = {"vendor": "huawei", "accelerator_count": 8, "accelerator_models": ["910B3"], "npus": [{}] * 8}
A3 = {"vendor": "huawei", "accelerator_count": 8, "accelerator_models": ["Ascend910"], "npus": [{}] * 16}
CPU = {"vendor": None, "accelerator_count": 0, "accelerator_models": []}
IB = {"mlx5_0": {"ports": {"1": {"state": "Active", "link_layer": "InfiniBand"}}}}
ETH = {"mlx5_0": {"ports": {"1": {"state": "Active", "link_layer": "Ethernet"}}}}


def test_nvidia_worker_gets_present_and_product():
    assert kl.worker_labels(H100, "x86_64") == {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    }


@pytest.mark.parametrize(
    ("facts", "arch", "host_arch", "kind"),
    [
        (A2, "x86_64", "huawei-x86", "module-910b-8"),
        (A2, "aarch64", "huawei-arm", "module-910b-8"),
        (A3, "aarch64", "huawei-arm", "module-a3-16"),  # 910C: two dies per NPU
        (A3, "amd64", "huawei-x86", "module-a3-16"),
    ],
)
def test_ascend_worker_gets_the_device_plugin_labels(facts, arch, host_arch, kind):
    assert kl.worker_labels(facts, arch) == {
        "accelerator": "huawei-Ascend910",
        "workerselector": "dls-worker-node",
        "host-arch": host_arch,
        "accelerator-type": kind,
    }


def test_catalog_facts_give_the_same_ascend_labels_as_the_sku_rule():
    from cfcore.ascend_labels import node_labels
    from cfcore.catalog import sku_spec

    for sku in ("atlas-800t-a2", "atlas-800t-a3"):
        assert (
            kl.worker_labels(facts_from_sku(sku), "aarch64")
            == node_labels(sku_spec(sku), "aarch64")["labels"]
        )


def test_cpu_only_node_gets_no_label_and_no_command():
    assert kl.worker_labels(CPU, "x86_64") == {}
    assert kl.worker_labels(CPU, "x86_64", ETH) == {}
    assert kl.label_argv("ctl-1", {}) == []


def test_infiniband_hcas_add_the_rdma_label_in_every_fact_shape():
    listed = [{"name": "mlx5_1", "ports": [{"port": 1, "link_layer": "InfiniBand"}]}]
    assert kl.infiniband_hcas(IB) == ["mlx5_0"] and kl.infiniband_hcas(listed) == ["mlx5_1"]
    assert kl.infiniband_hcas(ETH) == [] and kl.infiniband_hcas(None) == []
    assert kl.worker_labels(CPU, "x86_64", IB) == {"clusterforge.io/infiniband": "true"}


def test_label_argv_is_one_overwrite_command_per_node():
    assert kl.label_argv("npu-1", {"b": "2", "a": "1"}, "/usr/bin/kubectl") == [
        "/usr/bin/kubectl",
        "label",
        "--overwrite",
        "node",
        "npu-1",
        "a=1",
        "b=2",
    ]


def test_refusals_name_the_host_and_the_fix():
    with pytest.raises(InputError, match="gpu-9: no clusterforge_accelerators fact"):
        kl.cluster_labels([{"host": "gpu-9", "accelerators": None, "architecture": "x86_64"}])
    with pytest.raises(InputError, match="npu-9: architecture 'ppc64le'"):
        kl.cluster_labels([{"host": "npu-9", "accelerators": A2, "architecture": "ppc64le"}])
    with pytest.raises(InputError, match="several GPU models"):
        kl.worker_labels({**H100, "accelerator_models": ["NVIDIA H100", "NVIDIA A100"]}, "x86_64")
    with pytest.raises(InputError, match="both map to node name n1"):
        kl.cluster_labels(
            [
                {"host": "N1", "accelerators": CPU, "architecture": "x86_64"},
                {"host": "n1", "accelerators": CPU, "architecture": "x86_64"},
            ]
        )
    with pytest.raises(AnsibleFilterError, match=r"\(fix: run clusterforge.cluster.accelerator_facts"):
        flt.cf_k8s_worker_labels(["gpu-9"], {"gpu-9": {}})


def test_filter_reads_hca_facts_from_the_rdma_role_first():
    hostvars = {
        "g": {
            "clusterforge_accelerators": {**H100, "hcas": []},
            "rdma_hcas": IB,
            "ansible_architecture": "x86_64",
        },
        "n": {
            "clusterforge_accelerators": A2,
            "ansible_facts": {"architecture": "aarch64"},
            "k8s_node_name": "NPU-A",
        },
    }
    entries = flt.cf_k8s_worker_labels(["g", "n"], hostvars)
    assert [e["node"] for e in entries] == ["g", "npu-a"]
    assert entries[0]["labels"]["clusterforge.io/infiniband"] == "true"
    targets = flt.cf_k8s_plugin_targets(entries)
    assert (targets["nvidia"], targets["ascend"], targets["ascend_families"], targets["infiniband"]) == (
        ["g"],
        ["npu-a"],
        ["Ascend910"],
        ["g"],
    )


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugins")
    done, root = render(tmp, ["k8s_device_plugins"], {"k8s_image_registry": REGISTRY})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "k8s_device_plugins"


def test_example_renders_every_plugin_its_workers_need_and_they_validate(example):
    version = example_vars("k8s_version")
    kinds = {}
    for path in sorted(example.glob("*.yaml")):
        for doc in documents(path):
            validate(doc, version)
            kinds.setdefault(path.name, []).append((doc["kind"], doc["metadata"]["name"]))
    assert kinds == {
        "ascend-device-plugin.yaml": [
            ("ServiceAccount", "ascend-device-plugin-sa"),
            ("ClusterRole", "clusterforge-ascend-device-plugin"),
            ("ClusterRoleBinding", "clusterforge-ascend-device-plugin"),
            ("DaemonSet", "ascend-device-plugin-ascend910"),
        ],
        "gpu-feature-discovery.yaml": [("DaemonSet", "gpu-feature-discovery")],
        "nvidia-device-plugin.yaml": [("DaemonSet", "nvidia-device-plugin-daemonset")],
        "rdma-shared-device-plugin.yaml": [("ConfigMap", "rdma-devices"), ("DaemonSet", "rdma-shared-dp-ds")],
    }
    assert validate_tree(example, version) == []  # the whole tree, as the render harness checks it


def test_example_daemonsets_select_on_the_labels_the_role_sets(example):
    plan = json.loads((example / "labels" / "node-labels.json").read_text())
    labels = {entry["node"]: entry["labels"] for entry in plan}
    assert labels["npu-r2-n01"] == {
        "accelerator": "huawei-Ascend910",
        "accelerator-type": "module-910b-8",
        # The facts of the example's Ascend hosts are those of a Kunpeng (aarch64) server.
        "host-arch": HOST_ARCH[architecture_of("atlas-800t-a2")],
        "workerselector": "dls-worker-node",
        # The fabric topology of the inventory (cfcore/topology.py).
        "topology.clusterforge.io/rack": "r2",
        "topology.clusterforge.io/leaf": "leaf-r2",
        "topology.clusterforge.io/spine": "spine-1",
    }
    assert plan[0]["argv"][:5] == ["kubectl", "label", "--overwrite", "node", "gpu-r1-n01"]
    for name in ("nvidia-device-plugin.yaml", "ascend-device-plugin.yaml", "rdma-shared-device-plugin.yaml"):
        daemonset = next(d for d in documents(example / name) if d["kind"] == "DaemonSet")
        selector = daemonset["spec"]["template"]["spec"]["nodeSelector"]
        selected = [node for node, have in labels.items() if selector.items() <= have.items()]
        assert selected, f"{name}: no worker carries {selector}"
        image = daemonset["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image.startswith(REGISTRY + "/") and ":v" in image
    ascend = next(d for d in documents(example / "ascend-device-plugin.yaml") if d["kind"] == "DaemonSet")
    paths = {v["hostPath"]["path"] for v in ascend["spec"]["template"]["spec"]["volumes"]}
    assert {
        "/var/lib/kubelet/device-plugins",
        "/var/log/mindx-dl/devicePlugin",
        "/usr/local/Ascend/driver",
    } <= paths
    assert ascend["metadata"]["namespace"] == "kube-system"
    rdma_config = json.loads(documents(example / "rdma-shared-device-plugin.yaml")[0]["data"]["config.json"])
    assert rdma_config["configList"][0]["rdmaHcaMax"] == 1000
    assert rdma_config["configList"][0]["selectors"]["linkTypes"] == ["infiniband"]


def test_a_cluster_without_infiniband_or_npus_renders_only_what_it_needs(tmp_path):
    workers = {
        "gpu-a": {"clusterforge_accelerators": {**H100, "hcas": []}, "ansible_architecture": "x86_64"},
        "cpu-a": {"clusterforge_accelerators": CPU, "ansible_architecture": "x86_64"},
    }
    done, root = render(tmp_path, ["k8s_device_plugins"], {"k8s_version": "1.30.6"}, workers=workers)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = root / "k8s_device_plugins"
    assert sorted(p.name for p in out.glob("*.yaml")) == [
        "gpu-feature-discovery.yaml",
        "nvidia-device-plugin.yaml",
    ]
    image = documents(out / "nvidia-device-plugin.yaml")[0]["spec"]["template"]["spec"]["containers"][0][
        "image"
    ]
    assert image == "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"  # no mirror set: upstream's registry
    plan = json.loads((out / "labels" / "node-labels.json").read_text())
    assert {e["node"]: e["argv"] for e in plan}["cpu-a"] == []
