"""Validate one node against its SKU's expected state.

API (used by the `node_validate` module and `clusterforge validate --from-capture`):

    from cfcore.collect import CaptureSource, LiveSource
    from cfcore.validate import validate_node
    from cfcore.expected import InvalidExpectation

    node_result = validate_node(source, expected, level="quick")

`source`: `LiveSource()` (run the tools here) or `CaptureSource(dir)` (a
directory written by tools/cf-capture.sh; nothing runs). `expected`:
{"node_sku", "sku", "bom", "required_mounts", "hccn_devices", "sysfs_root",
"skip_checks"} as docs/design.md describes; a malformed one raises
InvalidExpectation (a ValueError) whose message names the variable and the fix.
`level`: "quick" (seconds) or "full" (adds `dcgmi diag -r 2`, minutes).

The result is the `node_result` dict of docs/design.md: host, node_sku, level,
status (fail > error > warn > pass; skip only if every check skipped), checks
(one per check id, in a fixed order), metrics, facts, collected_at, duration_s.
An unhealthy node is a result, never an exception.
"""

from __future__ import annotations

import time

from .checks import (
    CHECK_IDS,
    GPU_CHECKS,
    GPU_FULL_CHECKS,
    NPU_CHECKS,
    PPU_CHECKS,
    ascend,
    dcgm,
    infiniband,
    nvidia,
)
from .checks import node as node_checks
from .checks.common import as_int, unavailable
from .collect import Collector
from .expected import InvalidExpectation, normalize
from .facts import node_facts
from .results import skipped, warned, worst

LEVELS = ("quick", "full")

NVIDIA_SMI_XML = (("nvidia-smi", "-q", "-x"), "nvidia-smi-q-xml")
NVIDIA_SMI_TEXT = (("nvidia-smi", "-q"), "nvidia-smi-q")
NVLINK = (("nvidia-smi", "nvlink", "-s"), "nvidia-smi-nvlink")
DMESG = (("dmesg",), "xid")
JOURNAL = (("journalctl", "-k", "-b", "--no-pager"), "xid")
LSPCI_NVIDIA = (("lspci", "-vvv", "-nn", "-D", "-d", "10de:"), "lspci")
FABRIC_MANAGER = (("systemctl", "is-active", "nvidia-fabricmanager"), None)
MODINFO = (("modinfo", "-F", "license", "nvidia"), None)
DCGM_DIAG = ("dcgmi", "diag", "-r", "2", "-j")
IBSTAT = (("ibstat",), "ibstat")
NPU_SMI = (("npu-smi", "info"), "npu-smi-info")

# A dcgmi diag -r 2 takes minutes on 8 GPUs.
DCGM_TIMEOUT_S = 1200


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _board(npu: int) -> tuple:
    return ("npu-smi", "info", "-t", "board", "-i", str(npu)), "npu-smi-board"


def _health(npu: int) -> tuple:
    return ("npu-smi", "info", "-t", "health", "-i", str(npu)), "npu-smi-health"


def _hccn(device: int, option: str, kind: str) -> tuple:
    return ("hccn_tool", "-i", str(device), option, "-g"), kind


