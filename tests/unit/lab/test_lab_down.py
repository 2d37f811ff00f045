"""`lab down`: removes exactly what belongs to the lab, is idempotent, keeps foreign things."""

from __future__ import annotations

from clusterforge.lab.down import lab_down
from clusterforge.lab.up import UpRequest, lab_up
from labfake import FakeContainer

SMALL = {"control": 1, "gpu": 1, "npu": 0, "storage": 0}


def up(ctx, name="lab"):
    return lab_up(ctx, UpRequest(name=name, counts=dict(SMALL)))


def test_down_removes_containers_volumes_network_state_and_inventory(ctx, host, checkout, tmp_path):
    up(ctx)
    host.volumes["cflab-lab-data"] = {"org.clusterforge.lab": "lab"}
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "lab-gpu-01").write_text("{}")
    (facts / "prod-gpu-01").write_text("{}")
    host.calls.clear()

    result = lab_down(ctx, "lab")

    assert host.podman_calls("rm") == [
        ("podman", "rm", "--force", "--volumes", "--time", "10", "cflab-lab-ctl-01", "cflab-lab-gpu-01")
    ]
    assert host.podman_calls("volume", "rm") == [("podman", "volume", "rm", "--force", "cflab-lab-data")]
    assert host.podman_calls("network", "rm") == [("podman", "network", "rm", "cflab-lab")]
    assert not host.containers and not host.volumes and set(host.networks) == {"podman"}
    assert not (checkout / ".cache" / "lab").exists()
    assert not (checkout / "inventories" / "lab").exists()
    # cached facts of the lab's hosts are stale now; other hosts' facts stay
    assert not (facts / "lab-gpu-01").exists() and (facts / "prod-gpu-01").exists()
    # Ansible's persistent SSH masters to the lab addresses are asked to exit
    exits = {call[-1] for call in host.commands("ssh") if "-O" in call}
    assert exits == {"ansible@10.89.100.11", "ansible@10.89.100.12"}
    assert result.containers == ["cflab-lab-ctl-01", "cflab-lab-gpu-01"]
    assert result.networks == ["cflab-lab"] and result.volumes == ["cflab-lab-data"]
    assert result.removed_anything


def test_down_detaches_the_storage_data_disks(ctx, host, checkout):
    lab_up(ctx, UpRequest(name="lab", counts={"control": 0, "gpu": 0, "npu": 0, "storage": 2}))
    assert len(host.loops) == 2
    result = lab_down(ctx, "lab")
    assert result.disks == ["/dev/loop3", "/dev/loop4"]
    assert host.loops == {} and not (checkout / ".cache" / "lab").exists()


def test_down_of_an_absent_lab_removes_nothing_and_succeeds(ctx, host):
    result = lab_down(ctx, "lab")
    assert not result.removed_anything
    assert not [c for c in host.calls if c[1] in ("rm", "volume", "network") and "rm" in c]


def test_down_twice_is_fine(ctx, host):
    up(ctx)
    assert lab_down(ctx, "lab").removed_anything
    assert not lab_down(ctx, "lab").removed_anything


def test_down_leaves_other_labs_and_foreign_objects_alone(ctx, host, checkout):
    up(ctx, "lab")
    up(ctx, "cftest")
    host.containers["molecule-node"] = FakeContainer("molecule-node", "n", "podman", "10.88.0.5", {}, "img")
    # a container that wears the label but not the cflab- prefix is not ours to remove
    host.containers["someone-else"] = FakeContainer(
        "someone-else", "x", "podman", "10.88.0.6", {"org.clusterforge.lab": "cftest"}, "img"
    )
    lab_down(ctx, "cftest")
    assert sorted(host.containers) == [
        "cflab-lab-ctl-01",
        "cflab-lab-gpu-01",
        "molecule-node",
        "someone-else",
    ]
    assert "cflab-lab" in host.networks and "cflab-cftest" not in host.networks
    assert (checkout / "inventories" / "lab" / "hosts.yml").is_file()
    assert (checkout / ".cache" / "lab" / "lab" / "lab.json").is_file()
    assert not (checkout / "inventories" / "lab-cftest").exists()


def test_down_keeps_an_inventory_it_did_not_generate(ctx, host, checkout, progress):
    handmade = checkout / "inventories" / "lab"
    handmade.mkdir(parents=True)
    (handmade / "hosts.yml").write_text("all: {}\n")
    lab_down(ctx, "lab")
    assert (handmade / "hosts.yml").is_file()
    assert "not generated for lab 'lab'; left in place" in progress.getvalue()


def test_down_works_when_the_record_is_corrupt(ctx, host, checkout):
    up(ctx)
    (checkout / ".cache" / "lab" / "lab" / "lab.json").write_text("{not json")
    lab_down(ctx, "lab")
    assert not host.containers and not (checkout / ".cache" / "lab").exists()
