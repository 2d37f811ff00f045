"""Validate one node against its SKU's expected state.

API (used by the `node_validate` module and `clusterforge validate --from-capture`):

    from cfcore.collect import CaptureSource, LiveSource
    from cfcore.validate import validate_node
    from cfcore.expected import InvalidExpectation

    node_result = validate_node(source, expected, level="quick")

`source`: `LiveSource()` (run the tools here) or `CaptureSource(dir)` (a
directory written by tools/cf-capture.sh; nothing runs). `expected`:
{"node_sku", "sku", "bom", "required_mounts", "hccn_devices", "sysfs_root",
"skip_checks", "os_release", "root_min_free_gib", "ipoib_interfaces", "roce",
"peermem_required", "only_checks", "juicefs_mounts", "ceph_health"} as docs/design.md
describes (`required_mounts` items: a path, or {path, fstype, writable}); a malformed one raises
InvalidExpectation (a ValueError) whose message names the variable and the fix.
`level`: "quick" (seconds) or "full" (adds `dcgmi diag -r 2`, minutes).
`check_mode`: Ansible's check mode: nothing that loads the GPUs runs, so
`gpu.dcgm_diag` (an active stress test) is skipped, saying why.

The result is the `node_result` dict of docs/design.md: host, node_sku, level,
status (fail > error > warn > pass; skip only if every check skipped), checks
(one per check id, in a fixed order), metrics, facts, collected_at, duration_s.
With `only_checks` (a fabric-only run of playbooks/fabric.yml) the other checks
are listed as `skip` ("not in only_checks") and do not run at all where a whole
area (accelerator, fabric, node) is left out: the status is that of the checks
that ran, and the report still shows what was not checked.
An unhealthy node is a result, never an exception: a parser or check that fails
on input it did not foresee makes that check `error` (with the command, the file
and the exception as evidence) and every other check still runs.
"""

from __future__ import annotations

import os
import time

from .checks import (
    CHECK_IDS,
    FABRIC_CHECKS,
    GPU_CHECKS,
    GPU_FULL_CHECKS,
    NODE_CHECKS,
    NPU_CHECKS,
    PPU_CHECKS,
    STORAGE_CHECKS,
    ascend,
    dcgm,
    gpudirect,
    infiniband,
    nvidia,
    ppu,
    roce,
    storage,
)
from .checks import node as node_checks
from .checks.common import as_int, crashed, unavailable
from .collect import Collector
from .expected import InvalidExpectation, normalize
from .facts import node_facts
from .files import UnsafeFile, confined
from .ipoib import IP_ADDR
from .outputs import Output
from .results import skipped, worst

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
IP_ADDR_SHOW = (IP_ADDR, None)  # JSON, read by cfcore.ipoib.parse_ip_addr
PROC_MODULES = "/proc/modules"
NPU_SMI = (("npu-smi", "info"), "npu-smi-info")
PPU_SMI_LIST = (("ppu-smi", "-L"), "ppu-smi-list")
PPU_SMI_Q = (("ppu-smi", "-q"), "ppu-smi-q")
CHRONY = (("chronyc", "-n", "tracking"), None)
TIMEDATECTL = (("timedatectl", "show", "-p", "NTP", "-p", "NTPSynchronized"), None)
# Time services answer at once; a hung one must not hold up the node.
TIME_TIMEOUT_S = 5
DEFAULT_ROOT_MIN_FREE_GIB = 10.0

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


