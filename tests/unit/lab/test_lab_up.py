"""`lab up` against a fake host: what it creates, what it writes, how it fails and cleans up."""

from __future__ import annotations

import json

import pytest
import yaml
from clusterforge.errors import EXIT_ENV, EXIT_INVALID, EnvironmentNotReady, InvalidInput
from clusterforge.lab.podman import PodmanError
from clusterforge.lab.up import UpRequest, lab_up
from labfake import IMAGE, route_line

ALL_DEFAULT = {"control": None, "gpu": None, "npu": None, "storage": None}
SMALL = {"control": 1, "gpu": 1, "npu": 0, "storage": 0}


def request(name="lab", counts=None, **kwargs) -> UpRequest:
    return UpRequest(name=name, counts=dict(counts or ALL_DEFAULT), **kwargs)


def created_nothing(host, checkout, name="lab") -> bool:
    return (
        not host.containers
        and set(host.networks) == {"podman"}
        and not (checkout / ".cache" / "lab" / name).exists()
        and not (checkout / "inventories" / name).exists()
    )


def test_default_lab_end_to_end(ctx, host, checkout):
    result = lab_up(ctx, request())

    assert host.podman_calls("network", "create") == [
        ("podman", "network", "create", "--driver", "bridge", "--subnet", "10.89.100.0/24",
         "--gateway", "10.89.100.1", "--label", "org.clusterforge.lab=lab", "cflab-lab"),
    ]  # fmt: skip
    runs = host.podman_calls("run")
    assert [call[call.index("--name") + 1] for call in runs] == [
        "cflab-lab-ctl-01",
        "cflab-lab-gpu-01",
        "cflab-lab-gpu-02",
        "cflab-lab-npu-01",
        "cflab-lab-sto-01",
    ]
    gpu2 = host.containers["cflab-lab-gpu-02"]
    assert (gpu2.hostname, gpu2.ip, gpu2.network, gpu2.image) == (
        "lab-gpu-02",
        "10.89.100.13",
        "cflab-lab",
        IMAGE,
    )
    assert gpu2.labels == {
        "org.clusterforge.lab": "lab",
        "org.clusterforge.lab.role": "gpu",
        "org.clusterforge.lab.host": "lab-gpu-02",
        "org.clusterforge.lab.index": "2",
    }
    # each node resolves the four others by inventory hostname
    gpu2_run = runs[2]
    add_hosts = [gpu2_run[i + 1] for i, arg in enumerate(gpu2_run) if arg == "--add-host"]
    assert add_hosts == [
        "lab-ctl-01:10.89.100.11",
        "lab-gpu-01:10.89.100.12",
        "lab-npu-01:10.89.100.14",
        "lab-sto-01:10.89.100.15",
    ]

    state = checkout / ".cache" / "lab" / "lab"
    public_key = (state / "id_ed25519.pub").read_text().strip()
    assert all(c.authorized_keys.strip() == public_key for c in host.containers.values())
    known_hosts = (state / "known_hosts").read_text().splitlines()
    assert "10.89.100.13 ssh-ed25519 AAAAkey-of-cflab-lab-gpu-02" in known_hosts
    assert len(known_hosts) == 10  # 2 host keys x 5 nodes
    assert (state / "known_hosts").stat().st_mode & 0o777 == 0o600
    # a real SSH login (with sudo) was tried on every node, strictly checking host keys
    probed = {call[-2] for call in host.commands("ssh") if call[-1] == "sudo -n true"}
    assert probed == {f"ansible@10.89.100.{i}" for i in range(11, 16)}

    assert json.loads((state / "lab.json").read_text()) == {
        "name": "lab",
        "counts": {"control": 1, "gpu": 2, "npu": 1, "storage": 1},
        "subnet": "10.89.100.0/24",
        "image": IMAGE,
        "profiles": {},
    }
    inventory = checkout / "inventories" / "lab"
    assert result.inventory == inventory
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    assert sorted(hosts["all"]["hosts"]) == [
        "lab-ctl-01",
        "lab-gpu-01",
        "lab-gpu-02",
        "lab-npu-01",
        "lab-sto-01",
    ]
    assert sorted(hosts["all"]["children"]["gpu_nvidia"]["hosts"]) == ["lab-gpu-01", "lab-gpu-02"]
    connection = yaml.safe_load((inventory / "group_vars" / "all" / "connection.yml").read_text())
    assert connection["ansible_ssh_private_key_file"] == str(state / "id_ed25519")
    assert result.created == [c for c in host.containers] and result.started == []
    assert not host.commands("ansible-playbook")  # the checkout has no tests/hwreplay/install.yml


