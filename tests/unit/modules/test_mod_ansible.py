"""node_validate and accelerator_facts run for real through Ansible on localhost.

One playbook (one Ansible start, ~3 s) runs every case: a capture directory, a
live run with fake vendor tools on PATH (as module.run_command would see them),
the same in check mode, a node missing nvidia-smi, bad parameters, and facts.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "checks"))
from chkdata import CAPTURES, h100_expected  # noqa: E402

HEALTHY = CAPTURES / "h100-healthy"
# The tools of the Python environment running the tests (a venv anywhere, not only .venv).
ENV_BIN = Path(sys.executable).parent


def fake_tools(bin_dir: Path, dcgmi_ran: Path) -> None:
    tools = {
        "chronyc": f"cat {HEALTHY}/chronyc-tracking.txt",
        # Records that it ran: check mode must never start this stress test.
        "dcgmi": f"touch {dcgmi_ran}; exit 1",
        "nvidia-smi": f'case "$*" in "-q -x") cat {HEALTHY}/nvidia-smi-q-x.xml;;'
        f' "nvlink -s") cat {HEALTHY}/nvidia-smi-nvlink-s.txt;; *) exit 2;; esac',
        "dmesg": f"cat {HEALTHY}/dmesg.txt",
        "lspci": f"cat {HEALTHY}/lspci-vvv-10de.txt",
        "ibstat": f"cat {HEALTHY}/ibstat.txt",
        "systemctl": "echo active",
        "modinfo": "echo NVIDIA",
        "npu-smi": "echo 'npu-smi: not on this node' >&2; exit 127",
        # One IPoIB interface up with its address: what `ip -j addr show` prints.
        "ip": f"cat {bin_dir}/ip-addr.json",
    }
    bin_dir.mkdir()
    ib0 = {
        "ifname": "ib0",
        "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
        "mtu": 2044,
        "operstate": "UP",
        "addr_info": [{"family": "inet", "local": "10.40.0.11", "prefixlen": 16}],
    }
    (bin_dir / "ip-addr.json").write_text(json.dumps([ib0]))
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)


def params(**changes) -> dict:
    expected = h100_expected(required_mounts=["/"], **changes)
    return {key: value for key, value in expected.items() if key != "sysfs_root"}


def ansible_env(path: str) -> dict:
    return {
        **os.environ,
        "PATH": path,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json",
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_LOCAL_TEMP": "/tmp/cf-ansible-local",
        "ANSIBLE_REMOTE_TEMP": "/tmp/cf-ansible-remote",
        "ANSIBLE_NOCOLOR": "1",
    }


@pytest.fixture(scope="module")
def play(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("modules")
    bin_dir = tmp / "bin"
    dcgmi_ran = tmp / "dcgmi-ran"
    fake_tools(bin_dir, dcgmi_ran)
    empty_bin = tmp / "empty-bin"
    empty_bin.mkdir()
    shutil.copy(bin_dir / "dmesg", empty_bin / "dmesg")
    # The live run's sysfs: nvidia_peermem loaded (gpu.peermem), as on a GPU node with HCAs.
    sysroot = tmp / "sysroot"
    (sysroot / "sys" / "module" / "nvidia_peermem").mkdir(parents=True)
    live = {**params(), "sysfs_root": str(sysroot)}
    # node_exporter textfile directories: one for the live run, one each run that must leave it empty.
    for name in ("textfile", "textfile-check", "textfile-capture", "textfile-only"):
        (tmp / name).mkdir()
    tasks = [
        {
            "name": "capture",
            "clusterforge.cluster.node_validate": {**params(), "capture_dir": str(CAPTURES / "h100-xid79")},
        },
        {
            "name": "live",
            "clusterforge.cluster.node_validate": live,
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "check_mode",
            "clusterforge.cluster.node_validate": live,
            "check_mode": True,
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "check_mode_full",
            "clusterforge.cluster.node_validate": {**live, "level": "full"},
            "check_mode": True,
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "no_tools",
            "clusterforge.cluster.node_validate": {**live, "sku": {**live["sku"], "hca": None}},
            "environment": {"PATH": f"{empty_bin}:/usr/bin:/bin"},
        },
        {
            "name": "fabric_only",
            "clusterforge.cluster.node_validate": {
                **live,
                "sysfs_root": str(tmp),  # no sys/module/nvidia_peermem here: not checked in this run
                "only_checks": ["ib.*", "roce.*"],
                "ipoib_interfaces": [{"name": "ib0", "address": "10.40.0.11/16"}],
                "roce": None,
            },
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "peermem_missing",
            "clusterforge.cluster.node_validate": {
                **live,
                "sysfs_root": str(tmp),
                "only_checks": ["gpu.peermem"],
            },
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "bad_ipoib",
            "clusterforge.cluster.node_validate": {
                **live,
                "ipoib_interfaces": [{"name": "ib0", "address": "x"}],
            },
            "ignore_errors": True,
        },
        {
            "name": "bad_level",
            "clusterforge.cluster.node_validate": {**live, "level": "thorough"},
            "ignore_errors": True,
        },
        {
            "name": "bad_sku",
            "clusterforge.cluster.node_validate": {**live, "sku": {"accelerator": {"vendor": "nvida"}}},
            "ignore_errors": True,
        },
        {
            "name": "metrics_live",
            "clusterforge.cluster.node_validate": {**live, "metrics_textfile_dir": str(tmp / "textfile")},
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "metrics_check_mode",
            "clusterforge.cluster.node_validate": {
                **live,
                "metrics_textfile_dir": str(tmp / "textfile-check"),
            },
            "check_mode": True,
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "metrics_capture",
            "clusterforge.cluster.node_validate": {
                **params(),
                "capture_dir": str(CAPTURES / "h100-xid79"),
                "metrics_textfile_dir": str(tmp / "textfile-capture"),
            },
        },
        {
            "name": "metrics_only_checks",
            "clusterforge.cluster.node_validate": {
                **live,
                "only_checks": ["node.*"],
                "metrics_textfile_dir": str(tmp / "textfile-only"),
            },
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "metrics_no_dir",
            "clusterforge.cluster.node_validate": {**live, "metrics_textfile_dir": str(tmp / "no-such-dir")},
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
        {
            "name": "facts",
            "clusterforge.cluster.accelerator_facts": {"sysfs_root": str(HEALTHY)},
            "environment": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
        },
    ]
    playbook = tmp / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    done = subprocess.run(
        [str(ENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)],
        env=ansible_env(f"{ENV_BIN}:{os.environ['PATH']}"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    results = {task["task"]["name"]: task["hosts"]["localhost"] for task in report["plays"][0]["tasks"]}
    results["dcgmi_ran"] = dcgmi_ran.exists()
    results["textfiles"] = {
        name: sorted(p.name for p in (tmp / name).iterdir())
        for name in ("textfile", "textfile-check", "textfile-capture", "textfile-only")
    }
    results["textfile_dir"] = str(tmp / "textfile")
    return results


def checks(result: dict) -> dict:
    return {check["id"]: check for check in result["node_result"]["checks"]}


def test_capture_dir_xid79(play):
    result = play["capture"]
    assert result["changed"] is False
    assert result["status"] == "fail"
    xid = checks(result)["gpu.xid"]
    assert xid["status"] == "fail"
    assert "NVRM: Xid (PCI:0000:5d:00): 79" in xid["evidence"]["lines"][0]
    assert result["node_result"]["host"] == "gpu-r1-n02"


def test_live_run_with_fake_tools_passes(play):
    result = play["live"]
    found = {i: c["status"] for i, c in checks(result).items() if c["status"] not in ("pass", "skip")}
    assert result["status"] == "pass", found
    assert checks(result)["gpu.kernel_modules"]["message"].startswith("proprietary")
    assert result["node_result"]["metrics"]["gpu.count"] == 8


def test_check_mode_runs_fully(play):
    result = play["check_mode"]
    assert result["changed"] is False and result["status"] == "pass"
    assert len(result["node_result"]["checks"]) == len(play["live"]["node_result"]["checks"])


def test_check_mode_at_level_full_never_starts_the_dcgm_stress_test(play):
    result = play["check_mode_full"]
    diag = checks(result)["gpu.dcgm_diag"]
    assert diag["status"] == "skip" and "not run in check mode" in diag["message"]
    assert play["dcgmi_ran"] is False
    assert result["status"] == "pass"


def test_fabric_only_run_checks_the_fabric_and_lists_the_rest_as_skipped(play):
    result = play["fabric_only"]
    found = checks(result)
    assert result["status"] == "pass", {i: c["status"] for i, c in found.items() if c["status"] != "skip"}
    assert found["ib.ipoib"]["status"] == "pass" and "ib0 10.40.0.11/16" in found["ib.ipoib"]["message"]
    assert found["ib.link_layer"]["status"] == "pass"
    assert (
        found["gpu.peermem"]["status"] == "skip" and "not in only_checks" in found["gpu.peermem"]["message"]
    )
    assert found["roce.qos"]["status"] == "skip"


def test_missing_peermem_fails_the_node(play):
    result = play["peermem_missing"]
    assert result["status"] == "fail"
    assert checks(result)["gpu.peermem"]["remedy"].startswith("load it: modprobe nvidia-peermem")


def test_bad_ipoib_plan_fails_the_module_naming_the_entry(play):
    assert play["bad_ipoib"]["failed"] is True
    assert "fabric_ipoib_interfaces[0].address 'x' is not IPv4/prefix" in play["bad_ipoib"]["msg"]


def test_node_without_nvidia_smi_is_error_not_pass(play):
    result = play["no_tools"]
    assert result["status"] == "error"
    tool = checks(result)["gpu.tool"]
    assert tool["status"] == "error" and "nvidia-smi not found on PATH" in tool["message"]


def test_bad_parameters_fail_the_module_with_a_clear_message(play):
    assert play["bad_level"]["failed"] is True
    assert "level" in play["bad_level"]["msg"] and "quick, full" in play["bad_level"]["msg"]
    assert play["bad_sku"]["failed"] is True
    assert "vendor" in play["bad_sku"]["msg"] and "'nvida'" in play["bad_sku"]["msg"]


def test_accelerator_facts(play):
    facts = play["facts"]["ansible_facts"]["clusterforge_accelerators"]
    assert facts["vendor"] == "nvidia"
    assert facts["accelerator_count"] == 8
    assert facts["driver_version"] == "535.183.01"
    assert facts["hca_count"] == 10
    assert facts["tools"]["npu-smi"] == "not_found"
    assert facts["kernel_module_flavour"] == "proprietary"


def test_ad_hoc_bad_parameter_exits_non_zero():
    done = subprocess.run(
        [
            str(ENV_BIN / "ansible"),
            "all",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-m",
            "clusterforge.cluster.node_validate",
            "-a",
            json.dumps({"node_sku": "x", "sku": {}, "level": "thorough"}),
        ],
        env={**ansible_env(os.environ["PATH"]), "ANSIBLE_STDOUT_CALLBACK": "default"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode != 0
    assert "value of level must be one of: quick, full, got: thorough" in done.stdout + done.stderr


def test_a_live_run_writes_its_metrics_file_and_still_changes_nothing(play):
    result = play["metrics_live"]
    assert result["changed"] is False and result["status"] == "pass"
    path = Path(play["textfile_dir"]) / "clusterforge_validation_quick.prom"
    assert result["metrics_file"] == str(path) and result["metrics_note"] is None
    assert play["textfiles"]["textfile"] == ["clusterforge_validation_quick.prom"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    lines = path.read_text().splitlines()
    assert 'clusterforge_validation_status{status="pass",level="quick"} 1' in lines
    assert 'clusterforge_validation_accelerators{vendor="nvidia",level="quick"} 8' in lines
    statuses = [line for line in lines if line.startswith("clusterforge_validation_check_status{")]
    assert len(statuses) == len(result["node_result"]["checks"])


def test_metrics_are_written_only_for_a_complete_live_run(play):
    assert play["live"]["metrics_file"] is None
    assert play["live"]["metrics_note"] == "metrics_textfile_dir is not set"
    for task, words in (
        ("metrics_check_mode", "check mode"),
        ("metrics_capture", "source is capture:"),
        ("metrics_only_checks", "only_checks"),
        ("metrics_no_dir", "no-such-dir does not exist (role exporters creates"),
    ):
        assert play[task]["metrics_file"] is None, task
        assert words in play[task]["metrics_note"], (task, play[task]["metrics_note"])
        assert play[task]["changed"] is False
    assert play["textfiles"]["textfile-check"] == []
    assert play["textfiles"]["textfile-capture"] == []
    assert play["textfiles"]["textfile-only"] == []


def test_node_validate_documents_every_option_and_return_value():
    """DOCUMENTATION and RETURN parse as YAML (ansible-doc needs it) and match ARGUMENT_SPEC."""
    tree = ast.parse((ROOT / "plugins" / "modules" / "node_validate.py").read_text())
    found = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    documentation = yaml.safe_load(found["DOCUMENTATION"].value)
    returned = yaml.safe_load(found["RETURN"].value)
    spec = ast.literal_eval(found["ARGUMENT_SPEC"])
    assert set(documentation["options"]) == set(spec)
    assert documentation["options"]["metrics_textfile_dir"]["type"] == spec["metrics_textfile_dir"]["type"]
    assert {"status", "node_result", "metrics_file", "metrics_note"} <= set(returned)


@pytest.mark.parametrize(
    "module", sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
)
def test_every_module_documentation_parses(module):
    """DOCUMENTATION, EXAMPLES and RETURN of every module are YAML (ansible-doc and ansible-lint read
    them; perf_run's did not parse once, and only ansible-lint's log said so)."""
    tree = ast.parse((ROOT / "plugins" / "modules" / f"{module}.py").read_text())
    found = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        if isinstance(node.value, ast.Constant)
    }
    documentation = yaml.safe_load(found["DOCUMENTATION"])
    assert documentation["module"] == module
    for name in ("EXAMPLES", "RETURN"):
        if name in found:
            yaml.safe_load(found[name])
