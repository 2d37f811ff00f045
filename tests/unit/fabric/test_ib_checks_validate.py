"""node_validate's fabric checks end to end on the hardware replay's profiles, captures and parameters:
the healthy profile passes, each faulty one fails with its check id; only_checks, peermem_required,
the IPoIB and RoCE plans through cfcore.expected."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hwreplay"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from cfcore.checks import CHECK_IDS, FABRIC_CHECKS
from cfcore.collect import CaptureSource
from cfcore.expected import InvalidExpectation, build_expected, normalize
from cfcore.validate import validate_node
from chkdata import CAPTURES, h100_expected
from hwreplay_testlib import replay_env
from replaylib import control
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import TOOLS, run_tool

ROCE_IFS = [
    "enp24s0np0",
    "enp64s0np0",
    "enp79s0np0",
    "enp94s0np0",
    "enp154s0np0",
    "enp192s0np0",
    "enp206s0np0",
    "enp220s0np0",
]
ROCE_SKU = {"hgx-h100-8gpu": {"hca": {"link_layer": "Ethernet", "devices": ["mlx5_[0-7]"]}}}


class ReplayedNode:
    """A live source answered by the replay in-process; files (sysfs, /proc) read from disk; `ip` faked."""

    kind = "live"

    def __init__(self, ctx: Context, profile: dict, ip_json: str | None = None) -> None:
        self.ctx, self.profile, self.ip_json, self.ran = ctx, profile, ip_json, []

    def run(self, argv, timeout: float = 30) -> tuple:
        self.ran.append(tuple(argv))
        if argv[0] == "ip" and self.ip_json is not None:
            return 0, self.ip_json, ""
        if argv[0] not in TOOLS:
            return 127, "", f"{argv[0]} not found on PATH"
        result = run_tool(self.ctx, argv[0], list(argv[1:]), self.profile)
        return result.rc, result.stdout, result.stderr

    def read(self, path: str):
        if path == "/proc/modules":
            return ""  # the controller's kernel has no nvidia_peermem: only the replayed sysfs decides
        return Path(path).read_text() if os.path.isfile(path) else None

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def hostname(self) -> str:
        return "replayed-node"

    def file_for(self, argv):
        return None

    def sysfs_root(self, configured: str) -> str:
        return configured or "/"


def replay(tmp_path, name: str, **hostvars) -> dict:
    ctx = Context(env=replay_env(tmp_path))
    control.set_profile(ctx, name)
    ip_json = hostvars.pop("ip_json", None)
    variables = {
        "node_sku": "hgx-h100-8gpu",
        "sysfs_root": str(tmp_path / "sysroot"),
        "nvidia_driver_version": "535.183.01",
        **hostvars,
    }
    source = ReplayedNode(ctx, resolve(ctx, name), ip_json)
    result = validate_node(source, build_expected("node", variables), "quick")
    result["ran"] = source.ran
    return result


def fabric(result: dict) -> dict:
    return {
        c["id"]: c["status"] for c in result["checks"] if c["id"].startswith(("ib.", "roce.", "gpu.peermem"))
    }


def test_healthy_h100_passes_every_fabric_check(tmp_path):
    result = replay(tmp_path, "h100-healthy")
    assert fabric(result) == {
        "gpu.peermem": "pass",
        "ib.hca_count": "pass",
        "ib.link_layer": "pass",
        "ib.port_state": "pass",
        "ib.port_rate": "pass",
        "ib.ipoib": "skip",
        "roce.qos": "skip",
    }
    assert [c["id"] for c in result["checks"]] == list(CHECK_IDS)
    compute = {hca["name"]: hca["compute"] for hca in result["facts"]["hcas"]}
    assert compute == {**{f"mlx5_{n}": True for n in range(8)}, "mlx5_8": False, "mlx5_9": False}


@pytest.mark.parametrize(
    ("profile", "check_id", "words"),
    [
        ("h100-ib-wrong-rate", "ib.port_rate", "mlx5_5 port 1 at 200 Gb/s, the SKU expects 400 Gb/s"),
        ("h100-ib-port-down", "ib.port_state", "mlx5_3 port 1: Down / Polling"),
        ("h100-ib-link-layer-eth", "ib.link_layer", "mlx5_2 port 1 is Ethernet"),
        ("h100-peermem-missing", "gpu.peermem", "nvidia_peermem is not loaded"),
    ],
)
def test_each_faulty_profile_fails_with_its_check_id(tmp_path, profile, check_id, words):
    result = replay(tmp_path, profile)
    checks = {c["id"]: c for c in result["checks"]}
    assert checks[check_id]["status"] == "fail" and words in checks[check_id]["message"]
    assert checks[check_id]["remedy"]
    others = {k: v for k, v in fabric(result).items() if k != check_id and v not in ("pass", "skip")}
    # A compute port on the wrong layer is also one HCA short: it never silently disappears.
    assert others == ({"ib.hca_count": "fail"} if profile == "h100-ib-link-layer-eth" else {})


def test_only_fabric_checks_run_nothing_else_and_report_the_rest_as_skipped(tmp_path):
    result = replay(tmp_path, "h100-healthy", validate_only_checks=["ib.*", "roce.*"])
    assert result["status"] == "pass"
    ran = {argv[0] for argv in result["ran"]}
    assert ran == {"ibstat"}, ran  # no nvidia-smi, dmesg, lspci, chronyc
    checks = {c["id"]: c for c in result["checks"]}
    assert checks["gpu.count"]["status"] == "skip"
    assert checks["gpu.count"]["message"].startswith("not in only_checks (this run checks only ib.hca_count")
    assert checks["node.time_sync"]["status"] == "skip"
    assert [c["id"] for c in result["checks"]] == list(CHECK_IDS)


def test_only_checks_keeps_a_failure_visible(tmp_path):
    result = replay(tmp_path, "h100-peermem-missing", validate_only_checks=["gpu.peermem"])
    assert result["status"] == "fail"
    assert [c["id"] for c in result["checks"] if c["status"] != "skip"] == ["gpu.peermem"]


def test_ipoib_plan_is_checked_against_ip_addr(tmp_path):
    links = [
        {
            "ifname": "ibp24s0",
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
            "mtu": 2044,
            "operstate": "UP",
            "addr_info": [{"family": "inet", "local": "10.40.0.11", "prefixlen": 16}],
        }
    ]
    plan = [
        {"name": "ibp24s0", "address": "10.40.0.11/16"},
        {"parent": "ibp24s0", "pkey": "0x0002", "address": "10.41.0.11/16"},
    ]
    result = replay(tmp_path, "h100-healthy", fabric_ipoib_interfaces=plan, ip_json=json.dumps(links))
    ipoib = {c["id"]: c for c in result["checks"]}["ib.ipoib"]
    assert ipoib["status"] == "fail" and ipoib["message"] == "ibp24s0.8002 does not exist"
    assert ("ip", "-j", "addr", "show") in result["ran"]


def test_roce_plan_passes_on_the_healthy_profile_and_fails_with_pfc_off(tmp_path):
    common = {"clusterforge_sku_catalog": ROCE_SKU, "fabric_roce_interfaces": ROCE_IFS}
    healthy = replay(tmp_path / "a", "roce-healthy", **common)
    assert fabric(healthy)["roce.qos"] == "pass", {c["id"]: c["message"] for c in healthy["checks"]}
    assert fabric(healthy)["ib.link_layer"] == "pass"
    faulty = replay(tmp_path / "b", "roce-pfc-off", **common)
    qos = {c["id"]: c for c in faulty["checks"]}["roce.qos"]
    assert qos["status"] == "fail" and "pfc planned 0,0,0,1,0,0,0,0, found 0,0,0,0,0,0,0,0" in qos["message"]


# ---------------------------------------------------------------- captures and parameters


def test_peermem_from_a_capture(tmp_path):
    capture = tmp_path / "h100-healthy"
    shutil.copytree(CAPTURES / "h100-healthy", capture)
    (capture / "proc-modules.txt").unlink(missing_ok=True)  # a capture from before cf-capture.sh saved it
    checks = {c["id"]: c for c in validate_node(CaptureSource(str(capture)), h100_expected())["checks"]}
    assert checks["gpu.peermem"]["status"] == "error"  # not captured: never a pass
    assert "proc-modules.txt" in checks["gpu.peermem"]["message"]
    (capture / "proc-modules.txt").write_text(
        "nvidia_peermem 16384 0 - Live 0x0 (OE)\nnvidia 1 1 - Live 0x0\n"
    )
    checks = {c["id"]: c for c in validate_node(CaptureSource(str(capture)), h100_expected())["checks"]}
    assert checks["gpu.peermem"]["status"] == "pass"
    assert checks["gpu.peermem"]["evidence"]["file"] == "proc-modules.txt"


def test_a_capture_link_out_of_it_is_refused_for_peermem(tmp_path):
    capture = tmp_path / "h100-healthy"
    shutil.copytree(CAPTURES / "h100-healthy", capture)
    (capture / "proc-modules.txt").unlink(missing_ok=True)
    (capture / "sys" / "module").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (capture / "sys" / "module" / "nvidia_peermem").symlink_to(tmp_path / "elsewhere")
    checks = {c["id"]: c for c in validate_node(CaptureSource(str(capture)), h100_expected())["checks"]}
    assert checks["gpu.peermem"]["status"] == "error" and "points outside" in checks["gpu.peermem"]["message"]


def test_peermem_required_defaults_to_nvidia_with_hcas():
    assert normalize(h100_expected())["peermem_required"] is True
    assert normalize(h100_expected(peermem_required=False))["peermem_required"] is False
    no_hca = h100_expected()
    no_hca["sku"]["hca"] = None
    assert normalize(no_hca)["peermem_required"] is False
    with pytest.raises(InvalidExpectation, match="validate_peermem_required must be true, false or unset"):
        normalize(h100_expected(peermem_required="yes"))


def test_only_checks_names_are_checked_and_areas_expand():
    assert normalize(h100_expected(only_checks=["ib.*", "roce.*"]))["only_checks"] == list(FABRIC_CHECKS)
    assert normalize(h100_expected(only_checks=["node.mounts", "gpu.peermem"]))["only_checks"] == [
        "gpu.peermem",
        "node.mounts",
    ]
    assert normalize(h100_expected())["only_checks"] is None
    with pytest.raises(InvalidExpectation, match=r"unknown check ids ib\.ports, fabric\.\*"):
        normalize(h100_expected(only_checks=["ib.ports", "fabric.*"]))
    with pytest.raises(InvalidExpectation, match="non-empty list of check ids or null"):
        normalize(h100_expected(only_checks=[]))


def test_build_expected_reads_the_fabric_variables_and_names_them_in_errors():
    hostvars = {
        "node_sku": "hgx-h100-8gpu",
        "fabric_ipoib_interfaces": [{"name": "ib0", "address": "10.40.0.11/16"}],
        "fabric_roce_interfaces": ["enp24s0np0"],
        "fabric_roce_pfc_priority": 3,
        "fabric_roce_trust": None,
        "validate_only_checks": ["ib.*"],
    }
    expected = build_expected("gpu-1", hostvars)
    assert expected["roce"] == {"interfaces": ["enp24s0np0"], "pfc_priority": 3}
    assert expected["ipoib_interfaces"] == hostvars["fabric_ipoib_interfaces"]
    checked = normalize(expected)
    assert checked["roce"]["trust"] == "dscp" and checked["roce"]["traffic_class"] == 26 << 2
    assert checked["ipoib_interfaces"][0]["mtu"] == 2044
    assert build_expected("gpu-1", {"node_sku": "hgx-h100-8gpu", "fabric_roce_trust": "dscp"})["roce"] is None
    with pytest.raises(InvalidExpectation, match=r"host gpu-1: fabric_ipoib_interfaces\[0\].mtu 9000"):
        build_expected(
            "gpu-1",
            {
                **hostvars,
                "fabric_ipoib_interfaces": [{"name": "ib0", "address": "10.40.0.11/16", "mtu": 9000}],
            },
        )
    with pytest.raises(InvalidExpectation, match="host gpu-1: fabric_roce_trust must be dscp or pcp"):
        build_expected("gpu-1", {**hostvars, "fabric_roce_trust": "cos"})
