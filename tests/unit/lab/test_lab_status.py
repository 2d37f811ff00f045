"""`lab status` and `lab inventory` against a fake host."""

from __future__ import annotations

import shutil

import pytest
import yaml
from clusterforge.errors import EnvironmentNotReady, InvalidInput
from clusterforge.lab.status import lab_status, refresh_inventory
from clusterforge.lab.up import UpRequest, lab_up

SMALL = {"control": 1, "gpu": 1, "npu": 1, "storage": 0}


@pytest.fixture
def running_lab(ctx):
    return lab_up(ctx, UpRequest(name="lab", counts=dict(SMALL), profiles={"lab-npu-01": "910b-hbm-ecc"}))


def test_status_of_a_healthy_lab(ctx, running_lab):
    status = lab_status(ctx, "lab")
    assert status.healthy
    assert [(n.host, n.role, n.ip, n.state, n.systemd, n.ssh) for n in status.nodes] == [
        ("lab-ctl-01", "control", "10.89.100.11", "running", "running", "ok"),
        ("lab-gpu-01", "gpu", "10.89.100.12", "running", "running", "ok"),
        ("lab-npu-01", "npu", "10.89.100.13", "running", "running", "ok"),
    ]
    as_dict = status.to_dict()
    assert as_dict["healthy"] is True and as_dict["subnet"] == "10.89.100.0/24"
    assert as_dict["inventory"].endswith("inventories/lab")


def test_status_shows_stopped_missing_and_unreachable_nodes(ctx, host, running_lab):
    host.containers["cflab-lab-gpu-01"].state = "exited"
    del host.containers["cflab-lab-npu-01"]
    host.ssh_refuses.add("10.89.100.11")
    status = lab_status(ctx, "lab")
    assert not status.healthy
    by_host = {n.host: n for n in status.nodes}
    assert (by_host["lab-gpu-01"].state, by_host["lab-gpu-01"].ip, by_host["lab-gpu-01"].ssh) == (
        "exited",
        "10.89.100.12",  # from the record: podman shows no address for a stopped container
        "-",
    )
    assert by_host["lab-npu-01"].state == "missing"
    assert by_host["lab-ctl-01"].ssh == "ansible@10.89.100.11: Permission denied (publickey)."


def test_status_of_an_absent_lab(ctx):
    with pytest.raises(EnvironmentNotReady) as err:
        lab_status(ctx, "nolab")
    assert err.value.message == "lab 'nolab' is not up"
    assert "lab up --name nolab" in err.value.fix


def test_inventory_is_rebuilt_from_the_containers(ctx, host, checkout, running_lab):
    inventory = checkout / "inventories" / "lab"
    state = checkout / ".cache" / "lab" / "lab"
    shutil.rmtree(inventory)
    for name in ("known_hosts", "id_ed25519", "id_ed25519.pub"):
        (state / name).unlink()

    assert refresh_inventory(ctx, "lab") == inventory
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["hosts"]
    assert list(hosts) == ["lab-ctl-01", "lab-gpu-01", "lab-npu-01"]
    assert hosts["lab-npu-01"]["hwreplay_profile"] == "910b-hbm-ecc"  # the recorded override
    assert hosts["lab-gpu-01"]["ansible_host"] == "10.89.100.12"
    # a new key was made and installed; host keys were read again
    new_key = (state / "id_ed25519.pub").read_text().strip()
    assert all(c.authorized_keys.strip() == new_key for c in host.containers.values())
    assert "10.89.100.13 ssh-ed25519 AAAAkey-of-cflab-lab-npu-01" in (state / "known_hosts").read_text()


def test_inventory_of_a_lab_with_stopped_nodes_asks_for_up(ctx, host, running_lab):
    host.containers["cflab-lab-gpu-01"].state = "exited"
    with pytest.raises(EnvironmentNotReady, match="stopped nodes: cflab-lab-gpu-01") as err:
        refresh_inventory(ctx, "lab")
    assert "lab up --name lab" in err.value.fix


def test_inventory_refuses_containers_without_lab_labels(ctx, host, running_lab):
    del host.containers["cflab-lab-gpu-01"].labels["org.clusterforge.lab.role"]
    with pytest.raises(InvalidInput, match="cflab-lab-gpu-01 carries lab label 'lab' but not the role"):
        refresh_inventory(ctx, "lab")


def test_inventory_of_an_absent_lab(ctx):
    with pytest.raises(EnvironmentNotReady, match="is not up"):
        refresh_inventory(ctx, "lab")


def test_inventory_without_the_labs_record_takes_the_subnet_from_podman(ctx, checkout):
    counts = {**SMALL, "storage": 1}
    lab_up(ctx, UpRequest(name="lab", counts=counts, profiles={"lab-npu-01": "910b-hbm-ecc"}))
    (checkout / ".cache" / "lab" / "lab" / "lab.json").unlink()
    inventory = refresh_inventory(ctx, "lab")
    storage = yaml.safe_load((inventory / "group_vars" / "all" / "storage.yml").read_text())
    assert storage["ceph_public_network"] == "10.89.100.0/24"
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())["all"]["hosts"]
    assert hosts["lab-npu-01"]["hwreplay_profile"] == "910b-healthy"  # the override was in the record