def validate_node(source, expected: dict, level: str = "quick", check_mode: bool = False) -> dict:
    if level not in LEVELS:
        raise InvalidExpectation(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    started = time.monotonic()
    collected_at = _now()
    exp = normalize(expected)
    run = _NodeRun(source, exp, level, check_mode)
    checks = run.checks()
    only = exp["only_checks"]
    if only is not None:
        checks = [check if check["id"] in only else skipped(check["id"], run.not_chosen) for check in checks]
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

    def __init__(self, source, exp: dict, level: str, check_mode: bool = False):
        self.source = source
        self.exp = exp
        self.level = level
        self.check_mode = check_mode
        self.accel = exp["accelerator"]
        self.vendor = self.accel["vendor"] if self.accel else None
        self.collector = Collector(source)
        self.metrics: dict = {}
        self.metrics_errors: list = []
        self._outputs: dict = {}
        self.only = exp["only_checks"]
        shown = ", ".join((self.only or [])[:6]) + (", ..." if len(self.only or []) > 6 else "")
        self.not_chosen = f"not in only_checks (this run checks only {shown})"

    def _wanted(self, ids) -> bool:
        """Whether any of `ids` is to run (only_checks); an area with none is not collected at all."""
        return self.only is None or any(check_id in self.only for check_id in ids)

    # -- collection -----------------------------------------------------------------

    def _first_requests(self) -> list[tuple]:
        requests = [CHRONY] if self._wanted(NODE_CHECKS) else []
        vendor = self.vendor if self._wanted(GPU_CHECKS + GPU_FULL_CHECKS + NPU_CHECKS + PPU_CHECKS) else None
        if vendor == "nvidia":
            requests += [NVIDIA_SMI_XML, DMESG, LSPCI_NVIDIA]
            if self.accel.get("nvlink_links_per_device"):
                requests.append(NVLINK)
            if str(self.accel.get("interconnect") or "").lower() == "nvswitch":
                requests.append(FABRIC_MANAGER)
        elif vendor == "huawei":
            requests.append(NPU_SMI)
            for device in self._planned_nics():
                requests += [
                    _hccn(device, "-ip", "hccn-ip"),
                    _hccn(device, "-link", "hccn-link"),
                    _hccn(device, "-net_health", "hccn-net-health"),
                ]
        elif vendor == "alibaba":
            requests += [PPU_SMI_LIST, PPU_SMI_Q]
        if self._wanted(FABRIC_CHECKS):
            if self.exp["hca"]:
                requests.append(IBSTAT)
            if self.exp["ipoib_interfaces"]:
                requests.append(IP_ADDR_SHOW)
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
        # A refused tree (a link out of the capture) says more than ibstat's absence.
        return sysfs if sysfs.ok or sysfs.state == "refused" else ibstat

    # -- checks ---------------------------------------------------------------------

    def checks(self) -> list[dict]:
        self.collector.prefetch(self._first_requests())
        by_id: dict = {}
        groups = (
            (self._accelerator_checks, GPU_CHECKS + GPU_FULL_CHECKS + NPU_CHECKS + PPU_CHECKS),
            (self._fabric_checks, FABRIC_CHECKS),
            (self._node_checks, NODE_CHECKS),
            (self._storage_checks, STORAGE_CHECKS),
        )
        for group, ids in groups:
            if not self._wanted(ids):
                for check_id in ids:
                    by_id[check_id] = skipped(check_id, self.not_chosen)
                continue
            try:
                results = group()
            except Exception as exc:  # outside any one check (collection, ids): this group's checks err
                results = [crashed(check_id, exc) for check_id in ids]
            for result in results:
                by_id[result["id"]] = result
        return [by_id[check_id] for check_id in CHECK_IDS if check_id in by_id]

    @staticmethod
    def _check(check_id: str, function, *inputs) -> dict:
        """One check's result; an exception inside it becomes its `error`, never the node's failure."""
        try:
            return function(*inputs)
        except Exception as exc:
            return crashed(check_id, exc, inputs)

    def _metrics(self, function, *inputs) -> None:
        # Metrics are figures for outlier detection: a failure to compute them loses only them.
        try:
            self.metrics.update(function(*inputs))
        except Exception as exc:
            self.metrics_errors.append(
                f"{getattr(function, '__module__', '')}.metrics: {type(exc).__name__}: {exc}"
            )

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
            results += self._ppu()
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
        check = self._check
        results = [
            check("gpu.tool", nvidia.gpu_tool, smi),
            check("gpu.count", nvidia.gpu_count, smi, accel, lspci),
            check("gpu.model", nvidia.gpu_model, smi, accel),
            check("gpu.driver_version", nvidia.gpu_driver_version, smi, accel, bom),
            check("gpu.kernel_modules", nvidia.gpu_kernel_modules, proc_version, modinfo, accel),
            check("gpu.peermem", gpudirect.gpu_peermem, *self._peermem_inputs()),
            check("gpu.pcie_link", nvidia.gpu_pcie_link, smi, accel, lspci),
            check("gpu.nvlink", nvidia.gpu_nvlink, nvlink, smi, accel),
            check("gpu.fabric_manager", nvidia.gpu_fabric_manager, fabric_manager, accel, smi),
            check("gpu.persistence_mode", nvidia.gpu_persistence_mode, smi),
            check("gpu.xid", nvidia.gpu_xid, kernel_log, smi),
            check("gpu.ecc", nvidia.gpu_ecc, smi),
            check("gpu.retired_pages", nvidia.gpu_retired_pages, smi),
            check("gpu.remapped_rows", nvidia.gpu_remapped_rows, smi),
            check("gpu.mig", nvidia.gpu_mig, smi, accel),
            self._dcgm_diag(),
        ]
        self._metrics(nvidia.metrics, smi, nvlink, kernel_log)
        self._outputs["smi"] = smi
        self._outputs["flavour"] = nvidia.kernel_module_flavour(proc_version, modinfo)[0]
        return results

    def _dcgm_diag(self) -> dict:
        if self.level != "full":
            return skipped("gpu.dcgm_diag", "dcgmi diag -r 2 runs only at level full")
        if "gpu.dcgm_diag" in self.exp["skip_checks"]:
            return skipped("gpu.dcgm_diag", "dcgmi diag -r 2 skipped by skip_checks")
        if not self._wanted(("gpu.dcgm_diag",)):
            return skipped("gpu.dcgm_diag", self.not_chosen)
        if self.check_mode:
            return skipped(
                "gpu.dcgm_diag",
                "dcgmi diag -r 2 not run in check mode: it is an active stress test that loads the GPUs "
                "for minutes, and check mode runs nothing that changes or loads the node",
            )
        diag = self.collector.run(DCGM_DIAG, None, DCGM_TIMEOUT_S)
        return self._check("gpu.dcgm_diag", dcgm.gpu_dcgm_diag, diag)

    def _peermem_inputs(self) -> tuple:
        """(module dir, /proc/modules, required, why not): what gpudirect.gpu_peermem reads."""
        if not self.exp["peermem_required"]:
            why = (
                f"SKU {self.exp['node_sku']} has no compute-fabric HCAs: nvidia_peermem is not required"
                if not self.exp["hca"]
                else "peermem_required is false for this node"
            )
            return None, None, False, why
        root = self.source.sysfs_root(self.exp["sysfs_root"])
        path = os.path.join(root, "sys", "module", "nvidia_peermem")
        capture = self.source.kind == "capture"
        command = f"test -d {path}"
        try:
            if capture:
                confined(path, self.source.path)
            present = os.path.isdir(path)
        except (UnsafeFile, OSError) as exc:
            module = Output(command, "refused", error=str(exc))
        else:
            data = {"present": present, "path": path, "live": not capture}
            module = Output(command, "ok", data=data, file="sys/module/nvidia_peermem" if capture else None)
        proc_modules = None if module.ok and present else self.collector.read(PROC_MODULES)
        return module, proc_modules, True, ""

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
        check = self._check
        if info.usable:
            firmware = check("npu.firmware_compat", ascend.npu_firmware_compat, boards, ids)
        else:
            firmware = unavailable("npu.firmware_compat", info, ascend.INFO_FAILED)
        results = [
            check("npu.tool", ascend.npu_tool, info),
            check("npu.count", ascend.npu_count, info, accel),
            check("npu.model", ascend.npu_model, info, accel),
            check("npu.health", ascend.npu_health, info, healths),
            check("npu.driver_version", ascend.npu_driver_version, info, accel, bom),
            firmware,
            check("npu.nic_link", ascend.npu_nic_link, links, npu_nics),
            check("npu.nic_net_health", ascend.npu_nic_net_health, net_health, npu_nics),
            check("npu.nic_ip", ascend.npu_nic_ip, addresses, self.exp["hccn_devices"], npu_nics),
        ]
        self._metrics(ascend.metrics, info, links)
        self._outputs["npu"] = info
        self._outputs["boards"] = boards
        return results

    def _ppu(self) -> list[dict]:
        accel, bom = self.accel, self.exp["bom"]
        listed = self._run(PPU_SMI_LIST)
        detail = self._run(PPU_SMI_Q)
        check = self._check
        results = [
            check("ppu.tool", ppu.ppu_tool, listed, detail),
            check("ppu.count", ppu.ppu_count, listed, accel),
            check("ppu.model", ppu.ppu_model, listed, accel),
            check("ppu.health", ppu.ppu_health, detail, listed),
            check("ppu.sdk_version", ppu.ppu_sdk_version, detail, accel, bom),
        ]
        self._metrics(ppu.metrics, listed, detail)
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
            self._metrics(infiniband.metrics, hcas, hca)
        check = self._check
        interfaces = self.exp["ipoib_interfaces"]
        ip_addr = self._run(IP_ADDR_SHOW) if interfaces else None
        return [
            check("ib.hca_count", infiniband.ib_hca_count, hcas, hca),
            check("ib.link_layer", infiniband.ib_link_layer, hcas, hca),
            check("ib.port_state", infiniband.ib_port_state, hcas, hca),
            check("ib.port_rate", infiniband.ib_port_rate, hcas, hca),
            check("ib.ipoib", infiniband.ib_ipoib, ip_addr, interfaces),
            self._roce_qos(),
        ]

    def _roce_qos(self) -> dict:
        plan = self.exp["roce"]
        if not plan:
            return skipped("roce.qos", "no RoCE interface planned (fabric_roce_interfaces)")
        try:
            observed = roce.collect(self.collector, plan, self.source.sysfs_root(self.exp["sysfs_root"]))
        except Exception as exc:  # collecting the RoCE state must cost roce.qos only
            return crashed("roce.qos", exc)
        return self._check("roce.qos", roce.roce_qos, observed, plan)

    def _node_checks(self) -> list[dict]:
        """Checks of every node, with accelerators or without."""
        check = self._check
        mounts = self.collector.read("/proc/self/mounts") if self.exp["required_mounts"] else None
        chrony = self._run(CHRONY)
        # timedatectl speaks for systemd's time services where chronyc gives no answer.
        timedatectl = None if chrony.ok else self.collector.run(*TIMEDATECTL, TIME_TIMEOUT_S)
        plan = self.exp.get("os_release")
        os_release = self.collector.read("/etc/os-release") if plan else None
        return [
            self._mounts(mounts),
            check("node.time_sync", node_checks.node_time_sync, chrony, timedatectl),
            self._root_fs(),
            check("node.os_release", node_checks.node_os_release, os_release, plan),
        ]

    def _mounts(self, mounts) -> dict:
        """node.mounts: presence and type from the mount table; live, a probe file on each writable one."""
        required = self.exp["required_mounts"]
        capture = self.source.kind == "capture"
        probes = {}
        try:
            if mounts is not None and mounts.ok and not capture:
                points = node_checks.mount_points(mounts.text)
                host = self.source.hostname()
                for spec in required:
                    path = spec["path"]
                    wanted_type = spec.get("fstype")
                    if (
                        spec.get("writable")
                        and path in points
                        and (not wanted_type or points[path][1] == wanted_type)
                    ):
                        probes[path] = storage.probe_writable(path, host)
            self.metrics.update(node_checks.mount_metrics(probes))
        except Exception as exc:
            return crashed("node.mounts", exc, (mounts,))
        return self._check("node.mounts", node_checks.node_mounts, mounts, required, probes, capture)

    # -- shared storage -------------------------------------------------------------

    def _hostnames(self) -> list:
        name = self.source.hostname()
        return [name, name.split(".")[0]]

    def _storage_checks(self) -> list[dict]:
        return [self._juicefs_session(), self._ceph_health()]

    def _juicefs_session(self) -> dict:
        check_id = "storage.juicefs_session"
        mounts = self.exp["juicefs_mounts"]
        if not mounts:
            return self._check(check_id, storage.storage_juicefs_session, [], {}, self._hostnames())
        outputs: dict = {}
        try:
            if self.source.kind == "capture":
                captured = []
                for number in range(64):  # juicefs-status-<n>.json, numbered from 0
                    output = self.collector.run(("juicefs", "status", str(number)), "juicefs-status")
                    if output.state == "not_captured":
                        break
                    captured.append(output)
                if not captured:
                    captured = [self.collector.run(("juicefs", "status", "0"), "juicefs-status")]
                outputs = {mount["path"]: captured for mount in mounts}
            else:
                outputs = {mount["path"]: [self._juicefs_status(mount)] for mount in mounts}
        except Exception as exc:  # collecting must cost this check only
            return crashed(check_id, exc)
        return self._check(check_id, storage.storage_juicefs_session, mounts, outputs, self._hostnames())

    def _juicefs_status(self, mount: dict):
        """`juicefs status <meta_url>` with the env file's variables (META_PASSWORD), secrets scrubbed."""
        argv = ("juicefs", "status", mount["meta_url"])
        shown = storage.scrub(" ".join(argv))
        env_file = mount.get("env_file")
        env: dict = {}
        if env_file:
            try:
                env = storage.read_env_file(env_file)
            except (OSError, ValueError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                return Output(
                    shown,
                    "failed",
                    rc=1,
                    error=f"cannot read the env file {env_file} ({why}): the juicefs role writes it (0600)",
                )
        output = self.collector.run(argv, "juicefs-status", storage.JUICEFS_TIMEOUT_S, env=env or None)
        secrets = [
            value for key, value in env.items() if "PASSWORD" in key or "SECRET" in key or "KEY" in key
        ]
        output.command = shown
        output.error = storage.scrub(output.error, secrets)
        output.stderr = storage.scrub(output.stderr, secrets)
        output.text = storage.scrub(output.text, secrets)
        return output

    def _ceph_health(self) -> dict:
        check_id = "storage.ceph_health"
        plan = self.exp["ceph_health"]
        if not plan:
            return self._check(check_id, storage.storage_ceph_health, None, None)
        keyring_error = ""
        try:
            if self.source.kind == "capture":
                output = self.collector.run(("ceph", "health", "--format", "json"), "ceph-health")
            else:
                keyring = plan["keyring"]
                if not os.path.exists(keyring):
                    keyring_error = f"the keyring {keyring} of client.{plan['client']} does not exist"
                    output = None
                elif not os.access(keyring, os.R_OK):
                    keyring_error = f"the keyring {keyring} of client.{plan['client']} is not readable"
                    output = None
                else:
                    output = self.collector.run(
                        storage.ceph_health_argv(plan), "ceph-health", storage.CEPH_TIMEOUT_S
                    )
        except Exception as exc:
            return crashed(check_id, exc)
        return self._check(check_id, storage.storage_ceph_health, output, plan, keyring_error)

    def _root_fs(self) -> dict:
        space = self.collector.root_fs()
        minimum = self.exp.get("root_min_free_gib", DEFAULT_ROOT_MIN_FREE_GIB)
        try:
            result, found = node_checks.node_root_fs(space, float(minimum))
        except Exception as exc:
            return crashed("node.root_fs", exc, (space,))
        self.metrics.update(found)
        return result

    def facts(self) -> dict:
        try:
            facts = node_facts(
                self.vendor,
                smi=self._outputs.get("smi"),
                npu=self._outputs.get("npu"),
                boards=self._outputs.get("boards"),
                hcas=self._outputs.get("hcas"),
                flavour=self._outputs.get("flavour"),
                hca=self.exp["hca"],
            )
        except Exception as exc:  # facts describe the node; failing to build them must not lose its checks
            facts = node_facts(self.vendor)
            self.metrics_errors.append(f"facts: {type(exc).__name__}: {exc}")
        if self.metrics_errors:
            facts["errors"] = list(self.metrics_errors)
        return facts
