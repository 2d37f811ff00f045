"""`clusterforge inventory check` on valid inventories: the example, INI and YAML forms, output formats."""

from __future__ import annotations

import json
import subprocess
import textwrap

from clusterforge.inventory_check import check_inventory
from clusterforge.paths import project_root
from invcase import EXAMPLE, Inventory, run_check

INI = """\
# A small site written in INI: the same model as the YAML example.
[gpu_nvidia]
gpu-a01 ansible_host=10.1.0.11 node_sku=hgx-h100-8gpu rack=a
gpu-a02 ansible_host=10.1.0.12 node_sku=hgx-h100-8gpu rack=a

[control]
ctl-a01 ansible_host=10.1.0.2 node_sku=cpu-generic rack=a

[k8s_control_plane]
ctl-a01

[k8s_workers]
gpu-a01
gpu-a02

[npu_ascend]
[npu_ppu]
[juicefs_meta]
[ceph_mon]
[ceph_osd]
[slurm_controller]
[slurm_workers]
[monitoring]
ctl-a01

[storage:children]
juicefs_meta
ceph_mon
ceph_osd

[all:vars]
# Quoted: Ansible reads an unquoted 12.4 as a number.
nvidia_driver_version=550.90.07
cuda_version="12.4"
nccl_version=2.21.5-1+cuda12.4
dcgm_version=3.3.9
k8s_version=1.30.6
monitoring_prometheus_version=2.54.1
"""


def test_example_inventory_is_valid(capsys):
    outcome = run_check(capsys, EXAMPLE, fmt="text")
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.out.strip().endswith("valid: 16 hosts, 0 errors, 0 warnings")


def test_example_hosts_file_alone_finds_group_vars_next_to_it(capsys):
    outcome = run_check(capsys, EXAMPLE / "hosts.yml")
    assert outcome.code == 0, outcome.out
    assert outcome.problems == []


def test_example_hosts_and_groups_as_designed():
    report = check_inventory([str(EXAMPLE)])
    assert report.valid and report.host_count == 16
    # Group structure the example promises (issue: groups at least these).
    from clusterforge.inventory_check.ansible_load import load_inventory

    loaded = load_inventory([str(EXAMPLE)])
    for group in ("gpu_nvidia", "npu_ascend", "npu_ppu", "storage", "juicefs_meta", "ceph_mon", "ceph_osd"):
        assert group in loaded.groups
    assert len(loaded.groups["gpu_nvidia"]) == 4 and len(loaded.groups["npu_ascend"]) == 2
    assert loaded.groups["storage"] >= loaded.groups["ceph_osd"] | loaded.groups["juicefs_meta"]
    racks = {entry.vars["rack"] for entry in loaded.hosts.values()}
    assert len(racks) >= 2
    npu = loaded.hosts["npu-r2-n01"].vars["hccn_devices"]
    assert [d["id"] for d in npu] == list(range(8))


def test_ini_inventory_with_only_warnings_is_valid(tmp_path, capsys):
    (tmp_path / "hosts").write_text(INI)
    outcome = run_check(capsys, tmp_path / "hosts")
    assert outcome.code == 0, outcome.out
    assert outcome.problems == []


def test_ini_unquoted_version_is_a_number(tmp_path, capsys):
    (tmp_path / "hosts").write_text(INI.replace('cuda_version="12.4"', "cuda_version=12.4"))
    outcome = run_check(capsys, tmp_path / "hosts")
    assert outcome.code == 2
    [problem] = outcome.errors()
    assert problem["rule"] == "bom.format" and problem["variable"] == "cuda_version"
    assert problem["location"].endswith("hosts:34 cuda_version")


def test_ini_syntax_error_names_file_and_line(tmp_path, capsys):
    (tmp_path / "hosts").write_text(
        INI.replace("rack=a\n\n[control]", "rack=a\nbroken line here=\n\n[control]", 1)
    )
    outcome = run_check(capsys, tmp_path / "hosts")
    assert outcome.code == 2
    [problem] = outcome.errors("inventory.parse")
    assert problem["location"].endswith("hosts:5") and "ini plugin" in problem["message"]


def test_single_yaml_file_inventory(tmp_path, capsys):
    inventory = textwrap.dedent(
        """\
        all:
          vars:
            k8s_version: "1.30.6"
          children:
            k8s_control_plane:
              hosts:
                cp-1: {ansible_host: 192.168.50.10, node_sku: cpu-generic, rack: "1"}
        """
    )
    (tmp_path / "site.yml").write_text(inventory)
    outcome = run_check(capsys, tmp_path / "site.yml")
    assert outcome.code == 0, outcome.out
    assert {p["rule"] for p in outcome.problems} == {"group.missing"}  # warnings only


