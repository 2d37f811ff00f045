"""The podman driver: exact command lines, CONTAINERS_CONF, JSON parsing, error messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from clusterforge.errors import EXIT_ENV
from clusterforge.lab.podman import Podman, PodmanError
from clusterforge.lab.runner import Result
from labfake import IMAGE, FakeHost

CONF = Path("/checkout/images/node/containers.conf")


def test_every_call_carries_containers_conf(monkeypatch, host):
    monkeypatch.delenv("CONTAINERS_CONF", raising=False)
    Podman(host, CONF).networks()
    assert host.envs[-1]["CONTAINERS_CONF"] == str(CONF)


def test_a_containers_conf_set_by_the_caller_wins(monkeypatch, host):
    monkeypatch.setenv("CONTAINERS_CONF", "/etc/mine.conf")
    Podman(host, CONF).networks()
    assert host.envs[-1]["CONTAINERS_CONF"] == "/etc/mine.conf"


def test_run_node_command_line(host):
    Podman(host, CONF).run_node(
        name="cflab-lab-gpu-01",
        hostname="lab-gpu-01",
        network="cflab-lab",
        ip="10.89.100.12",
        labels={"org.clusterforge.lab": "lab", "org.clusterforge.lab.role": "gpu"},
        hosts={"lab-ctl-01": "10.89.100.11", "lab-gpu-01": "10.89.100.12"},
        image=IMAGE,
    )
    assert host.calls[-1] == (
        "podman", "run", "--detach",
        "--name", "cflab-lab-gpu-01",
        "--hostname", "lab-gpu-01",
        "--network", "cflab-lab",
        "--ip", "10.89.100.12",
        "--systemd=always", "--stop-timeout=10",
        "--cap-add", "AUDIT_WRITE", "--cap-add", "NET_RAW",
        "--label", "org.clusterforge.lab=lab", "--label", "org.clusterforge.lab.role=gpu",
        "--add-host", "lab-ctl-01:10.89.100.11",
        IMAGE, "/sbin/init",
    )  # fmt: skip


def test_the_control_node_gets_the_checkout_read_only_at_the_same_path(host):
    from clusterforge.lab.model import ROLES

    assert ROLES["control"].clusterforge_checkout and not ROLES["gpu"].clusterforge_checkout
    Podman(host, CONF).run_node(
        name="c1", hostname="h", network="n", ip="1.2.3.4", labels={}, hosts={}, image=IMAGE,
        read_only_paths=["/work/main"],
    )  # fmt: skip
    argv = host.calls[-1]
    assert argv[argv.index("--volume") + 1] == "/work/main:/work/main:ro"


def test_network_create_and_remove_command_lines(host):
    podman = Podman(host, CONF)
    podman.create_network("cflab-lab", "10.89.100.0/24", "10.89.100.1", {"org.clusterforge.lab": "lab"})
    podman.remove_network("cflab-lab")
    assert host.calls == [
        ("podman", "network", "create", "--driver", "bridge", "--subnet", "10.89.100.0/24",
         "--gateway", "10.89.100.1", "--label", "org.clusterforge.lab=lab", "cflab-lab"),
        ("podman", "network", "rm", "cflab-lab"),
    ]  # fmt: skip


def test_label_queries_filter_by_label(host):
    podman = Podman(host, CONF)
    podman.container_names("org.clusterforge.lab=lab")
    podman.network_names("org.clusterforge.lab=lab")
    podman.volume_names("org.clusterforge.lab=lab")
    assert host.calls == [
        ("podman", "ps", "-a", "--filter", "label=org.clusterforge.lab=lab", "--format", "json"),
        ("podman", "network", "ls", "--filter", "label=org.clusterforge.lab=lab", "--format", "json"),
        ("podman", "volume", "ls", "--filter", "label=org.clusterforge.lab=lab", "--format", "json"),
    ]


def test_remove_containers_forces_with_volumes_and_nothing_for_no_names(host):
    podman = Podman(host, CONF)
    podman.remove_containers([])
    assert host.calls == []
    podman.remove_containers(["cflab-lab-ctl-01", "cflab-lab-gpu-01"])
    assert host.calls == [
        ("podman", "rm", "--force", "--volumes", "--time", "10", "cflab-lab-ctl-01", "cflab-lab-gpu-01")
    ]


def test_exec_with_input_is_interactive(host):
    podman = Podman(host, CONF)
    host.containers.clear()
    podman.exec("c1", ["true"], input="x")
    assert host.calls[-1] == ("podman", "exec", "--interactive", "c1", "true")


def test_image_labels_of_a_missing_image_is_none(host):
    assert Podman(host, CONF).image_labels("localhost/none:x") is None
    assert Podman(host, CONF).image_labels(IMAGE) == {"org.clusterforge.inputs": host.wanted_hash}


def test_inspect_reads_state_labels_and_the_lab_network_address(host):
    podman = Podman(host, CONF)
    podman.run_node(
        name="c1", hostname="h1", network="cflab-x", ip="10.0.0.11", labels={"a": "b"}, hosts={}, image=IMAGE
    )
    (info,) = podman.inspect_containers(["c1"], "cflab-x")
    assert (info.name, info.state, info.labels, info.ip, info.running) == (
        "c1",
        "running",
        {"a": "b"},
        "10.0.0.11",
        True,
    )
    (info,) = podman.inspect_containers(["c1"], "other-net")
    assert info.ip is None


def test_null_json_from_podman_is_an_empty_list():
    podman = Podman(lambda argv, **kw: Result(tuple(argv), 0, "null\n"), CONF)
    assert podman.container_names("a=b") == []


def test_a_failing_command_names_itself_podmans_words_and_the_conf(monkeypatch):
    monkeypatch.delenv("CONTAINERS_CONF", raising=False)
    host = FakeHost()
    host.fail_run_of.add("c1")
    with pytest.raises(PodmanError) as err:
        Podman(host, CONF).run_node(
            name="c1", hostname="h", network="n", ip="1.2.3.4", labels={}, hosts={}, image="i"
        )
    assert err.value.exit_code == EXIT_ENV
    assert err.value.message.startswith("`podman run --detach --name c1")
    assert "starting container process caused: boom" in err.value.message
    assert f"CONTAINERS_CONF={CONF}" in err.value.fix
