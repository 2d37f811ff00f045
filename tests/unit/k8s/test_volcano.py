"""Role volcano: queue and scheduler-configuration rules (cfcore/k8s_labels.py), the rendered
documents of the example inventory against the API and Volcano schemas, and the kustomization's
image rewrite through `kubectl kustomize` (offline)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from cfcore import k8s_labels as kl
from cfcore.inputs import InputError
from patience import HANG_S
from test_volcano_support import ENV_BIN, documents, example_vars, render, validate
from validate import validate_tree

REGISTRY = "registry.example.internal:5000"
# A stand-in for volcano-development.yaml: the three images as upstream writes them, and its ConfigMap.
STAND_IN = [
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "volcano-system"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": image}]},
            },
        },
    }
    for name, image in (
        ("volcano-scheduler", "docker.io/volcanosh/vc-scheduler:v1.10.0"),
        ("volcano-controllers", "volcanosh/vc-controller-manager:v1.10.0"),
        ("volcano-admission", "docker.io/volcanosh/vc-webhook-manager:v1.10.0"),
    )
] + [
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {"volcano-scheduler.conf": "actions: enqueue, allocate, backfill\n"},
    }
]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("volcano")
    done, root = render(tmp, ["volcano"], {"k8s_image_registry": REGISTRY})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "volcano"


def test_example_queues_pass_and_keep_their_fields():
    assert kl.volcano_queues(example_vars("volcano_queues")) == [
        {"name": "training", "weight": 8},
        {"name": "eval", "weight": 2},
    ]
    queue = {
        "name": "npu",
        "weight": 1,
        "capability": {"huawei.com/Ascend910": 16, "memory": "4Ti"},
        "reclaimable": False,
    }
    assert kl.volcano_queues([queue]) == [queue]


@pytest.mark.parametrize(
    ("queues", "message"),
    [
        ([{"name": "Training", "weight": 1}], "not a DNS-1123 label"),
        ([{"name": "a_b", "weight": 1}], "not a DNS-1123 label"),
        ([{"name": "x" * 64, "weight": 1}], "not a DNS-1123 label"),
        ([{"name": "t", "weight": 0}], "weight 0 must be an integer >= 1"),
        ([{"name": "t", "weight": "2"}], "must be an integer >= 1"),
        ([{"name": "t", "weight": True}], "must be an integer >= 1"),
        ([{"name": "t", "weight": 1}, {"name": "t", "weight": 2}], "queue t is defined twice"),
        ([{"name": "t", "weight": 1, "capability": {"cpu": "lots"}}], "not a Kubernetes quantity"),
        ([{"name": "t", "weight": 1, "capability": []}], "capability must be a mapping"),
        ([{"name": "t", "weight": 1, "reclaimable": "yes"}], "reclaimable must be true or false"),
        ([{"name": "t", "weight": 1, "priority": 3}], "unknown keys"),
        ({"name": "t"}, "must be a list"),
    ],
)
def test_bad_queues_are_refused_with_the_variable(queues, message):
    with pytest.raises(InputError, match=message) as err:
        kl.volcano_queues(queues)
    assert "volcano_queues" in err.value.message


def test_default_tiers_gate_network_topology_on_the_release():
    older = [p["name"] for t in kl.volcano_tiers([], "1.10.0") for p in t["plugins"]]
    assert older == [
        "priority",
        "gang",
        "conformance",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
    ]
    newer = kl.volcano_tiers([], "v1.12.1")
    assert [p["name"] for p in newer[1]["plugins"]][-1] == "network-topology-aware"
    with pytest.raises(InputError, match=r"arrived in 1\.12"):
        kl.volcano_tiers([{"plugins": [{"name": "gang"}, {"name": "network-topology-aware"}]}], "1.10.0")
    with pytest.raises(InputError, match="twice"):
        kl.volcano_tiers([{"plugins": [{"name": "gang"}, {"name": "gang"}]}], "1.10.0")


def test_actions_accept_a_list_or_a_string_and_refuse_unknown_ones():
    assert kl.volcano_actions(["enqueue", "allocate", "backfill"]) == "enqueue, allocate, backfill"
    assert kl.volcano_actions("enqueue,allocate, backfill,reclaim") == "enqueue, allocate, backfill, reclaim"
    with pytest.raises(InputError, match="unknown actions"):
        kl.volcano_actions("enqueue, allocat")


def test_scheduler_conf_has_the_actions_and_tiers(rendered):
    (configmap,) = documents(rendered / "volcano-scheduler-configmap.yaml")
    assert (configmap["metadata"]["name"], configmap["metadata"]["namespace"]) == (
        "volcano-scheduler-configmap",
        "volcano-system",
    )
    conf = yaml.safe_load(configmap["data"]["volcano-scheduler.conf"])
    assert conf["actions"] == "enqueue, allocate, backfill"
    assert [[p["name"] for p in tier["plugins"]] for tier in conf["tiers"]] == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", "binpack"],  # 1.10.0: no network-topology-aware
    ]


def test_example_documents_validate(rendered):
    version = example_vars("k8s_version")
    kinds = []
    for path in sorted(rendered.glob("*.yaml")):
        for doc in documents(path):
            validate(doc, version)
            kinds.append((doc["kind"], doc["metadata"]["name"]))
    assert sorted(kinds) == [
        ("ConfigMap", "volcano-scheduler-configmap"),
        ("PriorityClass", "training"),
        ("Queue", "eval"),
        ("Queue", "training"),
    ]


def test_the_render_harness_validates_the_tree_with_the_release_kustomized(rendered, tmp_path):
    """tests/k8s_render/validate.py's validate_tree: the kustomization built (stand-in release), all valid."""
    copy = tmp_path / "volcano"
    shutil.copytree(rendered, copy)
    (copy / "release" / "volcano-development.yaml").write_text(yaml.safe_dump_all(STAND_IN))
    assert validate_tree(copy, example_vars("k8s_version")) == []