def test_json_output_lists_problem_objects(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n01", "node_sku", "hgx-h1OO-8gpu")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    problems = json.loads(outcome.out)
    assert isinstance(problems, list) and len(problems) == 1
    problem = problems[0]
    assert set(problem) >= {"location", "host", "file", "variable", "message", "fix", "rule"}
    assert problem["host"] == "gpu-r1-n01" and problem["variable"] == "node_sku"
    assert problem["file"].endswith("inv/hosts.yml") and problem["line"]
    assert problem["rule"] == "sku.unknown" and "hgx-h100-8gpu" in problem["message"]


def test_text_output_is_location_problem_fix_then_summary(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n01", "ansible_host", "10.10.1")
    inv.set_host_var("gpu-r1-n02", "rack", ["r1"])
    outcome = run_check(capsys, inv.root, fmt="text")
    assert outcome.code == 2
    lines = outcome.out.strip().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(f"{inv.root / 'hosts.yml'}:")
    assert "[host gpu-r1-n01] ansible_host: ansible_host '10.10.1' is not an IPv4 address (" in lines[0]
    assert "[host gpu-r1-n02] rack: rack must be a name or number" in lines[1]
    assert lines[2].endswith("INVALID: 16 hosts, 2 errors, 0 warnings")
    assert "error: the inventory has 2 errors" in outcome.err


def test_every_problem_reported_at_once(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n01", "node_sku", "nope")
    inv.del_host_var("ctl-r3-n01", "rack")
    inv.set_var("group_vars/all/versions.yml", "cann_version", "8.5.0")
    inv.set_hccn("npu-r2-n02", inv.hccn("npu-r2-n02")[:6])
    outcome = run_check(capsys, inv.root)
    assert {p["rule"] for p in outcome.errors()} == {
        "sku.unknown",
        "vars.required",
        "bom.cann_driver",
        "framework.torch_npu_cann",  # the example's torch_npu is no release for CANN 8.5.0 either
        "hccn.count",
    }


def test_warnings_do_not_fail(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    # CUDA 12.4 on R535 runs by minor version compatibility: a warning, not an error.
    inv.set_var("group_vars/all/versions.yml", "cuda_version", "12.4")
    inv.set_var("group_vars/all/versions.yml", "nccl_version", "2.21.5-1+cuda12.4")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out
    [warning] = outcome.problems
    assert warning["rule"] == "bom.cuda_toolkit_driver" and warning["severity"] == "warning"
    assert "550.54.14" in warning["message"] and "CUDA Toolkit Release Notes" in warning["source"]


def test_group_override_of_the_bom_is_checked_per_host(tmp_path, capsys):
    """A newer driver for one group only (a B200 pilot) passes; the old one elsewhere is still checked."""
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n01", "node_sku", "hgx-b200-8gpu")
    for name, value in {
        "nvidia_driver_version": "570.124.06",
        "cuda_version": "12.8",
        "nccl_version": "2.25.1-1+cuda12.8",
    }.items():
        inv.set_var("host_vars/gpu-r1-n01.yml", name, value)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out


def test_lab_style_hosts_may_share_localhost_with_distinct_ports(tmp_path, capsys):
    (tmp_path / "hosts.yml").write_text(
        textwrap.dedent(
            """\
            all:
              vars: {k8s_version: "1.30.6"}
              children:
                k8s_control_plane:
                  hosts:
                    cf-lab-1: {ansible_host: 127.0.0.1, ansible_port: 2201, node_sku: cpu-generic, rack: lab}
                    cf-lab-2: {ansible_host: 127.0.0.1, ansible_port: 2202, node_sku: cpu-generic, rack: lab}
                    cf-lab-3: {ansible_host: 127.0.0.1, ansible_port: 2202, node_sku: cpu-generic, rack: lab}
                    localhost: {ansible_connection: local}
            """
        )
    )
    outcome = run_check(capsys, tmp_path / "hosts.yml")
    assert outcome.code == 2
    duplicates = outcome.errors("ip.duplicate")
    assert sorted(p["host"] for p in duplicates) == ["cf-lab-2", "cf-lab-3"]
    assert not [p for p in outcome.errors() if p["host"] == "localhost"]


def test_several_sources_make_one_inventory(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    extra = tmp_path / "extra.yml"
    extra.write_text(
        "gpu_nvidia:\n  hosts:\n"
        "    gpu-r1-n09: {ansible_host: 10.10.1.14, node_sku: hgx-h100-8gpu, rack: r1}\n"
    )
    outcome = run_check(capsys, inv.root, extra)
    assert outcome.code == 2
    duplicates = outcome.errors("ip.duplicate")
    assert sorted(p["host"] for p in duplicates) == ["gpu-r1-n04", "gpu-r1-n09"]
    assert any(p["file"].endswith("extra.yml") for p in duplicates)


def test_missing_source_is_invalid_input(tmp_path, capsys):
    outcome = run_check(capsys, tmp_path / "nowhere")
    assert outcome.code == 2
    assert "inventory source not found" in outcome.err and "nowhere" in outcome.err


def test_empty_inventory_is_invalid(tmp_path, capsys):
    (tmp_path / "hosts.yml").write_text("all:\n  children:\n    gpu_nvidia:\n")
    outcome = run_check(capsys, tmp_path / "hosts.yml")
    assert outcome.code == 2
    assert [p["rule"] for p in outcome.errors()] == ["inventory.empty"]


def test_internal_error_exits_1(monkeypatch, capsys, tmp_path):
    import clusterforge.inventory_check as package

    def explode(sources, allow_scripts=False):
        raise RuntimeError("boom")

    monkeypatch.setattr(package, "check_inventory", explode)
    outcome = run_check(capsys, tmp_path)
    assert outcome.code == 1 and "internal error: RuntimeError: boom" in outcome.err


def test_ansible_inventory_graph_reads_the_example():
    """The example is a plain Ansible inventory: ansible-inventory parses it with the project ansible.cfg."""
    from clusterforge.ansible_env import ansible_tool

    binary = ansible_tool("ansible-inventory")
    result = subprocess.run(
        [binary, "-i", str(EXAMPLE), "--graph"],
        capture_output=True,
        text=True,
        cwd=project_root(),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for group in (
        "@gpu_nvidia:",
        "@npu_ascend:",
        "@npu_ppu:",
        "@ceph_mon:",
        "@slurm_workers:",
        "@monitoring:",
    ):
        assert group in result.stdout


def test_templates_are_rendered_per_host(tmp_path, capsys):
    """A group-wide template reading host variables (through another template) gives each host its value."""
    inv = Inventory(tmp_path / "inv")
    inv.set_var("group_vars/gpu_nvidia.yml", "sku_alias", "{{ gpu_sku }}")
    inv.set_var("group_vars/gpu_nvidia.yml", "gpu_sku", "hgx-h100-8gpu")
    for host in ("gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03", "gpu-r1-n04"):
        inv.set_host_var(host, "node_sku", "{{ sku_alias }}")
    inv.set_host_var("gpu-r1-n03", "gpu_sku", "hgx-h100-8gpx")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    assert [p["host"] for p in outcome.errors()] == ["gpu-r1-n03"]
    assert "unknown SKU 'hgx-h100-8gpx'" in outcome.errors()[0]["message"]


def test_vaulted_vars_file_needs_the_vault_password(tmp_path, capsys, monkeypatch):
    from ansible import constants
    from ansible.parsing.vault import VaultLib, VaultSecret

    inv = Inventory(tmp_path / "inv")
    secret = VaultSecret(b"s3cret")
    vaulted = VaultLib([("default", secret)]).encrypt("monitoring_grafana_password: hunter2\n", secret)
    inv.path("group_vars/all/vault.yml").write_bytes(vaulted)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    [problem] = outcome.errors("vars.load")
    assert (
        "group_vars/all/vault.yml" in problem["location"] and "ANSIBLE_VAULT_PASSWORD_FILE" in problem["fix"]
    )

    password_file = tmp_path / "vault-pass"
    password_file.write_text("s3cret\n")
    monkeypatch.setattr(constants, "DEFAULT_VAULT_PASSWORD_FILE", str(password_file))
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out


def test_a_variable_set_differently_in_two_group_vars_all_files_warns(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    cuda = inv.load("group_vars/all/versions.yml")["cuda_version"]
    inv.set_var("group_vars/all/zz-site.yml", "cuda_version", cuda)  # the same value: fine
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0 and outcome.problems == [], outcome.out
    inv.set_var("group_vars/all/zz-site.yml", "cuda_version", "12.9")
    outcome = run_check(capsys, inv.root)
    [problem] = [p for p in outcome.problems if p["rule"] == "vars.conflict"]
    assert problem["severity"] == "warning" and problem["variable"] == "cuda_version"
    assert "group_vars/all/versions.yml" in problem["message"]
    assert "group_vars/all/zz-site.yml" in problem["message"]
    assert problem["file"].endswith("group_vars/all/zz-site.yml") and problem["line"] == 1


def test_a_rack_that_is_no_label_value_is_an_error(tmp_path, capsys):
    inv = Inventory(tmp_path / "inv")
    inv.set_host_var("gpu-r1-n01", "rack", "r 1")
    inv.set_host_var("gpu-r1-n02", "rack", "r;1")
    inv.set_host_var("gpu-r1-n03", "rack", "räck-1")
    inv.set_host_var("gpu-r1-n04", "rack", 7)  # a number is a name as written
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    found = {p["host"]: p for p in outcome.errors("host.rack")}
    assert set(found) == {"gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03"}, outcome.out
    assert "'r 1' is not a valid name for Slurm and Kubernetes" in found["gpu-r1-n01"]["message"]
    assert "'r-1'" in found["gpu-r1-n01"]["fix"]
