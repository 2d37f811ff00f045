"""`clusterforge upgrade plan` through the CLI's entry point: a real inventory check and inventory,
the installed versions from --installed or from a scripted playbook run (no node is contacted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from clusterforge.errors import InvalidInput
from clusterforge.main import main
from clusterforge.upgrade import versions
from clusterforge.upgrade.plan import PlanOptions, build_plan, plan_options_from
from clusterforge.validation.runner import PlaybookRun

HERE = Path(__file__).resolve().parent
TARGET = "570.133.20"
GPUS = {f"g0{i}": ("r1" if i <= 3 else "r2") for i in range(1, 7)}
INSTALLED = {"g01": "560.35.03", "g02": TARGET, "g03": None}


@pytest.fixture
def site(tmp_path, monkeypatch):
    """6 GPU hosts in 2 racks: g01-g04 Slurm partition h100, g05-g06 in no partition."""
    inventory = {
        "all": {
            "vars": {
                "nvidia_driver_version": TARGET,
                "cuda_version": "12.8",
                "dcgm_version": "4.1.1",
                "nccl_version": "2.25.1",
                "slurm_version": "24.05.4",
                "slurm_cluster_name": "cf-test",
                "slurm_munge_key": "0123456789abcdef0123456789abcdef",
                "slurm_partitions": [{"name": "h100", "nodes_group": "gpu_nvidia", "default": True}],
            },
            "children": {
                "gpu_nvidia": {
                    "hosts": {
                        host: {"node_sku": "hgx-h100-8gpu", "ansible_host": f"10.9.0.{n}", "rack": rack}
                        for n, (host, rack) in enumerate(GPUS.items(), 1)
                    }
                },
                "slurm_controller": {
                    "hosts": {"c01": {"node_sku": "cpu-generic", "ansible_host": "10.9.0.10", "rack": "r3"}}
                },
                "slurm_workers": {"hosts": dict.fromkeys(["g01", "g02", "g03", "g04"])},
            },
        }
    }
    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump(inventory))
    installed = tmp_path / "installed.yml"
    installed.write_text(yaml.safe_dump(INSTALLED))
    monkeypatch.chdir(tmp_path)
    # As in tests/unit/bringup: restored afterwards, so later tests' subprocesses do not inherit it.
    monkeypatch.setenv("ANSIBLE_CONFIG", str(HERE.parents[2] / "ansible.cfg"))
    return path, installed


def cli(*args) -> int:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    return exited.value.code


def plan_args(site, *more) -> list[str]:
    inventory, installed = site
    return ["upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--installed", str(installed), *more]


def test_the_table_shows_each_batch_current_and_the_lower_bound(site, capsys):
    assert cli(*plan_args(site)) == 0
    out = capsys.readouterr().out
    assert f"upgrade nvidia-driver to {TARGET}" in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["1", "2", "3"]
    assert "yes" in rows[0] and "g04" in rows[0]
    assert "g01, g05" in rows[1] and "slurm:h100, unscheduled" in rows[1] and "rack: 2" in rows[1]
    assert f"current (already at {TARGET}): 1" in out
    assert "batches: 3 (lower bound under these limits: 3)" in out


def test_json_is_the_plan_as_plan_json_holds_it(site, capsys):
    assert (
        cli(*plan_args(site, "--format", "json", "--canary", "0", "--partition-floor", "slurm:h100=100%"))
        == 0
    )
    plan = json.loads(capsys.readouterr().out)
    assert [b["hosts"] for b in plan["batches"]] == [["g05"], ["g06"]]
    assert sorted(plan["blocked"]) == ["g01", "g03", "g04"]
    assert "floor 100% keeps 4 of its 4 host(s)" in plan["blocked"]["g01"]
    assert plan["current"] == ["g02"]
    assert plan["partitions"]["slurm:h100"] == {"hosts": 4, "per_batch": 0}


def test_blocked_hosts_are_listed_with_their_reason_in_the_table(site, capsys):
    assert cli(*plan_args(site, "--floor", "100%")) == 0
    out = capsys.readouterr().out
    assert "blocked: 5 host(s), never in a batch under these limits:" in out
    assert "no host to upgrade nvidia-driver" in out


def test_limit_selects_the_hosts_planned(site, capsys):
    assert cli(*plan_args(site, "--format", "json", "--limit", "g05,g06")) == 0
    plan = json.loads(capsys.readouterr().out)
    assert sorted(plan["batches"][0]["hosts"] + plan["batches"][1]["hosts"]) == ["g05", "g06"]


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--max-unavailable", "ten", "Invalid value for '--max-unavailable': value 'ten' is not a limit"),
        ("--max-unavailable", "0", "Invalid value for '--max-unavailable': '0' lets no host go down"),
        ("--domain-share", "150%", "Invalid value for '--domain-share': value '150%' is more than 100%"),
        ("--floor", "-1", "Invalid value for '--floor'"),
        (
            "--partition-floor",
            "slurm:h100",
            "Invalid value for '--partition-floor': 'slurm:h100' is not PARTITION",
        ),
        ("--partition-floor", "slurm:h100=x", "Invalid value for '--partition-floor': slurm:h100 'x' is not"),
        ("--canary", "-1", "Invalid value for '--canary'"),
    ],
)
def test_a_bad_limit_is_exit_2_naming_the_option(site, capsys, option, value, expected):
    assert cli(*plan_args(site, option, value)) == 2
    assert expected in capsys.readouterr().err


def test_a_partition_the_plan_does_not_have_is_exit_2_with_the_known_ones(site, capsys):
    assert cli(*plan_args(site, "--partition-floor", "slurm:a100=50%")) == 2
    err = capsys.readouterr().err
    assert (
        "error: --partition-floor slurm:a100: no nvidia-driver host to plan is in partition 'slurm:a100'"
        in err
    )
    assert "fix: name one of: slurm:h100, unscheduled" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("[g01, g02]", "holds a list, not a mapping of host to version"),
        ("g01: {version: 1}", "the version of g01 is a dict"),
        ("g01: [unclosed", "is not readable JSON or YAML"),
    ],
)
def test_a_bad_installed_file_is_exit_2_naming_the_file(site, tmp_path, capsys, content, expected):
    inventory, _ = site
    bad = tmp_path / "bad.yml"
    if content is not None:
        bad.write_text(content)
    assert cli("upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--installed", str(bad)) == 2
    err = capsys.readouterr().err
    assert f"--installed {bad}" in err and expected in err
    assert "fix: " in err


def test_a_json_installed_file_is_read_too(site, tmp_path, capsys):
    inventory, _ = site
    installed = tmp_path / "installed.json"
    installed.write_text(json.dumps(dict.fromkeys(GPUS, TARGET)))
    assert cli("upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--installed", str(installed)) == 0
    assert "no host to upgrade nvidia-driver to 570.133.20 on" in capsys.readouterr().out


def test_without_installed_the_versions_come_from_the_playbook_stats(site, monkeypatch, capsys):
    inventory, _ = site
    calls = []

    def fake_run(playbook, inventory_path, private_dir, on_event, **kwargs):
        calls.append({"playbook": playbook.name, **kwargs})
        on_event("runner_on_unreachable", {"host": "g06"})
        data = {
            versions.INSTALLED_KEY: {"g01": "560.35.03", "g02": TARGET, "g03": None, "g04": "560.35.03"},
            versions.UNREAD_KEY: {"g05": "Module result deserialization failed"},
        }
        return PlaybookRun(rc=4, status="failed", stdout_path=None, stats={"artifact_data": data})

    monkeypatch.setattr(versions, "run_playbook", fake_run)
    assert cli("upgrade", "plan", "-i", str(inventory), "--to", TARGET, "--format", "json") == 0
    assert calls == [
        {
            "playbook": "upgrade_versions.yml",
            "extravars": {"upgrade_component": "nvidia-driver"},
            "limit": None,
            "check_mode": True,
        }
    ]
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert plan["current"] == ["g02"]
    planned = [host for batch in plan["batches"] for host in batch["hosts"]]
    assert sorted(planned) == ["g01", "g03", "g04", "g05", "g06"]  # unknown versions are planned
    assert "note: 1 host(s) unreachable, version unknown (still planned): g06" in captured.err
    assert "note: g05: version not read (Module result deserialization failed)" in captured.err


def test_no_version_read_at_all_is_exit_4(site, monkeypatch, capsys):
    inventory, _ = site
    monkeypatch.setattr(
        versions,
        "run_playbook",
        lambda *_args, **_kwargs: PlaybookRun(rc=4, status="failed", stdout_path=None, stats={}),
    )
    assert cli("upgrade", "plan", "-i", str(inventory), "--to", TARGET) == 4
    assert "upgrade_versions.yml read no installed version (failed, rc 4)" in capsys.readouterr().err


def test_another_command_reuses_the_options_and_builds_the_same_plan_options():
    kwargs = {
        "target": TARGET,
        "component": "cann",
        "canary": 2,
        "max_unavailable": "5%",
        "partition_max_unavailable": {},
        "floor": {"value": 90, "percent": True},  # as dataclasses.asdict() leaves a Limit
        "partition_floor": {"slurm:h100": "3"},
        "domain_share": "25%",
        "forks": 10,  # the other command's own option: ignored
    }
    options = plan_options_from(kwargs)
    assert options == PlanOptions(
        TARGET, "cann", 2, "5%", {}, "90%", {"slurm:h100": "3"}, "25%"
    )  # texts and Limits compare alike once parsed
    assert options.as_text()["floor"] == "90%"


def test_the_library_takes_an_inventory_path_too(site, monkeypatch, capsys):
    inventory, _ = site
    plan = build_plan(str(inventory), PlanOptions(TARGET), INSTALLED, limit="g01,g02,g03,g04")
    assert sorted(plan.hosts()) == ["g01", "g03", "g04"] and plan.current == ("g02",)
    with pytest.raises(InvalidInput, match="unknown component 'bios'"):
        build_plan(str(inventory), PlanOptions(TARGET, component="bios"), INSTALLED)
    monkeypatch.setattr(
        versions,
        "run_playbook",
        lambda *_args, **kwargs: PlaybookRun(
            rc=0, status="successful", stdout_path=None,
            stats={"artifact_data": {versions.INSTALLED_KEY: {"g05": "560.35.03", "g06": ""}}},
        ),
    )  # fmt: skip
    assert versions.installed_versions(str(inventory), "nvidia-driver", "g05,g06") == {
        "g05": "560.35.03",
        "g06": None,
    }
