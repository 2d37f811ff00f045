"""ppu.* checks: pass, fail, warn and error with evidence and remedies; wiring into validate_node."""

from __future__ import annotations

from pathlib import Path

import pytest
from cfcore.catalog import sku_spec
from cfcore.checks import CHECK_IDS, PPU_CHECKS
from cfcore.checks import ppu as checks
from cfcore.outputs import Output
from cfcore.parsers import parse

PPU = Path(__file__).resolve().parents[2] / "fixtures" / "ppu"
SKU = "alibaba-ppu-zw810e-16"


def out(kind: str, name: str, command: str) -> Output:
    raw = (PPU / name).read_text()
    return Output(command, "ok", text=raw, data=parse(kind, raw))


@pytest.fixture
def listed():
    return out("ppu-smi-list", "ppu_smi_L_zw810e_x16.txt", "ppu-smi -L")


@pytest.fixture
def detail():
    return out("ppu-smi-q", "ppu_smi_q_zw810e_x16.txt", "ppu-smi -q")


@pytest.fixture
def faulty():
    return out("ppu-smi-q", "ppu_smi_q_zw810e_x16_device_error.txt", "ppu-smi -q")


@pytest.fixture
def accel():
    return sku_spec(SKU)["accelerator"]


def test_sku_is_in_the_catalog_as_alibaba(accel):
    assert (accel["vendor"], accel["model"], accel["count"], accel["interconnect"]) == (
        "alibaba",
        "PPU-ZW810E",
        16,
        "pcie",
    )


def test_healthy_node_passes(listed, detail, accel):
    assert checks.ppu_tool(listed, detail)["status"] == "pass"
    assert checks.ppu_count(listed, accel)["status"] == "pass"
    assert checks.ppu_model(listed, accel)["status"] == "pass"
    health = checks.ppu_health(detail, listed)
    assert health["status"] == "pass" and "16 PPUs" in health["message"]
    sdk = checks.ppu_sdk_version(detail, accel, {"ppu_sdk_version": "2.1.0"})
    assert sdk["status"] == "pass" and "2.1.0-a5f865" in sdk["message"]


def test_count_fails_with_the_missing_devices_named(listed, accel):
    fewer = Output("ppu-smi -L", "ok", data={"ppus": listed.data["ppus"][:15]})
    result = checks.ppu_count(fewer, accel)
    assert result["status"] == "fail" and "only 15 of 16" in result["message"]
    assert len(result["evidence"]["lines"]) == 15 and "reseat" in result["remedy"]
    more = checks.ppu_count(listed, {**accel, "count": 8})
    assert more["status"] == "fail" and "node_sku" in more["remedy"]


def test_model_mismatch_fails(listed, accel):
    result = checks.ppu_model(listed, {**accel, "model": "PPU-ZW900"})
    assert result["status"] == "fail" and "PPU-ZW810E" in result["message"]


def test_device_error_fails_and_warning_is_listed(faulty, listed):
    result = checks.ppu_health(faulty, listed)
    assert result["status"] == "fail"
    assert "PPU 5 (0000:2c:00.0): 3 uncorrectable ECC errors" in result["message"]
    assert any("Health Critical" in line for line in result["evidence"]["lines"])
    assert "dmesg" in result["remedy"]


def test_warning_health_alone_warns(detail):
    data = {**detail.data, "ppus": [dict(p) for p in detail.data["ppus"]]}
    data["ppus"][2]["health"] = "Warning"
    result = checks.ppu_health(Output("ppu-smi -q", "ok", data=data))
    assert result["status"] == "warn" and "PPU 2" in result["message"]


def test_unknown_health_word_fails(detail):
    data = {**detail.data, "ppus": [dict(p) for p in detail.data["ppus"]]}
    data["ppus"][0]["health"] = "Fallen off the bus"
    assert checks.ppu_health(Output("ppu-smi -q", "ok", data=data))["status"] == "fail"


def test_no_health_anywhere_is_an_error_not_a_pass(detail):
    data = {**detail.data, "ppus": [{**p, "health": None} for p in detail.data["ppus"]]}
    result = checks.ppu_health(Output("ppu-smi -q", "ok", data=data))
    assert result["status"] == "error" and "format" in result["message"]


def test_list_and_detail_disagreeing_fails(listed, detail):
    data = {**detail.data, "ppus": detail.data["ppus"][:14]}
    result = checks.ppu_health(Output("ppu-smi -q", "ok", data=data), listed)
    assert result["status"] == "fail" and "lists 16 PPUs but ppu-smi -q details 14" in result["message"]


@pytest.mark.parametrize(
    ("bom", "status", "words"),
    [
        ({"ppu_sdk_version": "2.1.0-a5f865"}, "pass", "= BOM"),
        ({"ppu_sdk_version": "2.2.0"}, "fail", "is not the BOM's ppu_sdk_version 2.2.0"),
        ({"ppu_sdk_version": "2.1"}, "fail", "is not the BOM's"),
        ({}, "warn", "sets no ppu_sdk_version"),
    ],
)
def test_sdk_version_against_the_bom(detail, accel, bom, status, words):
    result = checks.ppu_sdk_version(detail, accel, bom)
    assert result["status"] == status and words in result["message"]


