"""tests/k8s_render/validate.py finds what is wrong: the render test's verdict is only as good as this."""

from __future__ import annotations

from pathlib import Path

import yaml
from validate import validate_tree

GOOD_JOIN = {
    "apiVersion": "kubeadm.k8s.io/v1beta3",
    "kind": "JoinConfiguration",
    "discovery": {
        "bootstrapToken": {
            "apiServerEndpoint": "10.0.0.1:6443",
            "token": "abcdef.0123456789abcdef",
            "caCertHashes": ["sha256:" + "ab" * 32],
        }
    },
}


def write(root: Path, rel: str, *docs: dict) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs))


def test_a_valid_kubeadm_document_passes(tmp_path):
    write(tmp_path, "h/kubernetes/kubeadm-join.yaml", GOOD_JOIN)
    assert validate_tree(tmp_path, "1.30.6") == []


def test_an_unknown_kubeadm_field_is_a_problem(tmp_path):
    write(tmp_path, "h/kubernetes/kubeadm-join.yaml", {**GOOD_JOIN, "controlplane": {}})
    (problem,) = validate_tree(tmp_path, "1.30.6")
    assert "JoinConfiguration" in problem and "controlplane" in problem


def test_a_malformed_ca_hash_is_a_problem(tmp_path):
    bad = {
        **GOOD_JOIN,
        "discovery": {
            "bootstrapToken": {**GOOD_JOIN["discovery"]["bootstrapToken"], "caCertHashes": ["abc"]}
        },
    }
    write(tmp_path, "h/kubernetes/kubeadm-join.yaml", bad)
    (problem,) = validate_tree(tmp_path, "1.30.6")
    assert "caCertHashes/0" in problem


def test_a_builtin_kind_is_checked_strictly_at_the_version(tmp_path):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "imagePulPolicy": "Always"}]},
    }
    write(tmp_path, "h/kubernetes/pod.yaml", pod)
    (problem,) = validate_tree(tmp_path, "1.30.6")
    assert "imagePulPolicy" in problem


def test_a_kind_without_schema_is_a_problem(tmp_path):
    write(tmp_path, "h/x/installation.yaml", {"apiVersion": "operator.tigera.io/v1", "kind": "Installation"})
    assert validate_tree(tmp_path, "1.30.6") == [
        "h/x/installation.yaml#0: no schema for operator.tigera.io/v1 Installation"
    ]


def test_a_kustomization_is_built_and_its_output_validated(tmp_path):
    folder = "h/kubernetes/calico"
    write(
        tmp_path,
        f"{folder}/kustomization.yaml",
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["calico.yaml"],
            "namespace": "kube-system",
        },
    )
    # calico.yaml is absent: the stand-in is used, and its documents are valid.
    assert validate_tree(tmp_path, "1.30.6") == []


def test_a_kustomization_with_an_unknown_resource_is_a_problem(tmp_path):
    write(
        tmp_path,
        "h/k/kustomization.yaml",
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["nope.yaml"],
        },
    )
    (problem,) = validate_tree(tmp_path, "1.30.6")
    assert "nope.yaml missing and no stand-in" in problem


def test_an_empty_tree_is_a_problem(tmp_path):
    assert validate_tree(tmp_path, "1.30.6") == [f"{tmp_path}: no rendered *.yaml documents"]
