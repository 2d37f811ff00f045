"""Role exporters: argument specs, the dcgm-exporter counters file, and the role's own Jinja
(the systemd unit-include regex, the flags as systemd reads them, the checks of tasks/main.yml)
rendered by Ansible's Templar from the role's files, so the tests run what the role runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import role_specs
import yaml
from ansible._internal._templating._jinja_bits import TrustedAsTemplate
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

ROLE = Path(__file__).resolve().parents[3] / "roles" / "exporters"
COUNTERS = ROLE / "files" / "clusterforge-counters.csv"

# What the template exporters_dcgm_exporter_enabled renders to before Ansible checks the spec.
GOOD_INVENTORY = {"exporters_dcgm_exporter_enabled": True, "dcgm_exporter_version": "4.2.3-4.1.1"}

# The fields the alert rules (roles/prometheus) and the dashboards rely on.
REQUIRED_FIELDS = {
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
}


def _trusted(value):
    """YAML read by the tests, marked as the role's own templates (Ansible trusts role files)."""
    if isinstance(value, str):
        return TrustedAsTemplate().tag(value)
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    return value


def _load(relative: str):
    return _trusted(yaml.safe_load((ROLE / relative).read_text()))


def render(expression, escape_backslashes=True, **inventory):
    """`expression` templated with the role's defaults, Debian vars and vars/main.yml, then `inventory`."""
    variables = {
        **_load("defaults/main.yml"),
        **_load("vars/Debian.yml"),
        **_load("vars/main.yml"),
        "group_names": [],
        "ansible_managed": "Ansible managed",
        "ansible_facts": {"architecture": "x86_64", "os_family": "Debian", "distribution": "Debian"},
        **_trusted(inventory),
    }
    return Templar(loader=DataLoader(), variables=variables).template(
        _trusted(expression), escape_backslashes=escape_backslashes
    )


def render_template(name: str, **inventory) -> str:
    """templates/<name> as the template action renders a file (no backslash escaping)."""
    return render((ROLE / "templates" / name).read_text(), escape_backslashes=False, **inventory)


def derived(name: str, **inventory):
    return render(_load("vars/main.yml")[name], **inventory)


