"""Render every Kubernetes document for the example and the lab inventory, then validate them all.

One ansible-playbook run of tests/k8s_render/render.yml per inventory (conftest.rendered);
tests/k8s_render/validate.py checks each document against the schemas of the pinned version.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from validate import validate_tree

INVENTORIES = ["example", "lab"]


def groups_of(inventory: Path) -> dict[str, list[str]]:
    """Group -> hosts of an inventory's hosts.yml (nested children followed)."""
    found: dict[str, list[str]] = {}

    def walk(name: str, node: dict) -> list[str]:
        hosts = list((node or {}).get("hosts") or {})
        for child, body in ((node or {}).get("children") or {}).items():
            hosts += walk(child, body)
        found[name] = sorted(set(found.get(name, []) + hosts))
        return hosts

    walk("all", yaml.safe_load((inventory / "hosts.yml").read_text())["all"])
    return found


def scheduler_vars(inventory: Path) -> dict:
    return yaml.safe_load((inventory / "group_vars" / "all" / "scheduler.yml").read_text())


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture(params=INVENTORIES)
def result(request, rendered):
    res = rendered(request.param)
    assert res.run.returncode == 0, res.run.stdout[-4000:] + res.run.stderr[-2000:]
    return res


def test_every_rendered_document_is_valid_for_the_pinned_version(result):
    version = scheduler_vars(result.inventory)["k8s_version"]
    assert validate_tree(result.root, version) == []
    # Kept small: one playbook run per inventory (printed with -rA or on failure).
    print(f"{result.name}: rendered in {result.seconds:.1f} s")


def test_first_control_plane_node_gets_the_init_configuration(result):
    groups = groups_of(result.inventory)
    first = groups["k8s_control_plane"][0]
    kinds = {d["kind"]: d for d in docs(result.host(first) / "kubernetes" / "kubeadm-init.yaml")}
    assert set(kinds) == {
        "InitConfiguration",
        "ClusterConfiguration",
        "KubeletConfiguration",
        "KubeProxyConfiguration",
    }
    cluster = kinds["ClusterConfiguration"]
    assert cluster["kubernetesVersion"] == "v" + scheduler_vars(result.inventory)["k8s_version"]
    assert cluster["apiVersion"] == "kubeadm.k8s.io/v1beta3"  # 1.30 reads v1beta3, not v1beta4
    assert kinds["KubeletConfiguration"]["cgroupDriver"] == "systemd"
    vip = scheduler_vars(result.inventory).get("k8s_api_vip")
    host, _, port = cluster["controlPlaneEndpoint"].rpartition(":")
    assert port == "6443"
    assert host == (
        vip
        or yaml.safe_load((result.inventory / "hosts.yml").read_text())["all"]["hosts"][first]["ansible_host"]
    )
    if "k8s_pod_cidr" in scheduler_vars(result.inventory):
        assert cluster["networking"]["podSubnet"] == scheduler_vars(result.inventory)["k8s_pod_cidr"]
    assert (result.host(first) / "kubernetes" / "kubeadm-init.yaml").stat().st_mode & 0o777 == 0o600
    assert not (result.host(first) / "kubernetes" / "kubeadm-join.yaml").exists()


def test_other_nodes_get_join_configurations(result):
    groups = groups_of(result.inventory)
    control_plane = groups["k8s_control_plane"]
    for host in control_plane[1:] + groups["k8s_workers"]:
        path = result.host(host) / "kubernetes" / "kubeadm-join.yaml"
        (join,) = docs(path)
        assert join["kind"] == "JoinConfiguration"
        assert join["discovery"]["bootstrapToken"]["caCertHashes"] == ["sha256:" + "ab" * 32]
        assert ("controlPlane" in join) == (host in control_plane), host
        assert path.stat().st_mode & 0o777 == 0o600


def test_kube_vip_static_pod_only_with_a_vip(result):
    groups = groups_of(result.inventory)
    vip = scheduler_vars(result.inventory).get("k8s_api_vip")
    for host in groups["k8s_control_plane"] + groups["k8s_workers"]:
        path = result.host(host) / "kubernetes" / "kube-vip.yaml"
        expected = bool(vip) and host in groups["k8s_control_plane"]
        assert path.exists() == expected, host
        if expected:
            (pod,) = docs(path)
            env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
            assert pod["kind"] == "Pod" and env["address"] == vip


def test_calico_kustomization_on_the_first_control_plane_node(result):
    groups = groups_of(result.inventory)
    first = groups["k8s_control_plane"][0]
    kustomization = yaml.safe_load(
        (result.host(first) / "kubernetes" / "calico" / "kustomization.yaml").read_text()
    )
    assert kustomization["resources"] == ["calico.yaml"]
    for host in groups["k8s_control_plane"][1:] + groups["k8s_workers"]:
        assert not (result.host(host) / "kubernetes" / "calico").exists()


def test_containerd_runtimes_follow_the_accelerator_groups(result):
    groups = groups_of(result.inventory)
    for host in sorted(set(groups["k8s_control_plane"] + groups["k8s_workers"])):
        config = tomllib.loads((result.host(host) / "containerd" / "config.toml").read_text())
        cri = config["plugins"]["io.containerd.grpc.v1.cri"]
        runtimes = cri["containerd"]["runtimes"]
        expected = {"runc"} | ({"nvidia"} if host in groups["gpu_nvidia"] else set())
        expected |= {"ascend"} if host in groups["npu_ascend"] else set()
        assert set(runtimes) == expected, host
        assert all(r["options"]["SystemdCgroup"] is True for r in runtimes.values())
        registry = scheduler_vars(result.inventory).get("k8s_image_registry", "registry.k8s.io")
        assert cri["sandbox_image"] == f"{registry}/pause:3.9"
        default = "nvidia" if "nvidia" in expected else "ascend" if "ascend" in expected else "runc"
        assert cri["containerd"]["default_runtime_name"] == default
        if "nvidia" in expected:
            assert runtimes["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
        if "ascend" in expected:
            assert runtimes["ascend"]["options"]["BinaryName"].endswith(
                "/Ascend-Docker-Runtime/ascend-docker-runtime"
            )


def test_both_accelerator_runtimes_are_exercised(rendered):
    """Across the two inventories a GPU and an NPU k8s worker are rendered (the runtime test covers both)."""
    seen = set()
    for name in INVENTORIES:
        res = rendered(name)
        groups = groups_of(res.inventory)
        seen |= {g for g in ("gpu_nvidia", "npu_ascend") if set(groups[g]) & set(groups["k8s_workers"])}
    assert seen == {"gpu_nvidia", "npu_ascend"}
