"""clusterforge-healthcheck end to end: parameters file, validation (stand-in), scontrol (stand-in on PATH).

The stand-in scontrol records each argument vector and prints canned `scontrol show node -o`
output, so the tests see what a real scontrol would receive and when it is not called.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
from cfcore import healthcheck
from cfcore import validate as validate_module

SHOW_IDLE = "NodeName=gpu-01 Arch=x86_64 State=IDLE ThreadsPerCore=1 Partitions=gpu\n"
SHOW_DRAINED_OURS = (
    "NodeName=gpu-01 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 "
    "Reason=clusterforge-health: gpu.xid [root@2026-12-01T10:00:00]\n"
)
SHOW_DRAINED_OPERATOR = "NodeName=gpu-01 State=MIXED+DRAIN Reason=swap DIMM [admin@2026-12-01T09:00:00]\n"
FAKE_SCONTROL = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
if [ "$1" = show ]; then cat "{show}"; exit 0; fi
exit {update_rc}
"""


def result(status: str, bad=("gpu.xid",)) -> dict:
    checks = [{"id": "node.root_fs", "status": "pass"}]
    checks += [{"id": i, "status": status} for i in bad] if status in ("fail", "error") else []
    return {"node_sku": "cpu-generic", "level": "quick", "status": status, "checks": checks}


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node: parameters file, stand-in scontrol first on PATH, and a validation result to return."""

    class Node:
        params = tmp_path / "healthcheck.json"
        out = tmp_path / "state" / "last.json"
        log = tmp_path / "scontrol.log"
        show = tmp_path / "show.txt"

        def __init__(self):
            self.seen = []

        def set(self, status="pass", show=SHOW_IDLE, update_rc=0, bad=("gpu.xid",), **params):
            self.params.write_text(
                json.dumps(
                    {
                        "expected": {"node_sku": "cpu-generic"},
                        "level": "quick",
                        "scheduler": "slurm",
                        "node_name": "gpu-01",
                        **params,
                    }
                )
            )
            self.show.write_text(show)
            script = tmp_path / "bin" / "scontrol"
            script.parent.mkdir(exist_ok=True)
            script.write_text(FAKE_SCONTROL.format(log=self.log, show=self.show, update_rc=update_rc))
            script.chmod(0o755)

            def fake_validate(source, expected, level="quick", check_mode=False):
                self.seen.append((type(source).__name__, expected, level, check_mode))
                return result(status, bad)

            monkeypatch.setattr(validate_module, "validate_node", fake_validate)

        def run(self, *extra) -> int:
            return healthcheck.main(["--params", str(self.params), "--result", str(self.out), *extra])

        def calls(self) -> list:
            return self.log.read_text().splitlines() if self.log.exists() else []

    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return Node()


def test_a_failing_node_drains_itself_with_the_check_id(node, capsys):
    node.set("fail", bad=("gpu.xid", "gpu.ecc"))
    assert node.run() == 1
    assert node.calls() == [
        "show node -o gpu-01",
        "update NodeName=gpu-01 State=DRAIN Reason=clusterforge-health: gpu.xid,gpu.ecc",
    ]
    assert node.seen == [("LiveSource", {"node_sku": "cpu-generic"}, "quick", False)]
    record = json.loads(node.out.read_text())
    assert record["result"]["status"] == "fail"
    assert record["decision"]["action"] == "drain"
    assert record["decision"]["command"]["rc"] == 0
    assert stat.S_IMODE(node.out.stat().st_mode) == 0o600
    assert "fail gpu.xid,gpu.ecc; drain: clusterforge-health: gpu.xid,gpu.ecc" in capsys.readouterr().out


def test_already_drained_with_the_same_reason_calls_no_scontrol_update(node):
    node.set("fail", show=SHOW_DRAINED_OURS)
    assert node.run() == 1
    assert node.calls() == ["show node -o gpu-01"]


def test_a_healthy_node_resumes_only_its_own_drain(node):
    node.set("pass", show=SHOW_DRAINED_OURS)
    assert node.run() == 0
    assert node.calls()[1:] == ["update NodeName=gpu-01 State=RESUME"]
    node.log.unlink()
    node.set("warn", show=SHOW_DRAINED_OPERATOR)
    assert node.run() == 0
    assert node.calls() == ["show node -o gpu-01"]


def test_an_operator_drain_is_never_overwritten(node):
    node.set("error", show=SHOW_DRAINED_OPERATOR)
    assert node.run() == 1
    assert node.calls() == ["show node -o gpu-01"]
    assert json.loads(node.out.read_text())["decision"]["reason"].startswith("left alone")


def test_dry_run_prints_the_decision_and_changes_nothing(node, capsys):
    node.set("fail")
    assert node.run("--dry-run") == 1
    assert node.calls() == ["show node -o gpu-01"]
    assert not node.out.exists()
    printed = capsys.readouterr().out
    decision = json.loads(printed[: printed.rindex("}") + 1])
    assert (decision["action"], decision["reason"], decision["dry_run"]) == (
        "drain",
        "clusterforge-health: gpu.xid",
        True,
    )
    assert decision["node_state"]["state"] == "IDLE"


def test_a_failing_scontrol_update_is_exit_1_with_its_error(node, capsys):
    node.set("pass", show=SHOW_DRAINED_OURS, update_rc=1)
    assert node.run() == 1
    assert "State=RESUME: rc 1" in capsys.readouterr().err


def test_without_scontrol_an_unhealthy_node_still_tries_to_drain(node, monkeypatch, capsys):
    node.set("fail")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert node.run() == 1
    record = json.loads(node.out.read_text())["decision"]
    assert record["node_state"] is None and "scontrol show node" in record["node_state_problem"]
    assert record["action"] == "drain" and record["command"]["rc"] == 127


def test_no_scheduler_validates_and_records_only(node):
    node.set("fail", scheduler=None, node_name=None)
    assert node.run() == 1
    assert node.calls() == []
    assert json.loads(node.out.read_text())["decision"]["reason"] == "no scheduler configured"


def test_a_validation_past_its_budget_is_an_error_that_drains(node, monkeypatch):
    node.set("pass")
    monkeypatch.setattr(healthcheck, "VALIDATE_BUDGET_S", 0.2)

    def hang(*_args, **_kwargs):
        import time

        time.sleep(5)

    monkeypatch.setattr(validate_module, "validate_node", hang)
    assert node.run() == 1
    assert (
        node.calls()[-1]
        == "update NodeName=gpu-01 State=DRAIN Reason=clusterforge-health: healthcheck.timeout"
    )


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "does not exist; rerun role node_healthcheck"),
        ("{not json", "cannot be read as JSON"),
        ("[]", "must hold a JSON object, got list"),
        ('{"expected": {}, "argv": ["sh"]}', "unknown keys argv"),
        ('{"expected": "x"}', "'expected' must be the node_validate parameters"),
        ('{"expected": {}, "level": "full"}', "level must be quick"),
        ('{"expected": {}, "scheduler": "pbs"}', "scheduler must be \"slurm\" or null, got 'pbs'"),
        (
            '{"expected": {}, "scheduler": "slurm", "node_name": "n[1-9]"}',
            "node_name name 'n[1-9]' is not one Slurm",
        ),
    ],
)
def test_broken_parameters_exit_2_loudly_and_never_drain(node, capsys, content, words):
    node.set("fail")
    if content is None:
        node.params.unlink()
    else:
        node.params.write_text(content)
    assert node.run() == 2
    assert words in capsys.readouterr().err
    assert node.calls() == [] and not node.out.exists() and node.seen == []


def test_an_invalid_expectation_is_exit_2_not_a_drain(node, capsys):
    # The real validate_node (no stand-in): normalize refuses the expectation.
    node.params.write_text(
        json.dumps({"expected": {"node_sku": ""}, "scheduler": "slurm", "node_name": "gpu-01"})
    )
    assert node.run() == 2
    err = capsys.readouterr().err
    assert "cannot validate (InvalidExpectation: node_sku is missing" in err and "nothing drained" in err
    assert node.calls() == [] and not node.out.exists()


# ------------------------------------------------------ validation metrics ----


def live(status: str, bad=("gpu.xid",)) -> dict:
    return {
        **result(status, bad),
        "source": {"kind": "live", "path": None},
        "collected_at": "2026-12-01T10:00:00Z",
    }


@pytest.fixture
def textfile(tmp_path, node, monkeypatch):
    """node_exporter's textfile directory, and a validation that returns a live result."""
    folder = tmp_path / "textfile"
    folder.mkdir()

    def use(status="pass", bad=("gpu.xid",), **params):
        node.set(status, bad=bad, metrics_textfile_dir=str(folder), **params)
        monkeypatch.setattr(validate_module, "validate_node", lambda *_a, **_k: live(status, bad))
        return folder / "clusterforge_validation_quick.prom"

    return use