def test_the_queue_schema_refuses_what_volcano_refuses(rendered):
    (queue, _) = documents(rendered / "queues.yaml")
    bad = {**queue, "spec": {**queue["spec"], "weight": 0}}
    with pytest.raises(Exception, match="less than the minimum"):
        validate(bad, "1.30.6")
    with pytest.raises(Exception, match="Additional properties"):
        validate({**queue, "spec": {**queue["spec"], "wieght": 2}}, "1.30.6")
    with pytest.raises(AssertionError, match="no schema"):
        validate(
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}, "1.30.6"
        )


def test_kustomization_rewrites_every_volcano_image_and_drops_the_release_configmap(rendered, tmp_path):
    release = tmp_path / "release"
    shutil.copytree(rendered / "release", release)
    (release / "volcano-development.yaml").write_text(yaml.safe_dump_all(STAND_IN))
    done = subprocess.run(
        [str(ENV_BIN / "kubectl"), "kustomize", str(release)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = [d for d in yaml.safe_load_all(done.stdout) if d]
    images = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"] for d in out}
    assert images == {
        "volcano-scheduler": f"{REGISTRY}/volcanosh/vc-scheduler:v1.10.0",
        "volcano-controllers": f"{REGISTRY}/volcanosh/vc-controller-manager:v1.10.0",
        "volcano-admission": f"{REGISTRY}/volcanosh/vc-webhook-manager:v1.10.0",
    }
    assert all(d["kind"] != "ConfigMap" for d in out)  # ClusterForge's own ConfigMap owns the configuration


def test_main_refuses_to_run_without_the_manifest_checksum():
    spec = yaml.safe_load((Path(__file__).parents[3] / "roles/volcano/meta/argument_specs.yml").read_text())
    option = spec["argument_specs"]["main"]["options"]["volcano_manifest_sha256"]
    assert option["required"] is True and "default" not in option
    assert "volcano_manifest_sha256" not in yaml.safe_load(
        (Path(__file__).parents[3] / "roles/volcano/defaults/main.yml").read_text()
    )
    tasks = yaml.safe_load((Path(__file__).parents[3] / "roles/volcano/tasks/main.yml").read_text())
    check = tasks[0]["ansible.builtin.assert"]
    assert "[0-9a-fA-F]{64}" in check["that"] and "sha256sum volcano-development.yaml" in check["fail_msg"]