def test_storage_nodes_get_a_sparse_data_disk_on_a_loop_device(ctx, host, checkout):
    lab_up(ctx, request())
    image = checkout / ".cache" / "lab" / "lab" / "disks" / "lab-sto-01-vdb.img"
    assert host.loops == {"/dev/loop3": str(image)}
    sto = host.containers["cflab-lab-sto-01"]
    assert sto.devices == ["/dev/loop3:/dev/vdb:rwm"]
    assert sto.labels["org.clusterforge.lab.disk"] == "/dev/loop3"
    assert image.stat().st_size == 20 * 1024**3 and image.stat().st_blocks == 0  # sparse
    assert "SYS_ADMIN" not in sto.caps  # BlueStore on the raw device needs no mount(2)


def test_boot_wait_polls_systemd_until_every_node_runs(ctx, host, clock):
    host.boot_polls = 3
    lab_up(ctx, request(counts=SMALL))
    polls = [c for c in host.podman_calls("exec") if c[-2:] == ("systemctl", "is-system-running")]
    assert len(polls) == 2 * 4  # 3 x "starting" then "running", per node
    assert clock.slept == pytest.approx(1.5)


def test_auto_subnet_skips_podman_networks_and_host_routes(ctx, host, routes):
    host.networks["other"] = {"name": "other", "subnets": [{"subnet": "10.89.100.0/24"}], "labels": {}}
    routes.write_text(routes.read_text() + route_line("eth1", "10.89.101.0", "255.255.255.0") + "\n")
    result = lab_up(ctx, request(counts=SMALL))
    assert result.spec.subnet == "10.89.102.0/24"
    assert host.containers["cflab-lab-ctl-01"].ip == "10.89.102.11"


def test_explicit_subnet_that_clashes_is_refused_before_anything_is_made(ctx, host, checkout):
    with pytest.raises(InvalidInput) as err:
        lab_up(ctx, request(counts=SMALL, subnet="192.168.1.0/24"))
    assert err.value.exit_code == EXIT_INVALID
    assert "overlaps host route via eth0 (192.168.1.0/24)" in err.value.message
    assert "--subnet 10.89.100.0/24" in err.value.fix
    assert created_nothing(host, checkout)


def test_not_root_is_an_environment_error(ctx, host, checkout):
    ctx.geteuid = lambda: 1000
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request())
    assert err.value.exit_code == EXIT_ENV
    assert "uid 1000" in err.value.message and "sudo" in err.value.fix
    assert host.calls == []


def test_missing_podman_says_how_to_install_it(ctx, host):
    ctx.which = lambda tool: None if tool == "podman" else f"/usr/bin/{tool}"
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request())
    assert err.value.message == "podman not found on PATH"
    assert err.value.fix == "run scripts/setup-host.sh as root"
    assert host.calls == []


def test_image_not_built(ctx, host, checkout):
    host.images.clear()
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request())
    assert f"the node image {IMAGE} is not built" in err.value.message
    assert "scripts/build-node-image.sh" in err.value.fix
    assert created_nothing(host, checkout)


def test_image_out_of_date(ctx, host, checkout):
    host.wanted_hash = "0000111122223333"
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request())
    assert "out of date" in err.value.message and "0000111122223333" in err.value.message
    assert "scripts/build-node-image.sh" in err.value.fix
    assert created_nothing(host, checkout)


def test_a_custom_image_must_exist_but_is_not_hash_checked(ctx, host):
    with pytest.raises(EnvironmentNotReady, match="given with --image"):
        lab_up(ctx, request(counts=SMALL, image="localhost/mine:1"))
    host.images["localhost/mine:1"] = {}
    lab_up(ctx, request(counts=SMALL, image="localhost/mine:1"))
    assert not [c for c in host.calls if c[0].endswith("build-node-image.sh") and "mine" in str(c)]
    assert host.containers["cflab-lab-ctl-01"].image == "localhost/mine:1"


def test_failure_midway_removes_everything_the_run_created(ctx, host, checkout, progress):
    host.fail_run_of.add("cflab-lab-npu-01")
    with pytest.raises(PodmanError) as err:
        lab_up(ctx, request())
    assert "cflab-lab-npu-01" in err.value.message
    assert host.podman_calls("rm") == [
        ("podman", "rm", "--force", "--volumes", "--time", "10", "cflab-lab-ctl-01", "cflab-lab-gpu-01",
         "cflab-lab-gpu-02"),
    ]  # fmt: skip
    assert created_nothing(host, checkout)
    assert "removed what this run had created" in progress.getvalue()