def validate_node(source, expected: dict, level: str = "quick") -> dict:
    if level not in LEVELS:
        raise InvalidExpectation(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    started = time.monotonic()
    collected_at = _now()
    exp = normalize(expected)
    run = _NodeRun(source, exp, level)
    checks = run.checks()
    skip = set(exp["skip_checks"])
    checks = [
        skipped(check["id"], "skipped by skip_checks") if check["id"] in skip else check for check in checks
    ]
    return {
        "host": source.hostname(),
        "node_sku": exp["node_sku"],
        "level": level,
        "status": worst([check["status"] for check in checks]),
        "checks": checks,
        "metrics": run.metrics,
        "facts": run.facts(),
        "source": {"kind": source.kind, "path": getattr(source, "path", None)},
        "collected_at": collected_at,
        "duration_s": round(time.monotonic() - started, 3),
    }


class _NodeRun:
    """One validation of one node: collects each input once, then runs the SKU's checks."""

    def __init__(self, source, exp: dict, level: str):
        self.source = source
        self.exp = exp
        self.level = level
        self.accel = exp["accelerator"]
        self.vendor = self.accel["vendor"] if self.accel else None
        self.collector = Collector(source)
        self.metrics: dict = {}
        self._outputs: dict = {}

    # -- collection -----------------------------------------------------------------

    def _first_requests(self) -> list[tuple]:
        requests = []
        if self.vendor == "nvidia":
            requests += [NVIDIA_SMI_XML, DMESG, LSPCI_NVIDIA]
            if self.accel.get("nvlink_links_per_device"):
                requests.append(NVLINK)
            if str(self.accel.get("interconnect") or "").lower() == "nvswitch":
                requests.append(FABRIC_MANAGER)
        if self.vendor == "huawei":
            requests.append(NPU_SMI)
            for device in self._planned_nics():
                requests += [
                    _hccn(device, "-ip", "hccn-ip"),
                    _hccn(device, "-link", "hccn-link"),
                    _hccn(device, "-net_health", "hccn-net-health"),
                ]
        if self.exp["hca"]:
            requests.append(IBSTAT)
        return requests

    def _planned_nics(self) -> list[int]:
        if not self.exp["npu_nics"]:
            return []
        return [entry["id"] for entry in self.exp["hccn_devices"]]

    def _run(self, request: tuple):
        argv, kind = request
        return self.collector.run(argv, kind)

    def _nvidia_smi(self):
        smi = self._run(NVIDIA_SMI_XML)
        if smi.state == "not_captured":
            # A support engineer may send plain `nvidia-smi -q` instead of the XML.
            text = self._run(NVIDIA_SMI_TEXT)
            if text.state != "not_captured":
                return text
        return smi

    def _kernel_log(self):
        log = self._run(DMESG)
        if log.usable:
            return log
        # dmesg is denied to non-root users when kernel.dmesg_restrict=1; the journal may still have it.
        journal = self._run(JOURNAL)
        return journal if journal.usable else log

    def _hcas(self):
        ibstat = self._run(IBSTAT)
        if ibstat.ok:
            return ibstat
        root = self.source.sysfs_root(self.exp["sysfs_root"])
        sysfs = self.collector.sysfs_infiniband(root)
        if sysfs.ok:
            return sysfs
        return ibstat

    # -- checks ---------------------------------------------------------------------

    def checks(self) -> list[dict]:
        self.collector.prefetch(self._first_requests())
        by_id: dict = {}
        for result in self._accelerator_checks() + self._fabric_checks() + self._node_checks():
            by_id[result["id"]] = result
        return [by_id[check_id] for check_id in CHECK_IDS if check_id in by_id]

    def _accelerator_checks(self) -> list[dict]:
        if self.vendor is None:
            reason = f"SKU {self.exp['node_sku']} has no accelerators"
            return [skipped(c, reason) for c in GPU_CHECKS + GPU_FULL_CHECKS + NPU_CHECKS + PPU_CHECKS]
        results = []
        others = {
            "nvidia": NPU_CHECKS + PPU_CHECKS,
            "huawei": GPU_CHECKS + GPU_FULL_CHECKS + PPU_CHECKS,
            "alibaba": GPU_CHECKS + GPU_FULL_CHECKS + NPU_CHECKS,
        }[self.vendor]
        kind = {"nvidia": "NVIDIA GPUs", "huawei": "Huawei Ascend NPUs", "alibaba": "Alibaba PPUs"}
        kind = kind[self.vendor]
        results += [skipped(c, f"SKU {self.exp['node_sku']} has {kind}") for c in others]
        if self.vendor == "nvidia":
            results += self._nvidia()
        elif self.vendor == "huawei":
            results += self._ascend()
        else:
            results.append(
                warned(
                    "ppu.support",
                    "ClusterForge has no PPU device checks yet: only fabric and node checks ran",
                    None,
                    "validate the PPUs with the vendor's diagnostics before admitting the node",
                )
            )
        return results

    def _nvidia(self) -> list[dict]:
        accel, bom = self.accel, self.exp["bom"]
        smi = self._nvidia_smi()
        lspci = self._run(LSPCI_NVIDIA)
        kernel_log = self._kernel_log()
        nvlink = self._run(NVLINK) if accel.get("nvlink_links_per_device") else None
        has_nvswitch = str(accel.get("interconnect") or "").lower() == "nvswitch"
        fabric_manager = self._run(FABRIC_MANAGER) if has_nvswitch else None
        proc_version = self.collector.read("/proc/driver/nvidia/version")
        modinfo = None if proc_version.ok else self._run(MODINFO)
        results = [
            nvidia.gpu_tool(smi),
            nvidia.gpu_count(smi, accel, lspci),
            nvidia.gpu_model(smi, accel),
            nvidia.gpu_driver_version(smi, accel, bom),
            nvidia.gpu_kernel_modules(proc_version, modinfo, accel),
            nvidia.gpu_pcie_link(smi, accel, lspci),
            nvidia.gpu_nvlink(nvlink, smi, accel),
            nvidia.gpu_fabric_manager(fabric_manager, accel, smi),
            nvidia.gpu_persistence_mode(smi),
            nvidia.gpu_xid(kernel_log, smi),
            nvidia.gpu_ecc(smi),
            nvidia.gpu_retired_pages(smi),
            nvidia.gpu_remapped_rows(smi),
            nvidia.gpu_mig(smi, accel),
        ]
        if self.level == "full" and "gpu.dcgm_diag" not in self.exp["skip_checks"]:
            results.append(dcgm.gpu_dcgm_diag(self.collector.run(DCGM_DIAG, None, DCGM_TIMEOUT_S)))
        else:
            why = "runs only at level full" if self.level != "full" else "skipped by skip_checks"
            results.append(skipped("gpu.dcgm_diag", f"dcgmi diag -r 2 {why}"))
        self.metrics.update(nvidia.metrics(smi, nvlink, kernel_log))
        self._outputs["smi"] = smi
        self._outputs["flavour"] = nvidia.kernel_module_flavour(proc_version, modinfo)[0]
        return results

    def _ascend(self) -> list[dict]:
        accel, bom, npu_nics = self.accel, self.exp["bom"], self.exp["npu_nics"]
        info = self._run(NPU_SMI)
        ids = ascend.npu_ids(info) if info.usable else []
        unhealthy = [
            as_int(chip.get("npu_id"))
            for chip in ascend.chips_of(info)
            if str(chip.get("health") or "").lower() != "ok"
        ]
        nic_ids = self._nic_ids(info)
        second = [_board(n) for n in ids] + [_health(n) for n in sorted(set(unhealthy))]
        for device in nic_ids:
            second += [
                _hccn(device, "-ip", "hccn-ip"),
                _hccn(device, "-link", "hccn-link"),
                _hccn(device, "-net_health", "hccn-net-health"),
            ]
        self.collector.prefetch(second)
        boards = {n: self._run(_board(n)) for n in ids}
        healths = {n: self._run(_health(n)) for n in set(unhealthy)}
        addresses = {d: self._run(_hccn(d, "-ip", "hccn-ip")) for d in nic_ids}
        links = {d: self._run(_hccn(d, "-link", "hccn-link")) for d in nic_ids}
        net_health = {d: self._run(_hccn(d, "-net_health", "hccn-net-health")) for d in nic_ids}
        results = [
            ascend.npu_tool(info),
            ascend.npu_count(info, accel),
            ascend.npu_model(info, accel),
            ascend.npu_health(info, healths),
            ascend.npu_driver_version(info, accel, bom),
            ascend.npu_firmware_compat(boards, ids)
            if info.usable
            else unavailable("npu.firmware_compat", info, ascend.INFO_FAILED),
            ascend.npu_nic_link(links, npu_nics),
            ascend.npu_nic_net_health(net_health, npu_nics),
            ascend.npu_nic_ip(addresses, self.exp["hccn_devices"], npu_nics),
        ]
        self.metrics.update(ascend.metrics(info, links))
        self._outputs["npu"] = info
        self._outputs["boards"] = boards
        return results

    def _nic_ids(self, info) -> list[int]:
        """NIC device ids: the plan's, else one per NPU chip (hccn_tool -i takes the chip's logic id)."""
        npu_nics = self.exp["npu_nics"]
        if not npu_nics:
            return []
        planned = self._planned_nics()
        if planned:
            return planned
        if info.usable:
            return list(range(len(ascend.chips_of(info))))
        count = as_int(npu_nics.get("count"))
        return list(range(count or 0))

    def _fabric_checks(self) -> list[dict]:
        hca = self.exp["hca"]
        hcas = self._hcas() if hca else None
        self._outputs["hcas"] = hcas
        if hcas is not None:
            self.metrics.update(infiniband.metrics(hcas, hca))
        return [
            infiniband.ib_hca_count(hcas, hca),
            infiniband.ib_port_state(hcas, hca),
            infiniband.ib_port_rate(hcas, hca),
        ]

    def _node_checks(self) -> list[dict]:
        mounts = self.collector.read("/proc/self/mounts") if self.exp["required_mounts"] else None
        return [node_checks.node_mounts(mounts, self.exp["required_mounts"])]

    def facts(self) -> dict:
        return node_facts(
            self.vendor,
            smi=self._outputs.get("smi"),
            npu=self._outputs.get("npu"),
            boards=self._outputs.get("boards"),
            hcas=self._outputs.get("hcas"),
            flavour=self._outputs.get("flavour"),
        )
