"""Module nvidia_cdi_spec: the CDI spec kept current through the refresh service or nvidia-ctk,
against fake nvidia-smi, nvidia-ctk and systemctl that log their calls."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from module_runner import run_module

FAKE = r"""#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
for last; do :; done
case "$(basename "$0") $1" in
  "nvidia-smi "*) [ -f "{state}/smi-fails" ] && {{ echo "NVIDIA-SMI has failed" >&2; exit 9; }}
                  printf '580.95.05\n580.95.05\n' ;;
  "nvidia-ctk cdi") out="${{3#--output=}}"; mkdir -p "$(dirname "$out")"; echo "cdiVersion: 0.5.0" > "$out" ;;
  "systemctl is-enabled"|"systemctl is-active") [ -f "{state}/$last" ] || exit 1 ;;
  "systemctl enable") touch "{state}/$last" ;;
  "systemctl start") echo "cdiVersion: 0.6.0" > "{state}/refreshed.yaml" ;;
esac
"""


@pytest.fixture
def node(tmp_path):
    bin_dir, state, units = tmp_path / "bin", tmp_path / "state", tmp_path / "units"
    for folder in (bin_dir, state, units):
        folder.mkdir()
    log = tmp_path / "calls.log"
    log.write_text("")
    for tool in ("nvidia-smi", "nvidia-ctk", "systemctl"):
        path = bin_dir / tool
        path.write_text(FAKE.format(log=log, state=state))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    paths = {
        "spec_path": str(tmp_path / "run/cdi/nvidia.yaml"),
        "record": str(tmp_path / "lib/nvidia-cdi.json"),
        "refresh_spec": str(state / "refreshed.yaml"),
        "static_specs": [str(tmp_path / "etc/cdi/nvidia.yaml")],
        "unit_dirs": [str(units)],
    }

    def run(**args):
        env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
        return run_module("nvidia_cdi_spec", {"toolkit_version": "1.17.8-1", **paths, **args}, env=env)

    def calls():
        return [line for line in log.read_text().splitlines() if line]

    return run, calls, paths, state, units


def test_generates_once_then_again_only_for_another_toolkit(node):
    run, calls, paths, _, _ = node
    first = run()
    assert first["method"] == "generate" and first["generated"] is True and first["changed"] is True
    assert first["driver_version"] == "580.95.05"
    assert json.loads(Path(paths["record"]).read_text()) == {
        "driver_version": "580.95.05",
        "spec": paths["spec_path"],
        "toolkit_version": "1.17.8-1",
    }
    again = run()
    assert again["changed"] is False
    assert sum(call.startswith("nvidia-ctk") for call in calls()) == 1
    assert run(toolkit_version="1.17.9-1")["generated"] is True


def test_check_mode_reads_but_writes_nothing(node):
    run, calls, paths, _, _ = node
    result = run(_ansible_check_mode=True)
    assert result["changed"] is True and result["generated"] is True
    assert not os.path.exists(paths["spec_path"]) and not os.path.exists(paths["record"])
    assert not any(call.startswith("nvidia-ctk") for call in calls())


def test_a_driver_that_does_not_answer_is_reported_not_failed(node):
    run, _, paths, state, _ = node
    (state / "smi-fails").write_text("")
    result = run()
    assert "failed" not in result and result["changed"] is False
    assert "NVIDIA-SMI has failed" in result["not_generated"]
    assert "CDI spec not generated" in str(result["warnings"])
    assert not os.path.exists(paths["spec_path"])


def test_the_refresh_service_replaces_static_specs_and_writes_the_spec(node):
    run, calls, paths, _, units = node
    for unit in ("nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service"):
        (units / unit).write_text("[Unit]\n")
    static = paths["static_specs"][0]
    Path(static).parent.mkdir(parents=True)
    Path(static).write_text("cdiVersion: 0.5.0\n")
    result = run()
    assert result["method"] == "refresh" and result["changed"] is True and result["generated"] is True
    assert result["removed"] == [static] and not os.path.exists(static)
    assert "systemctl enable --now nvidia-cdi-refresh.path" in calls()
    assert "systemctl enable nvidia-cdi-refresh.service" in calls()
    assert "systemctl start nvidia-cdi-refresh.service" in calls()
    assert run()["changed"] is False