def test_each_run_writes_the_quick_metrics_file(node, textfile):
    prom = textfile("fail", bad=("gpu.xid",))
    assert node.run() == 1
    lines = prom.read_text().splitlines()
    assert 'clusterforge_validation_status{status="fail",level="quick"} 1' in lines
    assert (
        'clusterforge_validation_check_status{check="gpu.xid",area="gpu",status="fail",level="quick"} 1'
        in lines
    )
    assert stat.S_IMODE(prom.stat().st_mode) == 0o644
    record = json.loads(node.out.read_text())
    assert record["metrics"] == {"file": str(prom), "note": None}
    assert record["decision"]["action"] == "drain"  # the metrics change nothing in the decision


def test_a_metrics_file_that_cannot_be_written_changes_neither_decision_nor_exit(
    node, textfile, monkeypatch, capsys
):
    from cfcore import validation_metrics

    textfile("fail")

    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(validation_metrics, "write", full_disk)
    assert node.run() == 1
    assert node.calls()[-1] == "update NodeName=gpu-01 State=DRAIN Reason=clusterforge-health: gpu.xid"
    record = json.loads(node.out.read_text())
    assert record["metrics"]["file"] is None
    assert (
        "cannot write the metrics file" in record["metrics"]["note"]
        and "No space left" in record["metrics"]["note"]
    )
    assert "No space left on device" in capsys.readouterr().err


