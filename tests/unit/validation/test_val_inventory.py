"""The validate command's inventory: Ansible's inventory API in-process, --limit by Ansible's pattern logic.

Nothing here connects to a node: the inventories are made in tmp_path, and the
CLI tests stop before any playbook runs.
"""

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
    with pytest.raises(InvalidInput, match="could not be read") as caught:
        load_inventory(broken)
    assert "broken.yml" in caught.value.message


def test_limit_keeps_ansible_patterns(inventory_dir):
    assert load_inventory(inventory_dir, "gpu_nvidia[0:1]").targets == ["gpu-01", "gpu-02"]
    assert load_inventory(inventory_dir, "gpu_nvidia[1]").targets == ["gpu-02"]
    assert load_inventory(inventory_dir, "gpu-0*,ctl-01").targets == ["gpu-01", "gpu-02", "ctl-01"]
    assert load_inventory(inventory_dir, "slurm_workers:&gpu_nvidia").targets == ["gpu-01", "gpu-02"]
    assert load_inventory(inventory_dir, "~gpu-0[2]").targets == ["gpu-02"]
    assert load_inventory(inventory_dir, "gpu-01,").targets == ["gpu-01"]  # a trailing comma widens nothing


@pytest.mark.parametrize(
    ("limit", "words"),
    [
        ("", "is empty"),
        ("   ", "is empty"),
        (",", "empty part"),
        (":", "empty part"),
        ("[", "unclosed bracket"),
        ("]", "unclosed bracket"),
        ("gpu_nvidia[0:1", "unclosed bracket"),
        ("gpu_nvidia[a]", "is not NAME[N] or NAME[N:M]"),
        ("!", "names no host or group"),
        ("~gpu[", "Ansible would drop part of it"),
        ("~gpu[,ctl-01", "not a valid regular expression"),
        ("gpu-01,nosuchhost", "'nosuchhost' matches no host"),
        ("gpu_nvidia:&slurm_controller", "selects no host"),
        ("gpu_nvidia[99]", "'gpu_nvidia[99]' selects no host"),
        ("gpu_nvidia[-3]", "'gpu_nvidia[-3]' selects no host"),
        ("all,!gpu_nvidia[2]", "'gpu_nvidia[2]' selects no host"),
        ("all:&gpu_nvidia[5]", "'gpu_nvidia[5]' selects no host"),
    ],
)
def test_malformed_or_empty_limit_is_refused(inventory_dir, limit, words):
    with pytest.raises(InvalidInput) as caught:
        load_inventory(inventory_dir, limit)
    assert words in caught.value.message and caught.value.fix


def test_validate_exits_2_on_a_widening_limit_before_running_anything(inventory_dir, monkeypatch, capsys):
    from clusterforge.main import main
    from clusterforge.validation import workflow

    def must_not_run(*args, **kwargs):
        raise AssertionError("the playbook ran with a malformed --limit")

    monkeypatch.setattr(workflow, "run_playbook", must_not_run)
    for limit in ("[", "gpu_nvidia[0:1", ""):
        with pytest.raises(SystemExit) as exc:
            main(
                ["validate", "-i", str(inventory_dir), "--limit", limit, "--out", str(inventory_dir / "out")]
            )
        assert exc.value.code == 2
        assert "--limit" in capsys.readouterr().err


def test_an_out_of_range_subscript_is_bad_input_not_an_internal_error(inventory_dir, monkeypatch, capsys):
    # Ansible raises AnsibleError for gpu_nvidia[99]: it was exit 1, "internal error: AnsibleError".
    from clusterforge.main import main
    from clusterforge.validation import workflow

    monkeypatch.setattr(workflow, "run_playbook", lambda *a, **k: pytest.fail("the playbook ran"))
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "validate",
                "-i",
                str(inventory_dir),
                "--limit",
                "gpu_nvidia[99]",
                "--out",
                str(inventory_dir / "o"),
            ]
        )
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "error: --limit 'gpu_nvidia[99]'" in err and "internal error" not in err
    assert "fix: gpu_nvidia has 2 host(s): subscripts count from 0, use gpu_nvidia[0] to gpu_nvidia[1]" in err