def test_sdk_older_than_the_skus_minimum_fails(detail, accel):
    result = checks.ppu_sdk_version(detail, {**accel, "min_driver": "2.2.0"}, {"ppu_sdk_version": "2.1.0"})
    assert result["status"] == "fail" and "older than the SKU's min_driver 2.2.0" in result["message"]


def test_sdk_not_reported_warns(detail, accel):
    data = {**detail.data, "sdk_version": None}
    result = checks.ppu_sdk_version(
        Output("ppu-smi -q", "ok", data=data), accel, {"ppu_sdk_version": "2.1.0"}
    )
    assert result["status"] == "warn" and "reports no SDK Version" in result["message"]


@pytest.mark.parametrize("state", ["not_found", "timeout", "unparsable", "not_captured", "refused"])
def test_unusable_output_is_an_error_everywhere(state, accel):
    bad = Output("ppu-smi -L", state, error=f"ppu-smi {state}")
    bad_q = Output("ppu-smi -q", state, error=f"ppu-smi {state}")
    for result in (
        checks.ppu_tool(bad, bad_q),
        checks.ppu_count(bad, accel),
        checks.ppu_model(bad, accel),
        checks.ppu_health(bad_q),
        checks.ppu_sdk_version(bad_q, accel, {}),
    ):
        assert result["status"] == "error", result
        assert result["remedy"]


def test_driver_failure_fails_the_tool_check(detail):
    failed = Output("ppu-smi -L", "failed", rc=1, error="ppu-smi -L exited 1: Failed to initialize HGML")
    result = checks.ppu_tool(failed, detail)
    assert result["status"] == "fail" and "alixpu" in result["remedy"]


def test_metrics(listed, faulty):
    found = checks.metrics(listed, faulty)
    assert found["ppu.count"] == 16 and found["ppu.ecc_uncorrectable_volatile_total"] == 3
    assert found["ppu.memory_total_mib_min"] == 97920 and found["ppu.temperature_max_c"] == 37.0


def test_check_ids_registered():
    assert PPU_CHECKS == ("ppu.tool", "ppu.count", "ppu.model", "ppu.health", "ppu.sdk_version")
    assert set(PPU_CHECKS) <= set(CHECK_IDS) and "ppu.support" not in CHECK_IDS


class FixtureSource:
    """A live-like source answering ppu-smi from the fixtures (chronyc and the rest: not installed)."""

    kind = "live"

    def __init__(self, answers: dict) -> None:
        self.answers = answers

    def run(self, argv, timeout: float = 30):
        key = tuple(argv)
        if key in self.answers:
            return self.answers[key]
        return 127, "", f"{argv[0]} not found"

    def read(self, path):
        return None

    def exists(self, path):
        return False

    def hostname(self):
        return "ppu-node"

    def file_for(self, argv):
        return None

    def sysfs_root(self, configured):
        return configured or "/"


def _validate(answers, bom=None):
    from cfcore.validate import validate_node

    expected = {"node_sku": SKU, "sku": sku_spec(SKU), "bom": bom or {"ppu_sdk_version": "2.1.0"}}
    result = validate_node(FixtureSource(answers), expected)
    return {c["id"]: c for c in result["checks"]}, result


def test_validate_node_runs_the_ppu_checks_on_alibaba_skus():
    answers = {
        ("ppu-smi", "-L"): (0, (PPU / "ppu_smi_L_zw810e_x16.txt").read_text(), ""),
        ("ppu-smi", "-q"): (0, (PPU / "ppu_smi_q_zw810e_x16_device_error.txt").read_text(), ""),
    }
    by_id, result = _validate(answers)
    assert {i: by_id[i]["status"] for i in PPU_CHECKS} == {
        "ppu.tool": "pass",
        "ppu.count": "pass",
        "ppu.model": "pass",
        "ppu.health": "fail",
        "ppu.sdk_version": "pass",
    }
    assert by_id["gpu.count"]["status"] == "skip" and by_id["npu.count"]["status"] == "skip"
    assert result["metrics"]["ppu.count"] == 16
    assert result["status"] == "fail"


def test_validate_node_without_ppu_smi_is_an_error_never_a_pass():
    by_id, _result = _validate({})
    assert all(by_id[i]["status"] == "error" for i in PPU_CHECKS)
    assert "install ppu-smi" in by_id["ppu.count"]["remedy"]


def test_other_vendors_skip_the_ppu_checks():
    from cfcore.validate import validate_node

    expected = {"node_sku": "cpu-generic", "sku": sku_spec("cpu-generic"), "bom": {}}
    result = validate_node(FixtureSource({}), expected)
    assert {c["id"]: c["status"] for c in result["checks"] if c["id"].startswith("ppu.")} == dict.fromkeys(
        PPU_CHECKS, "skip"
    )