def test_failure_after_the_disks_were_attached_detaches_them(ctx, host, checkout):
    host.ssh_refuses.add("10.89.100.15")
    with pytest.raises(EnvironmentNotReady):
        lab_up(ctx, request(timeout_s=5))
    assert host.loops == {}
    assert created_nothing(host, checkout)


def test_keep_on_failure_leaves_the_lab_for_debugging(ctx, host, progress):
    host.fail_run_of.add("cflab-lab-npu-01")
    with pytest.raises(PodmanError):
        lab_up(ctx, request(keep_on_failure=True))
    assert sorted(host.containers) == ["cflab-lab-ctl-01", "cflab-lab-gpu-01", "cflab-lab-gpu-02"]
    assert "cflab-lab" in host.networks
    assert "--keep-on-failure" in progress.getvalue()


def test_boot_timeout_names_the_late_nodes_and_cleans_up(ctx, host, checkout):
    host.boot_polls = 10**6
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request(counts=SMALL, timeout_s=30))
    assert "lab-ctl-01 (starting)" in err.value.message and "lab-gpu-01 (starting)" in err.value.message
    assert "--timeout" in err.value.fix
    assert created_nothing(host, checkout)


def test_emergency_mode_fails_at_once(ctx, host, clock):
    host.boot_result = "maintenance"
    with pytest.raises(EnvironmentNotReady, match="did not boot: systemd is in state 'maintenance'"):
        lab_up(ctx, request(counts=SMALL))
    assert clock.slept == pytest.approx(0.5)  # one poll round of "starting", then the verdict


def test_degraded_nodes_are_accepted_with_a_warning(ctx, host, progress):
    host.boot_result = "degraded"
    lab_up(ctx, request(counts=SMALL))
    assert "lab-ctl-01: systemd is degraded (failed: ssh-hostkeys.service)" in progress.getvalue()


def test_ssh_that_never_works_names_host_address_and_reason(ctx, host, checkout):
    host.ssh_refuses.add("10.89.100.12")
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request(counts=SMALL, timeout_s=20))
    assert (
        "lab-gpu-01 (10.89.100.12): ansible@10.89.100.12: Permission denied (publickey)." in err.value.message
    )
    assert "podman exec cflab-lab-gpu-01 systemctl status ssh" in err.value.fix
    assert created_nothing(host, checkout)


def test_up_again_completes_the_lab(ctx, host, checkout):
    lab_up(ctx, request())
    del host.containers["cflab-lab-gpu-02"]
    host.containers["cflab-lab-sto-01"].state = "exited"
    host.calls.clear()

    result = lab_up(ctx, request())
    assert result.created == ["cflab-lab-gpu-02"] and result.started == ["cflab-lab-sto-01"]
    assert host.podman_calls("network", "create") == []
    assert [c[-1] for c in host.podman_calls("start")] == ["cflab-lab-sto-01"]
    assert len(host.containers) == 5 and all(c.state == "running" for c in host.containers.values())
    known_hosts = (checkout / ".cache" / "lab" / "lab" / "known_hosts").read_text()
    assert "10.89.100.13 ssh-ed25519 AAAAkey-of-cflab-lab-gpu-02" in known_hosts


def test_a_stopped_storage_node_whose_disk_moved_is_recreated(ctx, host, progress):
    lab_up(ctx, request())
    host.containers["cflab-lab-sto-01"].state = "exited"
    host.loops.clear()  # the host restarted: no loop device is attached any more
    result = lab_up(ctx, request())
    assert result.created == ["cflab-lab-sto-01"] and result.started == []
    assert host.containers["cflab-lab-sto-01"].devices == ["/dev/loop4:/dev/vdb:rwm"]
    assert "re-creating ['lab-sto-01']" in progress.getvalue()


def test_a_stopped_storage_node_with_its_disk_in_place_is_started(ctx, host):
    lab_up(ctx, request())
    host.containers["cflab-lab-sto-01"].state = "exited"
    result = lab_up(ctx, request())
    assert result.started == ["cflab-lab-sto-01"] and result.created == []
    assert host.loops == {"/dev/loop3": host.loops["/dev/loop3"]}


def test_up_again_keeps_the_recorded_mix_when_no_flags_are_given(ctx, host):
    lab_up(ctx, request(counts=SMALL))
    result = lab_up(ctx, request())
    assert result.spec.counts == SMALL and result.created == []


def test_up_again_refuses_to_change_the_mix(ctx, host):
    lab_up(ctx, request(counts=SMALL))
    host.calls.clear()
    with pytest.raises(InvalidInput) as err:
        lab_up(ctx, request(counts={**SMALL, "gpu": 2}))
    assert "cannot change the node mix (1 control, 1 gpu, 0 npu, 0 storage)" in err.value.message
    assert "lab down --name lab" in err.value.fix
    assert host.podman_calls("run") == [] and host.podman_calls("rm") == []
    assert len(host.containers) == 2