def finding(name: str, **inventory) -> str:
    """The finding `name` of the input check in tasks/main.yml for `inventory`: '' when it holds."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    checks = [task for task in tasks if task.get("name") == "Check what the role is asked to install"]
    assert len(checks) == 1, "no single input check in tasks/main.yml"
    return render(checks[0]["vars"][f"exporters__finding_{name}"], **inventory).strip()


def check_holds(name: str, **inventory) -> bool:
    return finding(name, **inventory) == ""


# ------------------------------------------------------------------ argument specs ----


def test_the_defaults_are_valid():
    assert role_specs.validate("exporters", GOOD_INVENTORY) == []


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("exporters_node_exporter_install_method", "snap", "exporters_node_exporter_install_method"),
        ("exporters_node_exporter_port", "ninety-one", "exporters_node_exporter_port"),
        ("exporters_dcgm_exporter_port", [9400], "exporters_dcgm_exporter_port"),
        ("exporters_systemd_units", {"slurmd": True}, "exporters_systemd_units"),
        (
            "exporters_node_exporter_extra_flags",
            {"--collector.ethtool": True},
            "exporters_node_exporter_extra_flags",
        ),
        ("exporters_dcgm_exporter_enabled", "sometimes", "exporters_dcgm_exporter_enabled"),
        ("validate_expected", ["/mnt/jfs"], "validate_expected"),
    ],
)
def test_bad_values_are_refused_naming_the_variable(name, value, words):
    errors = role_specs.validate("exporters", GOOD_INVENTORY, **{name: value})
    assert errors, f"{name}={value!r} was accepted"
    assert any(words in error for error in errors), errors


def test_the_archive_method_is_a_choice():
    assert (
        role_specs.validate("exporters", GOOD_INVENTORY, exporters_node_exporter_install_method="archive")
        == []
    )


def test_dcgm_exporter_is_enabled_on_gpu_nvidia_hosts_only():
    template = _load("defaults/main.yml")["exporters_dcgm_exporter_enabled"]
    assert render(template, group_names=["gpu_nvidia", "slurm_workers"]) is True
    assert render(template, group_names=["npu_ascend"]) is False


# ------------------------------------------------------------------ counters file ----


def counter_rows() -> list[tuple[int, list[str]]]:
    rows = []
    for number, line in enumerate(COUNTERS.read_text().splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            rows.append((number, [cell.strip() for cell in line.split(",", 2)]))
    return rows


def test_counters_rows_name_dcgm_fields_with_a_type_and_help():
    rows = counter_rows()
    assert rows
    for number, cells in rows:
        assert len(cells) == 3, f"{COUNTERS.name}:{number}: want FIELD, type, help; got {cells}"
        field, kind, help_text = cells
        assert re.fullmatch(r"DCGM_FI_[A-Z0-9_]+", field), f"{COUNTERS.name}:{number}: {field!r}"
        assert kind in {"gauge", "counter", "label"}, f"{COUNTERS.name}:{number}: type {kind!r}"
        assert help_text, f"{COUNTERS.name}:{number}: no help text"


def test_counters_name_each_field_once_and_cover_the_alert_rules():
    fields = [cells[0] for _, cells in counter_rows()]
    assert len(fields) == len(set(fields)), sorted(f for f in fields if fields.count(f) > 1)
    assert REQUIRED_FIELDS - set(fields) == set()


def test_counters_leave_out_profiling_fields():
    # DCGM_FI_PROF_* need the proprietary DCGM package, which role dcgm installs only on request.
    assert [cells[0] for _, cells in counter_rows() if cells[0].startswith("DCGM_FI_PROF_")] == []


# ------------------------------------------------------------- unit-include regex ----


def unit_include(**inventory) -> re.Pattern:
    # node_exporter anchors the regex: ^(?:REGEX)$.
    return re.compile(derived("exporters__unit_include", **inventory))


@pytest.mark.parametrize(
    "unit",
    [
        "nvidia-fabricmanager.service",
        "nvidia-dcgm.service",
        "nvidia-dcgm-exporter.service",
        "slurmd.service",
        "slurmctld.service",
        "munge.service",
        "ceph-osd@3.service",
        "ceph-mon@node1.service",
        "juicefs-shared.service",
        "redis-server.service",
        "prometheus.service",
        "prometheus-alertmanager.service",
        "npu-exporter.service",
        "clusterforge-healthcheck.service",
    ],
)
def test_the_default_regex_includes_the_stack_services(unit):
    assert unit_include().fullmatch(unit)


@pytest.mark.parametrize(
    "unit",
    ["ssh.service", "slurmd.socket", "xslurmd.service", "slurmd.service.d", "clusterforge-healthcheck.timer"],
)
def test_the_default_regex_leaves_out_everything_else(unit):
    assert not unit_include().fullmatch(unit)


def test_the_regex_is_built_from_the_list():
    assert derived("exporters__unit_include", exporters_systemd_units=["slurmd", "ceph-.+"]) == (
        "(slurmd|ceph-.+)[.]service"
    )


def test_the_flags_carry_port_textfile_dir_and_units():
    flags = derived(
        "exporters__node_flags",
        exporters_node_exporter_port=9101,
        monitoring_textfile_dir="/srv/textfile",
        exporters_systemd_units=["slurmd"],
        exporters_node_exporter_extra_flags=["--collector.ethtool"],
    )
    assert flags == [
        "--web.listen-address=:9101",
        "--collector.textfile.directory=/srv/textfile",
        # Upstream's exclusions: Debian's build would hide /mnt, where the shared mounts are.
        "--collector.filesystem.mount-points-exclude="
        "^/(dev|proc|run/credentials/.+|sys|var/lib/docker/.+|var/lib/containers/storage/.+)($|/)",
        "--collector.systemd",
        "--collector.systemd.unit-include=(slurmd)[.]service",
        "--collector.ethtool",
    ]


def test_an_empty_unit_list_leaves_the_systemd_collector_off():
    flags = derived("exporters__node_flags", exporters_systemd_units=[])
    assert not [flag for flag in flags if flag.startswith("--collector.systemd")]


# ----------------------------------------------------- flags as systemd reads them ----


def test_the_defaults_file_quadruples_backslashes():
    # EnvironmentFile unescapes one level inside "...", and ExecStart's $ARGS another.
    text = render_template(
        "prometheus-node-exporter.default.j2",
        exporters_systemd_units=[r"a\.b"],
    )
    (args,) = [line for line in text.splitlines() if line.startswith("ARGS=")]
    assert "--collector.systemd.unit-include=(a\\\\\\\\.b)[.]service" in args
    assert args.startswith('ARGS="--web.listen-address=:9100 ') and args.endswith('"')


def test_the_archive_unit_quotes_each_flag_and_escapes_dollar_percent_and_backslash():
    text = render_template(
        "node_exporter.service.j2",
        exporters_node_exporter_install_method="archive",
        exporters_node_exporter_archive_url="https://mirror.example/node_exporter-1.8.2.linux-amd64.tar.gz",
        exporters_systemd_units=[r"a\.b"],
        exporters_node_exporter_extra_flags=["--collector.filesystem.mount-points-exclude=^/(dev|sys)($|/)%"],
    )
    (exec_start,) = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert exec_start.startswith('ExecStart=/usr/local/bin/node_exporter "--web.listen-address=:9100" ')
    assert '"--collector.systemd.unit-include=(a\\\\.b)[.]service"' in exec_start
    assert '"--collector.filesystem.mount-points-exclude=^/(dev|sys)($$|/)%%"' in exec_start
    assert "node_exporter-1.8.2.linux-amd64" in text
    assert "User=node_exporter" in text


def test_the_dcgm_exporter_dropin_replaces_execstart():
    text = render_template("nvidia-dcgm-exporter.dropin.conf.j2")
    lines = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert lines == [
        "ExecStart=",
        "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/clusterforge-counters.csv -a :9400"
        ' "-r" "localhost:5555"',
    ]


# ------------------------------------------------------- checks of tasks/main.yml ----

ARCHIVE = {
    "exporters_node_exporter_install_method": "archive",
    "exporters_node_exporter_archive_url": "https://mirror.example/prom/node_exporter-1.8.2.linux-amd64.tar.gz",
    "exporters_node_exporter_archive_sha256": "ab" * 32,
}


def test_the_archive_check_accepts_a_release_tarball_with_its_digest():
    assert check_holds("archive", **ARCHIVE)


@pytest.mark.parametrize(
    "change",
    [
        {"exporters_node_exporter_archive_url": ""},
        {
            "exporters_node_exporter_archive_url": "https://mirror.example/node_exporter-1.8.2.linux-arm64.tar.gz"
        },
        {"exporters_node_exporter_archive_url": "https://mirror.example/node_exporter.tgz"},
        {"exporters_node_exporter_archive_sha256": ""},
        {"exporters_node_exporter_archive_sha256": "sha256:" + "ab" * 32},
    ],
)
def test_the_archive_check_refuses_a_wrong_url_arch_or_digest(change):
    assert "exporters_node_exporter_archive_url ending in" in finding("archive", **{**ARCHIVE, **change})


def test_rhel_has_no_package_method():
    check = "method"
    assert check_holds(check)
    redhat = _load("vars/RedHat.yml")
    assert not check_holds(check, **redhat)
    assert check_holds(check, **redhat, **ARCHIVE)


@pytest.mark.parametrize(
    ("units", "flags", "ok"),
    [
        (
            ["slurmd", "ceph-.+", r"a\.b"],
            ["--collector.ethtool", "--collector.netdev.device-exclude=^lo$"],
            True,
        ),
        (["slurmd", ""], [], False),
        (["slurm d"], [], False),
        (['slurmd"'], [], False),
        (["slurmd"], ["--collector.ethtool --collector.wifi"], False),
        (["slurmd"], ["collector.ethtool"], False),
    ],
)
def test_unit_regexes_and_flags_without_white_space_or_quotes(units, flags, ok):
    check = "flags"
    assert check_holds(check, exporters_systemd_units=units, exporters_node_exporter_extra_flags=flags) is ok


@pytest.mark.parametrize(
    ("version", "dcgm", "ok"),
    [
        ("4.1.1", None, True),
        ("4.2.3-4.1.1", "4.2.3", True),
        ("4.2.3-4.1.1", "4.2.3-1", True),
        ("4.2.3-4.1.1", "4.2.2", False),
        ("4.2.3-4.1.1", None, False),
        ("4.1", None, False),
        ("4.2.3-4.1.1-ubuntu22.04", "4.2.3", False),
    ],
)
def test_dcgm_exporter_version_is_paired_with_dcgm(version, dcgm, ok):
    inventory = {"dcgm_exporter_version": version, "exporters_dcgm_exporter_enabled": True}
    if dcgm is not None:
        inventory["dcgm_version"] = dcgm
    assert check_holds("dcgm_version", **inventory) is ok


def test_dcgm_exporter_version_needs_the_bom():
    assert 'dcgm_exporter_version is "not set"' in finding(
        "dcgm_version", exporters_dcgm_exporter_enabled=True
    )
    assert check_holds("dcgm_version", exporters_dcgm_exporter_enabled=False)


def test_the_package_version_is_the_exporter_part_of_the_tag():
    assert derived("exporters__dcgm_exporter_own_version", dcgm_exporter_version="4.2.3-4.1.1") == "4.1.1"
    assert derived("exporters__dcgm_exporter_own_version", dcgm_exporter_version="4.1.1") == "4.1.1"
