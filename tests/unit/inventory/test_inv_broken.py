"""Broken inventories: each kind of mistake exits 2 and names the host or file and the variable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from invcase import Inventory, plan, run_check


@dataclass
class Case:
    id: str
    mutate: Callable[[Inventory], None]
    rule: str
    where: str  # a host name or a file path fragment the location must name
    variable: str | None  # the variable the location must name (None: names the host/file only)


def _replace(inv: Inventory, rel: str, old: str, new: str) -> None:
    text = inv.path(rel).read_text()
    assert old in text, f"{old!r} not in {rel}"
    inv.write(rel, text.replace(old, new, 1))


def _b200(inv: Inventory) -> None:
    inv.set_host_var("gpu-r1-n01", "node_sku", "hgx-b200-8gpu")


def _a3(inv: Inventory, host: str = "npu-r2-n01") -> None:
    """Make `host` an Atlas 800T A3 with a valid 16-die plan (die 2k on 10.30/16, die 2k+1 on 10.31/16)."""
    inv.set_host_var(host, "node_sku", "atlas-800t-a3")
    inv.set_var("group_vars/all/versions.yml", "ascend_driver_version", "24.1.0")
    inv.set_var("group_vars/all/versions.yml", "cann_version", "8.0.0")
    inv.del_var("group_vars/all/fabric.yml", "fabric_npu_network")
    inv.set_hccn(host, plan([f"10.3{die % 2}.2.{100 + die}" for die in range(16)], netmask="255.255.0.0"))


def _atlas9000(inv: Inventory, addresses: list[str]) -> None:
    inv.set_host_var("npu-r2-n01", "node_sku", "atlas-800-9000")
    inv.del_var("group_vars/all/fabric.yml", "fabric_npu_network")
    inv.set_hccn("npu-r2-n01", plan(addresses))


CASES = [
    # --- syntax -------------------------------------------------------------
    Case(
        "yaml-syntax-hosts",
        lambda inv: _replace(inv, "hosts.yml", "node_sku: hgx-h100-8gpu\n", "node_sku: [hgx-h100-8gpu\n"),
        "yaml.syntax",
        "hosts.yml:",
        None,
    ),
    Case(
        "yaml-syntax-group-vars",
        lambda inv: _replace(
            inv, "group_vars/all/versions.yml", 'cuda_version: "12.2"', 'cuda_version: "12.2'
        ),
        "yaml.syntax",
        "group_vars/all/versions.yml:",
        None,
    ),
    Case(
        "duplicate-host-key",
        lambda inv: _replace(
            inv,
            "hosts.yml",
            "        gpu-r1-n02:\n",
            "        gpu-r1-n01:\n          rack: r9\n        gpu-r1-n02:\n",
        ),
        "yaml.duplicate_key",
        "hosts.yml:",
        "gpu-r1-n01",
    ),
    Case(
        "duplicate-var-key",
        lambda inv: inv.write(
            "group_vars/all/versions.yml",
            inv.path("group_vars/all/versions.yml").read_text() + 'cuda_version: "12.4"\n',
        ),
        "yaml.duplicate_key",
        "group_vars/all/versions.yml:",
        "cuda_version",
    ),
    Case(
        "vars-file-not-mapping",
        lambda inv: inv.write("group_vars/gpu_nvidia.yml", "- nvidia_mig_mode: disabled\n"),
        "vars.not_mapping",
        "group_vars/gpu_nvidia.yml",
        None,
    ),
    Case(
        "invalid-variable-name",
        lambda inv: inv.write("group_vars/npu_ascend.yml", "ascend-install-path: /usr/local/Ascend\n"),
        "vars.name",
        "group_vars/npu_ascend.yml:1",
        "ascend-install-path",
    ),
    # --- hosts and required variables ---------------------------------------
    Case(
        "unknown-sku",
        lambda inv: inv.set_host_var("gpu-r1-n03", "node_sku", "hgx-h100"),
        "sku.unknown",
        "gpu-r1-n03",
        "node_sku",
    ),
    Case(
        "missing-node-sku",
        lambda inv: inv.del_host_var("ctl-r3-n02", "node_sku"),
        "vars.required",
        "ctl-r3-n02",
        "node_sku",
    ),
    Case(
        "missing-rack",
        lambda inv: inv.del_host_var("jfs-r3-n01", "rack"),
        "vars.required",
        "jfs-r3-n01",
        "rack",
    ),
    Case(
        "missing-ansible-host",
        lambda inv: inv.del_host_var("ceph-r3-n02", "ansible_host"),
        "vars.required",
        "ceph-r3-n02",
        "ansible_host",
    ),
    Case(
        "malformed-ansible-host",
        lambda inv: inv.set_host_var("gpu-r1-n02", "ansible_host", "10.10.1.312"),
        "ip.malformed",
        "gpu-r1-n02",
        "ansible_host",
    ),
    Case(
        "duplicate-ansible-host",
        lambda inv: inv.set_host_var("gpu-r1-n04", "ansible_host", "10.10.1.13"),
        "ip.duplicate",
        "gpu-r1-n04",
        "ansible_host",
    ),
    Case(
        "invalid-hostname",
        lambda inv: _replace(
            inv, "hosts.yml", "ctl-r3-n03:\n          ansible_host", "CTL_r3_n03:\n          ansible_host"
        ),
        "host.name",
        "CTL_r3_n03",
        None,
    ),
    Case(
        "same-node-two-names",
        lambda inv: _replace(
            inv,
            "hosts.yml",
            "    monitoring:\n      hosts:\n        ctl-r3-n03:\n",
            "    monitoring:\n      hosts:\n        ctl-r3-n03.dc1.example.com:\n"
            "          ansible_host: 10.10.3.13\n          ansible_port: 2222\n"
            "          node_sku: cpu-generic\n          rack: r3\n",
        ),
        "host.duplicate_name",
        "ctl-r3-n03.dc1.example.com",
        None,
    ),
    Case(
        "ssh-port-out-of-range",
        lambda inv: inv.set_host_var("gpu-r1-n02", "ansible_port", 70000),
        "host.port",
        "gpu-r1-n02",
        "ansible_port",
    ),
    Case(
        "hccn-plan-missing",
        lambda inv: inv.path("host_vars/npu-r2-n02.yml").unlink(),
        "vars.required",
        "npu-r2-n02",
        "hccn_devices",
    ),
    Case(
        "template-undefined",
        lambda inv: inv.set_host_var("ctl-r3-n01", "node_sku", "{{ control_sku }}"),
        "vars.template",
        "ctl-r3-n01",
        "node_sku",
    ),
    # --- SKU and groups ------------------------------------------------------
    Case(
        "gpu-group-cpu-sku",
        lambda inv: inv.set_host_var("gpu-r1-n02", "node_sku", "cpu-generic"),
        "sku.group_mismatch",
        "gpu-r1-n02",
        "node_sku",
    ),
    Case(
        "nvidia-sku-outside-gpu-group",
        lambda inv: inv.set_host_var("jfs-r3-n02", "node_sku", "hgx-h100-8gpu"),
        "sku.group_missing",
        "jfs-r3-n02",
        "node_sku",
    ),
    Case(
        "bad-sku-override",
        lambda inv: inv.set_var(
            "group_vars/all/skus.yml",
            "clusterforge_sku_catalog",
            {"hgx-h100-8gpu": {"hca": {"rate_gbps": "400G"}}},
        ),
        "sku.catalog",
        "group_vars/all/skus.yml",
        "clusterforge_sku_catalog.hgx-h100-8gpu.hca.rate_gbps",
    ),
    Case(
        "orphan-group-vars-typo",
        lambda inv: inv.write("group_vars/gpu_nvida.yml", "nvidia_mig_mode: enabled\n"),
        "vars.orphan_group",
        "group_vars/gpu_nvida.yml",
        None,
    ),
    Case(
        "misspelt-group",
        lambda inv: _replace(inv, "hosts.yml", "    slurm_workers:\n", "    slurm_worker:\n"),
        "group.misspelt",
        "hosts.yml",
        None,
    ),
    Case(
        "k8s-workers-without-control-plane",
        lambda inv: _replace(
            inv,
            "hosts.yml",
            "    k8s_control_plane:\n      hosts:\n"
            "        ctl-r3-n01:\n        ctl-r3-n02:\n        ctl-r3-n03:\n",
            "    k8s_control_plane:\n      hosts: {}\n",
        ),
        "group.dependency",
        "hosts.yml",
        None,
    ),
    Case(
        "slurm-partition-unknown-group",
        lambda inv: inv.set_var(
            "group_vars/all/scheduler.yml",
            "slurm_partitions",
            [{"name": "h100", "nodes_group": "gpu_nvdia", "default": True}],
        ),
        "slurm.partitions",
        "group_vars/all/scheduler.yml",
        "slurm_partitions[0].nodes_group",
    ),
    # --- BOM -----------------------------------------------------------------
    Case(
        "bom-missing",
        lambda inv: inv.del_var("group_vars/all/versions.yml", "dcgm_version"),
        "vars.required",
        "gpu-r1-n01",
        "dcgm_version",
    ),
    Case(
        "bom-unquoted-number",
        lambda inv: _replace(
            inv, "group_vars/all/versions.yml", 'cuda_version: "12.2"', "cuda_version: 12.10"
        ),
        "bom.format",
        "group_vars/all/versions.yml:",
        "cuda_version",
    ),
    Case(
        "bom-malformed-driver",
        lambda inv: inv.set_var("group_vars/all/versions.yml", "nvidia_driver_version", "535"),
        "bom.format",
        "group_vars/all/versions.yml",
        "nvidia_driver_version",
    ),
    Case("b200-driver-too-old", _b200, "bom.sku_driver", "gpu-r1-n01", "nvidia_driver_version"),
    Case(
        "b200-proprietary-modules",
        lambda inv: (
            _b200(inv),
            inv.set_var("group_vars/all/versions.yml", "nvidia_driver_version", "570.124.06"),
            inv.set_var("group_vars/all/versions.yml", "cuda_version", "12.8"),
            inv.set_var("group_vars/all/versions.yml", "nccl_version", "2.25.1-1+cuda12.8"),
            inv.set_var("group_vars/all/versions.yml", "nvidia_kernel_module_flavour", "proprietary"),
        ),
        "bom.kernel_modules",
        "gpu-r1-n01",
        "nvidia_kernel_module_flavour",
    ),
    Case(
        "h200-driver-too-old",
        lambda inv: inv.set_host_var("gpu-r1-n04", "node_sku", "hgx-h200-8gpu"),
        "bom.sku_driver",
        "gpu-r1-n04",
        "nvidia_driver_version",
    ),
    Case(
        "b200-cuda-too-old",
        lambda inv: (
            _b200(inv),
            inv.set_var("group_vars/all/versions.yml", "nvidia_driver_version", "570.124.06"),
        ),
        "bom.cuda_arch",
        "gpu-r1-n01",
        "cuda_version",
    ),
    Case(
        "cuda-needs-newer-driver",
        lambda inv: (
            inv.set_var("group_vars/all/versions.yml", "cuda_version", "13.0"),
            inv.set_var("group_vars/all/versions.yml", "nccl_version", "2.27.7-1+cuda13.0"),
        ),
        "bom.cuda_driver",
        "group_vars/all/versions.yml",
        "cuda_version",
    ),
    Case(
        "fabricmanager-differs",
        lambda inv: inv.set_var("group_vars/all/versions.yml", "nvidia_fabricmanager_version", "535.161.08"),
        "bom.fabricmanager",
        "gpu-r1-n03",
        "nvidia_fabricmanager_version",
    ),
    Case(
        "nccl-build-for-other-cuda",
        lambda inv: inv.set_var("group_vars/all/versions.yml", "nccl_version", "2.18.5-1+cuda11.0"),
        "bom.nccl_cuda",
        "group_vars/all/versions.yml",
        "nccl_version",
    ),
    Case(
        "cann-needs-newer-driver",
        lambda inv: inv.set_var("group_vars/all/versions.yml", "cann_version", "8.5.0"),
        "bom.cann_driver",
        "npu-r2-n01",
        "cann_version",
    ),
    Case(
        "ascend-driver-too-old-for-a3",
        lambda inv: (
            _a3(inv),
            inv.set_var("group_vars/all/versions.yml", "ascend_driver_version", "24.1.rc3"),
        ),
        "bom.sku_driver",
        "npu-r2-n01",
        "ascend_driver_version",
    ),
    # --- NPU NIC plans --------------------------------------------------------
    Case(
        "hccn-entry-missing",
        lambda inv: inv.set_hccn("npu-r2-n01", inv.hccn("npu-r2-n01")[:7]),
        "hccn.count",
        "npu-r2-n01",
        "hccn_devices",
    ),
    Case(
        "a2-single-subnet",
        lambda inv: inv.set_hccn(
            "npu-r2-n02",
            plan([f"10.30.2.{21 + d}" for d in range(7)] + ["10.30.3.28"], netmask="255.255.255.0"),
        ),
        "hccn.subnet_rule",
        "npu-r2-n02",
        "hccn_devices[7].address",
    ),
    Case(
        "atlas9000-four-subnet-pairs",
        # devices 0..3 on 192.168.1-4, device 4 wrongly on .2 (must share device 0's subnet)
        lambda inv: _atlas9000(
            inv,
            [
                *("192.168.1.11", "192.168.2.11", "192.168.3.11", "192.168.4.11"),
                *("192.168.2.12", "192.168.2.13", "192.168.3.12", "192.168.4.12"),
            ],
        ),
        "hccn.subnet_rule",
        "npu-r2-n01",
        "hccn_devices[4].address",
    ),
    Case(
        "a3-dies-same-subnet",
        lambda inv: (
            _a3(inv),
            inv.set_hccn(
                "npu-r2-n01",
                [
                    {**d, "address": "10.30.2.199", "gateway": "10.30.0.1", "netdetect": "10.30.0.1"}
                    if i == 5
                    else d
                    for i, d in enumerate(inv.hccn("npu-r2-n01"))
                ],
            ),
        ),
        "hccn.subnet_rule",
        "npu-r2-n01",
        "hccn_devices[5].address",
    ),
    Case(
        "npu-ip-duplicate-across-hosts",
        lambda inv: inv.set_hccn(
            "npu-r2-n02",
            [{**d, "address": "10.30.2.13"} if d["id"] == 2 else d for d in inv.hccn("npu-r2-n02")],
        ),
        "ip.duplicate",
        "npu-r2-n02",
        "hccn_devices[2].address",
    ),
    Case(
        "npu-ip-duplicate-within-host",
        lambda inv: inv.set_hccn(
            "npu-r2-n01",
            [{**d, "address": "10.30.2.11"} if d["id"] == 6 else d for d in inv.hccn("npu-r2-n01")],
        ),
        "ip.duplicate",
        "npu-r2-n01",
        "hccn_devices[6].address",
    ),
    Case(
        "hccn-bad-netmask",
        lambda inv: inv.set_hccn(
            "npu-r2-n01",
            [{**d, "netmask": "255.0.255.0"} if d["id"] == 3 else d for d in inv.hccn("npu-r2-n01")],
        ),
        "ip.netmask",
        "npu-r2-n01",
        "hccn_devices[3].netmask",
    ),
    Case(
        "hccn-gateway-outside-subnet",
        lambda inv: inv.set_hccn(
            "npu-r2-n01",
            [{**d, "gateway": "10.31.0.1"} if d["id"] == 0 else d for d in inv.hccn("npu-r2-n01")],
        ),
        "hccn.gateway",
        "npu-r2-n01",
        "hccn_devices[0].gateway",
    ),
    Case(
        "hccn-entry-lacks-netdetect",
        lambda inv: inv.set_hccn(
            "npu-r2-n02",
            [
                {k: v for k, v in d.items() if k != "netdetect" or d["id"] != 1}
                for d in inv.hccn("npu-r2-n02")
            ],
        ),
        "hccn.shape",
        "npu-r2-n02",
        "hccn_devices[1]",
    ),
    # --- networks -------------------------------------------------------------
    Case(
        "storage-address-outside-network",
        lambda inv: inv.set_host_var("gpu-r1-n02", "fabric_storage_address", "10.120.1.12"),
        "ip.outside_network",
        "gpu-r1-n02",
        "fabric_storage_address",
    ),
    Case(
        "network-host-bits-set",
        lambda inv: inv.set_var("group_vars/all/storage.yml", "ceph_cluster_network", "10.21.3.0/16"),
        "ip.network",
        "group_vars/all/storage.yml",
        "ceph_cluster_network",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_broken_inventory_exits_2_naming_place_and_variable(case, tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    case.mutate(inv)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2, outcome.out + outcome.err
    matching = [
        p
        for p in outcome.errors(case.rule)
        if case.where in p["location"] and (case.variable is None or case.variable in p["location"])
    ]
    assert matching, f"no {case.rule} error naming {case.where} / {case.variable}:\n{outcome.out}"
    assert matching[0]["message"] and matching[0]["fix"]
    assert "the inventory has" in outcome.err


def test_at_least_twenty_kinds_of_broken_inventory():
    assert len(CASES) >= 20
    assert len({c.rule for c in CASES}) >= 20
