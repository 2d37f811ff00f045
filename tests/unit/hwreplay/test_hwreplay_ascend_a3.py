"""The Atlas 800T A3 profile (910c-healthy): 8 NPUs x 2 dies, 16 hccn devices.

And what node validation makes of it (and of 910b-healthy, as before).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml
from cfcore.expected import build_expected
from cfcore.parsers.ascend import parse_npu_smi_board, parse_npu_smi_health, parse_npu_smi_info
from cfcore.validate import validate_node
from replaylib import control, prerender
from replaylib.common import Context
from replaylib.profiles import resolve
from replaylib.tools import TOOLS, run_tool
from test_hwreplay_ascend_installed import ascend_env, board_plan, pinned_env
from test_hwreplay_shims import (  # noqa: F401 (fixtures)
    RenderedSource,
    no_fallback,
    node,
    render_command,
    shim_in_one_second,
)

ROOT = Path(__file__).resolve().parents[3]
A3, A2 = "910c-healthy", "910b-healthy"
SKU = {A3: "atlas-800t-a3", A2: "atlas-800t-a2"}


@pytest.fixture
def actx(tmp_path) -> Context:
    return Context(env=pinned_env(tmp_path))


def npu_smi(ctx: Context, *args: str) -> str:
    result = run_tool(ctx, "npu-smi", list(args), resolve(ctx, A3))
    assert result.rc == 0, result.stderr
    return result.stdout


def test_profile_shape(actx):
    ascend = resolve(actx, A3)["ascend"]
    chips = ascend["npus"]
    assert [(chip["id"], chip["chip_id"], chip["phy_id"]) for chip in chips] == [
        (k, die, 2 * k + die) for k in range(8) for die in (0, 1)
    ]
    assert {chip["name"] for chip in chips} == {"Ascend910"}
    assert len({chip["bus_id"] for chip in chips}) == 16
    assert {chip["hbm_total_mb"] for chip in chips} == {65536}  # 2 x 64 GB per 910C (the SKU's 128 GiB)
    # die-pairs-split: the two dies of NPU k are on different subnets.
    for k in range(8):
        nets = {
            ipaddress.ip_interface(f"{c['nic']['address']}/{c['nic']['netmask']}").network
            for c in chips[2 * k : 2 * k + 2]
        }
        assert len(nets) == 2, k


def test_npu_smi_info_has_the_a3_layout_and_parses(actx):
    text = npu_smi(actx, "info")
    lines = text.splitlines()
    assert "| Chip  Phy-ID              | Bus-Id        |" in text
    assert lines[6:12] == [
        "| 0     Ascend910           | OK            | 165.4       41                0    / 0             |",
        "| 0     0                   | 0000:9C:00.0  | 0           0    / 0          2904 / 65536         |",
        "+" + "-" * 96 + "+",  # the two dies of one NPU: a plain rule
        "| 0     Ascend910           | OK            | -           37                0    / 0             |",
        "| 1     1                   | 0000:9E:00.0  | 0           0    / 0          2957 / 65536         |",
        "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+",  # between NPUs: a double rule
    ]
    assert len({len(line) for line in lines}) == 1  # every row as wide as the borders
    parsed = parse_npu_smi_info(text)
    assert (parsed["version"], parsed["npu_count"], parsed["chip_count"]) == ("25.2.0", 8, 16)
    assert [chip["phy_id"] for chip in parsed["npus"]] == list(range(16))
    assert [chip["power_w"] is None for chip in parsed["npus"]] == [False, True] * 8
    assert text.count("No running processes found in NPU") == 8


def test_real_a3_capture_and_replay_parse_alike(actx):
    real = Path("/work/shared/real-outputs/ascend") / "npu-smi-info_A3-Ascend910_25.2.0_nputop-fixture.txt"
    if not real.exists():
        pytest.skip("the shared real outputs are not on this machine")
    text = real.read_text().split("\n", 1)[1]  # drop the source line
    captured = parse_npu_smi_info(text)["npus"][0]
    replayed = parse_npu_smi_info(npu_smi(actx, "info"))["npus"][0]
    assert sorted(key for key, value in captured.items() if value is not None) == sorted(
        key for key, value in replayed.items() if value is not None
    )


def test_board_health_and_mapping_per_npu(actx):
    card = parse_npu_smi_board(npu_smi(actx, "info", "-t", "board", "-i", "3"))
    assert (card["npu_id"], card["chip_count"], card["compatibility"], card["bus_id"]) == (
        3,
        2,
        "OK",
        "0000:01:00.0",
    )
    die = parse_npu_smi_board(npu_smi(actx, "info", "-t", "board", "-i", "3", "-c", "1"))
    assert (die["chip_id"], die["chip_name"], die["bus_id"]) == (1, "Ascend910", "0000:03:00.0")
    assert die["fields"]["chip_position_id"] == "7"  # the die's Phy-ID
    health = parse_npu_smi_health(npu_smi(actx, "info", "-t", "health", "-i", "3"))
    assert (health["npu_id"], health["health"]) == (3, "OK")
    assert [chip["chip_id"] for chip in health["chips"]] == [0, 1]
    one = parse_npu_smi_health(npu_smi(actx, "info", "-t", "health", "-i", "3", "-c", "1"))
    assert [chip["health"] for chip in one["chips"]] == ["OK"]
    assert (
        npu_smi(actx, "info", "-t", "usages", "-i", "3").count("HBM Capacity(MB)               : 65536") == 2
    )
    mapping = npu_smi(actx, "info", "-m").splitlines()
    assert len(mapping) == 17 and mapping[-1].split() == ["7", "1", "15", "Ascend910"]
    result = run_tool(actx, "npu-smi", ["info", "-t", "board", "-i", "3", "-c", "2"], resolve(actx, A3))
    assert result.rc != 0 and "chip id 2 is invalid" in result.stderr


def npu_checks(ctx: Context, tmp_path: Path, name: str, plan: list | None) -> dict:
    profile = resolve(ctx, name)
    hostvars = {
        "node_sku": SKU[name],
        "sysfs_root": str(tmp_path / "sysroot"),
        "ascend_driver_version": profile["ascend"]["driver_version"],
    }
    if plan is not None:
        hostvars["hccn_devices"] = plan
    report = validate_node(RenderedSource(ctx, profile), build_expected("node", hostvars), "quick")
    return {check["id"]: check for check in report["checks"] if check["id"].startswith("npu.")}


@pytest.mark.parametrize("name", [A3, A2])
def test_node_validate_passes_with_a_plan_the_nics_hold(actx, tmp_path, name):
    checks = npu_checks(actx, tmp_path, name, board_plan(resolve(actx, name)))
    assert {check_id: check["status"] for check_id, check in checks.items()} == dict.fromkeys(
        (
            "npu.tool",
            "npu.count",
            "npu.model",
            "npu.health",
            "npu.driver_version",
            "npu.firmware_compat",
            "npu.nic_link",
            "npu.nic_net_health",
            "npu.nic_ip",
        ),
        "pass",
    )
    nics = 16 if name == A3 else 8
    assert checks["npu.nic_link"]["message"] == f"link UP on all {nics} NPU NICs"


def inventory_plans() -> list:
    """Every hccn_devices plan in the repository's inventories and the lab's model."""
    plans = []
    for path in sorted((ROOT / "inventories").glob("**/host_vars/*.yml")):
        plan = (yaml.safe_load(path.read_text()) or {}).get("hccn_devices")
        if plan:
            plans.append(plan)
    try:
        from clusterforge.lab.model import hccn_devices
    except ImportError:
        return plans
    return plans + [hccn_devices(index) for index in (1, 2, 3)]


@pytest.mark.parametrize("name", [A3, A2])
def test_profile_nics_hold_no_inventorys_plan_so_the_role_has_work(actx, tmp_path, name):
    addresses = {npu["nic"]["address"] for npu in resolve(actx, name)["ascend"]["npus"]}
    plans = inventory_plans()
    assert plans
    for plan in plans:
        assert not addresses & {entry["address"] for entry in plan}
    # What the hccn role does on a node: before, the plan fails npu.nic_ip; written with -s, it passes.
    plan = board_plan(resolve(actx, name))
    for entry in plan:
        entry["address"] = str(ipaddress.ip_address(entry["address"]) + 100)
    assert npu_checks(actx, tmp_path, name, plan)["npu.nic_ip"]["status"] == "fail"
    for entry in plan:
        result = run_tool(
            actx,
            "hccn_tool",
            ["-i", str(entry["id"]), "-ip", "-s", "address", entry["address"], "netmask", entry["netmask"]],
            resolve(actx, name),
        )
        assert result.rc == 0, result.stderr
    assert npu_checks(actx, tmp_path, name, plan)["npu.nic_ip"]["status"] == "pass"


@pytest.mark.parametrize("nic_plan", [True, False], ids=["nic-plan", "no-nic-plan"])
def test_answers_cover_what_validation_runs(actx, monkeypatch, tmp_path, nic_plan):
    monkeypatch.setattr(prerender, "cfcore_templates", lambda: ())  # a node has no cfcore
    profile = resolve(actx, A3)
    hostvars = {"node_sku": SKU[A3], "sysfs_root": str(tmp_path / "sysroot")}
    if nic_plan:
        hostvars["hccn_devices"] = board_plan(profile)
    source = RenderedSource(actx, profile)
    validate_node(source, build_expected("node", hostvars), "quick")
    replayed = {argv for argv in source.ran if argv[0] in TOOLS}
    assert ("hccn_tool", "-i", "15", "-net_health", "-g") in replayed
    answered = {answer.argv for answer in prerender.render_answers(actx, profile)}
    assert replayed <= answered, sorted(replayed - answered)
    assert ("hccn_tool", "-i", "15", "-gateway", "-g") in answered  # what the hccn role reads too
    assert ("npu-smi", "info", "-t", "board", "-i", "8") not in answered


def test_shims_print_what_render_prints(node, no_fallback, monkeypatch, capsys, tmp_path):  # noqa: F811
    env, _ = node
    env.update(ascend_env(tmp_path))
    set_ctx = Context(env=dict(env))
    control.set_profile(set_ctx, A3)
    answers = prerender.render_answers(set_ctx, resolve(set_ctx, A3))
    assert len([answer for answer in answers if answer.argv[0] == "hccn_tool"]) == 16 * 5
    for answer in answers:
        second, result = shim_in_one_second(env, answer.argv)
        expected = render_command(monkeypatch, capsys, env, second, answer.argv)
        assert (result.returncode, result.stdout, result.stderr) == expected, answer.argv
