"""Inventory reading through ansible-inventory (a real subprocess, about a second per call)."""

import textwrap

import pytest
from clusterforge.errors import InvalidInput
from clusterforge.validation.inventory import load_inventory
from clusterforge.validation.workflow import preflight

HOSTS = """\
all:
  children:
    gpu_nvidia:
      hosts:
        gpu-01: {ansible_host: 10.0.0.1, node_sku: hgx-h100-8gpu}
        gpu-02: {ansible_host: 10.0.0.2, node_sku: hgx-h100-8gpu}
    slurm_controller:
      hosts:
        ctl-01: {ansible_host: 10.0.0.10, node_sku: cpu-generic}
    slurm_workers:
      children:
        gpu_nvidia:
"""


@pytest.fixture
def inventory_dir(tmp_path):
    root = tmp_path / "inv"
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "hosts.yml").write_text(HOSTS)
    (root / "group_vars" / "all" / "versions.yml").write_text('nvidia_driver_version: "535.183.01"\n')
    (root / "group_vars" / "all" / "storage.yml").write_text(
        textwrap.dedent("""\
            validate_required_mounts: [/mnt/jfs]
            juicefs_meta_url: "tikv://{{ groups['slurm_controller'] | join(',') }}/jfs"
        """)
    )
    return root


def test_hosts_vars_and_groups(inventory_dir):
    inventory = load_inventory(inventory_dir)
    assert inventory.targets == ["gpu-01", "gpu-02", "ctl-01"]
    assert inventory.vars_of("gpu-01")["nvidia_driver_version"] == "535.183.01"
    assert inventory.group_hosts("slurm_workers") == ["gpu-01", "gpu-02"]  # through children
    assert inventory.groups_of("gpu-02") == ["gpu_nvidia", "slurm_workers"]
    # A templated variable the validation does not read never stops the pre-flight.
    assert preflight(inventory) == {
        "gpu-01": "hgx-h100-8gpu",
        "gpu-02": "hgx-h100-8gpu",
        "ctl-01": "cpu-generic",
    }


def test_limit_is_resolved_by_ansible(inventory_dir):
    assert load_inventory(inventory_dir, "gpu_nvidia:!gpu-02").targets == ["gpu-01"]
    with pytest.raises(InvalidInput, match="matches no host"):
        load_inventory(inventory_dir, "nosuchhost")


def test_preflight_names_every_bad_host_and_variable(inventory_dir):
    (inventory_dir / "host_vars").mkdir()
    (inventory_dir / "host_vars" / "gpu-02.yml").write_text("node_sku: hgx-h900-8gpu\n")
    (inventory_dir / "host_vars" / "ctl-01.yml").write_text("validate_skip_checks: gpu.mig\n")
    with pytest.raises(InvalidInput) as caught:
        preflight(load_inventory(inventory_dir))
    message = caught.value.message
    assert "2 host(s)" in message
    assert "host gpu-02: variable node_sku" in message and "hgx-h900-8gpu" in message
    assert "host ctl-01: variable validate_skip_checks must be a list" in message


def test_missing_and_broken_inventories_are_invalid_input(tmp_path):
    with pytest.raises(InvalidInput, match="does not exist"):
        load_inventory(tmp_path / "nowhere")
    broken = tmp_path / "broken.yml"
    broken.write_text("all:\n  hosts:\n    a: [\n")
    with pytest.raises(InvalidInput, match="could not be read"):
        load_inventory(broken)