def test_a_missing_textfile_directory_is_noted_and_the_run_goes_on(node, textfile, tmp_path):
    prom = textfile("pass")
    prom.parent.rmdir()
    assert node.run() == 0
    note = json.loads(node.out.read_text())["metrics"]["note"]
    assert note.endswith("does not exist (role exporters creates it)")


def test_no_metrics_file_for_a_partial_run_or_a_dry_run(node, textfile):
    prom = textfile("pass", expected={"node_sku": "cpu-generic", "only_checks": ["node.*"]})
    assert node.run() == 0
    assert not prom.exists()
    assert "only_checks" in json.loads(node.out.read_text())["metrics"]["note"]
    prom = textfile("pass")
    assert node.run("--dry-run") == 0
    assert not prom.exists()


def test_without_metrics_textfile_dir_no_file_is_written(node):
    node.set("pass")
    assert node.run() == 0
    assert json.loads(node.out.read_text())["metrics"] == {
        "file": None,
        "note": "metrics_textfile_dir is not set",
    }


def test_a_validation_past_its_budget_is_an_error_metric(node, textfile, monkeypatch):
    prom = textfile("pass")
    monkeypatch.setattr(healthcheck, "VALIDATE_BUDGET_S", 0.2)

    def hang(*_args, **_kwargs):
        import time

        time.sleep(5)

    monkeypatch.setattr(validate_module, "validate_node", hang)
    assert node.run() == 1
    lines = prom.read_text().splitlines()
    assert 'clusterforge_validation_status{status="error",level="quick"} 1' in lines
    assert (
        'clusterforge_validation_check_status{check="healthcheck.timeout",area="healthcheck",'
        'status="error",level="quick"} 1'
    ) in lines


@pytest.mark.parametrize("value", ["relative/dir", 7])
def test_a_bad_metrics_textfile_dir_is_exit_2(node, capsys, value):
    node.set("fail", metrics_textfile_dir=value)
    assert node.run() == 2
    assert "metrics_textfile_dir must be an absolute path or null" in capsys.readouterr().err
    assert node.calls() == []
