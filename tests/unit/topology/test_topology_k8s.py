"""The fabric topology in Kubernetes: role volcano renders HyperNodes from Volcano 1.12 (schema-checked
with the render harness against tests/k8s_render/schemas/volcano/topology.volcano.sh_v1alpha1_hypernode.json,
written from the CRD's fields), none for the pinned 1.10; the workers' topology.clusterforge.io/* labels
through role k8s_device_plugins."""

from __future__ import annotations

import json

import pytest
from test_volcano_support import documents, example_vars, render
from validate import validate_document, validate_tree

K8S = "1.30.6"


@pytest.fixture(scope="module")
def rendered_112(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("volcano-112")
    done, root = render(tmp, ["volcano", "k8s_device_plugins"], {"volcano_version": "1.12.0"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def test_hypernodes_of_the_example_from_volcano_1_12(rendered_112):
    docs = documents(rendered_112 / "volcano" / "hypernodes.yaml")
    assert [(d["metadata"]["name"], d["spec"]["tier"]) for d in docs] == [
        ("leaf-r1", 1),
        ("leaf-r2", 1),
        ("spine-1", 2),  # one spine: no root
    ]
    members = {
        d["metadata"]["name"]: [m["selector"]["exactMatch"]["name"] for m in d["spec"]["members"]]
        for d in docs
    }
    assert members == {
        "leaf-r1": ["gpu-r1-n01", "gpu-r1-n02"],  # the k8s_workers only: n03, n04 are Slurm's
        "leaf-r2": ["npu-r2-n01", "npu-r2-n02"],
        "spine-1": ["leaf-r1", "leaf-r2"],
    }
    for doc in docs:
        assert validate_document(doc, K8S, doc["metadata"]["name"]) == []
    assert validate_tree(rendered_112 / "volcano", K8S) == []
    conf = documents(rendered_112 / "volcano" / "volcano-scheduler-configmap.yaml")[0]
    assert "network-topology-aware" in conf["data"]["volcano-scheduler.conf"]


def test_the_hypernode_schema_refuses_what_the_crd_refuses(rendered_112):
    leaf = documents(rendered_112 / "volcano" / "hypernodes.yaml")[0]
    member = leaf["spec"]["members"][0]
    bad = [
        {**leaf, "spec": {**leaf["spec"], "members": []}},  # minItems 1
        {**leaf, "spec": {**leaf["spec"], "members": [{**member, "type": "Switch"}]}},
        {**leaf, "spec": {"members": leaf["spec"]["members"]}},  # tier required
        {**leaf, "spec": {**leaf["spec"], "members": [{"type": "Node", "selector": {}}]}},
        {**leaf, "metadata": {"name": "Leaf_R1"}},
    ]
    for doc in bad:
        assert validate_document(doc, K8S, "bad"), doc


def test_no_hypernodes_for_the_pinned_volcano(tmp_path):
    assert example_vars("volcano_version") == "1.10.0"
    done, root = render(tmp_path, ["volcano"])
    assert done.returncode == 0, done.stdout[-3000:]
    assert not (root / "volcano" / "hypernodes.yaml").exists()


def test_workers_get_the_topology_labels(rendered_112):
    plan = json.loads((rendered_112 / "k8s_device_plugins" / "labels" / "node-labels.json").read_text())
    topology = {
        entry["node"]: {k: v for k, v in entry["labels"].items() if k.startswith("topology.clusterforge.io/")}
        for entry in plan
    }
    assert topology["gpu-r1-n01"] == {
        "topology.clusterforge.io/rack": "r1",
        "topology.clusterforge.io/leaf": "leaf-r1",
        "topology.clusterforge.io/spine": "spine-1",
    }
    assert "topology.clusterforge.io/leaf=leaf-r2" in next(
        e["argv"] for e in plan if e["node"] == "npu-r2-n01"
    )