def test_a_failed_reconcile_keeps_the_nodes_that_were_there(ctx, host, checkout):
    lab_up(ctx, request(counts={"control": 1, "gpu": 2, "npu": 0, "storage": 0}))
    del host.containers["cflab-lab-gpu-02"]
    host.fail_run_of.add("cflab-lab-gpu-02")
    with pytest.raises(PodmanError):
        lab_up(ctx, request())
    assert sorted(host.containers) == ["cflab-lab-ctl-01", "cflab-lab-gpu-01"]
    assert "cflab-lab" in host.networks
    assert (checkout / ".cache" / "lab" / "lab" / "lab.json").is_file()
    assert (checkout / "inventories" / "lab" / "hosts.yml").is_file()


def test_podman_objects_without_a_record_are_not_adopted(ctx, host):
    host.networks["cflab-lab"] = {
        "name": "cflab-lab",
        "subnets": [],
        "labels": {"org.clusterforge.lab": "lab"},
    }
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request())
    assert "network cflab-lab" in err.value.message and "no record" in err.value.message
    assert "lab down --name lab" in err.value.fix


def test_a_foreign_inventory_folder_is_never_overwritten(ctx, host, checkout):
    mine = checkout / "inventories" / "lab"
    mine.mkdir(parents=True)
    (mine / "hosts.yml").write_text("all: {}\n")
    with pytest.raises(EnvironmentNotReady, match="not generated for lab 'lab'"):
        lab_up(ctx, request())
    assert (mine / "hosts.yml").read_text() == "all: {}\n"
    assert not host.containers


def test_other_lab_names_get_their_own_inventory_and_names(ctx, host, checkout):
    result = lab_up(ctx, request(name="cftest", counts=SMALL))
    assert result.inventory == checkout / "inventories" / "lab-cftest"
    assert sorted(host.containers) == ["cflab-cftest-ctl-01", "cflab-cftest-gpu-01"]
    assert "cflab-cftest" in host.networks


def test_hardware_replay_is_installed_when_the_checkout_has_it(ctx, host, checkout):
    playbook = checkout / "tests" / "hwreplay" / "install.yml"
    playbook.parent.mkdir(parents=True)
    playbook.write_text("- hosts: all\n")
    result = lab_up(ctx, request(counts=SMALL, profiles={"lab-gpu-01": "h100-xid79"}))
    assert result.hwreplay_ran
    (call,) = [c for c in host.calls if c[0].endswith("ansible-playbook")]
    assert call[1:] == ("-i", str(checkout / "inventories" / "lab"), str(playbook))
    hosts = yaml.safe_load((checkout / "inventories" / "lab" / "hosts.yml").read_text())
    assert hosts["all"]["hosts"]["lab-gpu-01"]["hwreplay_profile"] == "h100-xid79"


def test_hardware_replay_failure_fails_up_and_cleans_up(ctx, host, checkout):
    playbook = checkout / "tests" / "hwreplay" / "install.yml"
    playbook.parent.mkdir(parents=True)
    playbook.write_text("- hosts: all\n")
    host.playbook_rc = 2
    with pytest.raises(EnvironmentNotReady) as err:
        lab_up(ctx, request(counts=SMALL))
    assert "fatal: [x]: FAILED! => boom" in err.value.message
    assert "tests/hwreplay/install.yml" in err.value.fix
    assert created_nothing(host, checkout)


def test_no_hwreplay_skips_it(ctx, host, checkout):
    playbook = checkout / "tests" / "hwreplay" / "install.yml"
    playbook.parent.mkdir(parents=True)
    playbook.write_text("- hosts: all\n")
    assert not lab_up(ctx, request(counts=SMALL, hwreplay=False)).hwreplay_ran
    assert not [c for c in host.calls if c[0].endswith("ansible-playbook")]


def test_first_failure_keeps_the_message_under_the_fatal_line():
    from clusterforge.lab.up import first_failure

    output = (
        "TASK [Install the hwreplay bundle] ***\n"
        "fatal: [lab-gpu-01]: FAILED! =>\n"
        "    changed: false\n"
        "    msg: 'Could not find or access pack.py'\n"
        "\n"
        "PLAY RECAP ***\n"
    )
    assert first_failure(output) == (
        "fatal: [lab-gpu-01]: FAILED! => changed: false msg: 'Could not find or access pack.py'"
    )
    assert first_failure("ok: [x]\n") == ""
