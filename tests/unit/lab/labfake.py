"""A fake host for lab unit tests: answers podman, ssh, ssh-keygen and friends like the real ones.

It keeps a small model of podman's state (images, networks, containers,
volumes) and records every command line, so tests check both the exact podman
commands the lab issues and the effect they would have.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.lab.runner import Result

IMAGE = "localhost/clusterforge-node:bookworm"
IMAGE_HASH = "25fdd2a76bc9cbda"
# podman run/network options that take a value (the others are flags).
VALUE_OPTIONS = {
    "--name",
    "--hostname",
    "--network",
    "--ip",
    "--cap-add",
    "--label",
    "--add-host",
    "--driver",
    "--subnet",
    "--gateway",
    "--format",
    "--filter",
    "--time",
    "--device",
    "--device-cgroup-rule",
    "--volume",
}


def parse(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """(options -> values, positionals) of a podman argument list."""
    options: dict[str, list[str]] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            options.setdefault(key, []).append(value)
        elif arg in VALUE_OPTIONS:
            options.setdefault(arg, []).append(args[i + 1])
            i += 1
        elif arg.startswith("-"):
            options.setdefault(arg, []).append("")
        else:
            positionals = args[i:]  # the rest: names, or IMAGE CMD..., or CONTAINER CMD...
            break
        i += 1
    return options, positionals


def labels_of(options: dict[str, list[str]]) -> dict[str, str]:
    return dict(value.split("=", 1) for value in options.get("--label", []))


def matches(labels: dict[str, str], filters: list[str]) -> bool:
    for flt in filters:
        key, value = flt.removeprefix("label=").split("=", 1)
        if labels.get(key) != value:
            return False
    return True


@dataclass
class FakeContainer:
    name: str
    hostname: str
    network: str
    ip: str
    labels: dict[str, str]
    image: str
    state: str = "running"
    polls_until_booted: int = 1
    boot_result: str = "running"
    authorized_keys: str = ""
    host_keys: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # --device values
    caps: list[str] = field(default_factory=list)  # --cap-add values
    device_rules: list[str] = field(default_factory=list)  # --device-cgroup-rule values
    bare_metal_scripts: list[str] = field(default_factory=list)  # the lab's unit installs (sh -ec)


class FakeHost:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.envs: list[dict[str, str] | None] = []
        self.images: dict[str, dict[str, str]] = {IMAGE: {"org.clusterforge.inputs": IMAGE_HASH}}
        self.wanted_hash = IMAGE_HASH
        self.networks: dict[str, dict] = {
            "podman": {
                "name": "podman",
                "subnets": [{"subnet": "10.88.0.0/16", "gateway": "10.88.0.1"}],
                "labels": {},
            }
        }
        self.containers: dict[str, FakeContainer] = {}
        self.volumes: dict[str, dict[str, str]] = {}
        self.fail_run_of: set[str] = set()  # container names whose `podman run` fails
        self.boot_polls = 1  # "starting" answers before "running"
        self.boot_result = "running"
        self.ssh_refuses: set[str] = set()  # addresses where sshd rejects the login
        self.playbook_rc = 0
        self.loops: dict[str, str] = {}  # attached loop device -> backing file
        self.next_loop = 3  # loop0-2 are taken by someone else

    # -- what tests look at -------------------------------------------------------------
    def podman_calls(self, *prefix: str) -> list[tuple[str, ...]]:
        want = ("podman", *prefix)
        return [call for call in self.calls if call[: len(want)] == want]

    def commands(self, tool: str) -> list[tuple[str, ...]]:
        return [call for call in self.calls if call[0] == tool]

    # -- the Runner interface ---------------------------------------------------------------
    def __call__(self, argv, *, input=None, env=None, cwd=None, timeout=None) -> Result:
        argv = tuple(argv)
        self.calls.append(argv)
        self.envs.append(dict(env) if env is not None else None)
        tool = argv[0]
        if tool == "podman":
            rc, out, err = self._podman(list(argv[1:]), input)
        elif tool == "ssh-keygen":
            rc, out, err = self._keygen(list(argv))
        elif tool == "ssh":
            rc, out, err = self._ssh(list(argv))
        elif tool == "losetup":
            rc, out, err = self._losetup(list(argv[1:]))
        elif tool.endswith("build-node-image.sh"):
            rc, out, err = 0, self.wanted_hash + "\n", ""
        elif tool.endswith("ansible-playbook"):
            rc, out, err = self.playbook_rc, "fatal: [x]: FAILED! => boom\n" if self.playbook_rc else "", ""
        else:
            raise AssertionError(f"unexpected command {argv}")
        return Result(argv, rc, out, err)

    # -- podman ---------------------------------------------------------------------------
    def _podman(self, args: list[str], stdin: str | None) -> tuple[int, str, str]:
        group = args[0]
        if group in ("image", "network", "container", "volume"):
            handler = getattr(self, f"_{group}_{args[1]}")
            return handler(*parse(args[2:]))
        options, positionals = parse(args[1:])
        if group == "exec":
            return self._cmd_exec(options, positionals, stdin)
        return getattr(self, f"_cmd_{group}")(options, positionals)

    def _image_inspect(self, options, names):
        labels = self.images.get(names[0])
        if labels is None:
            return 125, "[]\n", f"Error: inspecting object: {names[0]}: image not known"
        return 0, json.dumps([{"Labels": labels}]), ""

    def _network_ls(self, options, _):
        nets = [net for net in self.networks.values() if matches(net["labels"], options.get("--filter", []))]
        return 0, json.dumps(nets), ""

    def _network_create(self, options, names):
        name = names[0]
        if name in self.networks:
            return 125, "", f"Error: network name {name} already used: network already exists"
        self.networks[name] = {
            "name": name,
            "subnets": [{"subnet": options["--subnet"][0], "gateway": options["--gateway"][0]}],
            "labels": labels_of(options),
        }
        return 0, name + "\n", ""

    def _network_rm(self, options, names):
        for name in names:
            if any(c.network == name for c in self.containers.values()):
                return 2, "", f"Error: network {name} is being used"
            del self.networks[name]
        return 0, "", ""

    def _container_inspect(self, options, names):
        out = []
        for name in names:
            c = self.containers.get(name)
            if c is None:
                return 125, "[]", f"Error: inspecting object: no such container {name}"
            nets = {c.network: {"IPAddress": c.ip}} if c.state == "running" else {}
            out.append(
                {
                    "Name": c.name,
                    "State": {"Status": c.state},
                    "Config": {"Labels": c.labels, "Hostname": c.hostname},
                    "NetworkSettings": {"Networks": nets},
                    "ImageName": c.image,
                }
            )
        return 0, json.dumps(out), ""

    def _volume_ls(self, options, _):
        vols = [{"Name": n} for n, lab in self.volumes.items() if matches(lab, options.get("--filter", []))]
        return 0, json.dumps(vols), ""

    def _volume_rm(self, options, names):
        for name in names:
            self.volumes.pop(name)
        return 0, "", ""

    def _cmd_ps(self, options, _):
        rows = [
            {"Names": [c.name], "State": c.state}
            for c in self.containers.values()
            if matches(c.labels, options.get("--filter", []))
        ]
        return 0, json.dumps(rows), ""

    def _cmd_run(self, options, positionals):
        name = options["--name"][0]
        if name in self.fail_run_of:
            return 126, "", "Error: runc: container_linux.go: starting container process caused: boom"
        if name in self.containers:
            return 125, "", f'Error: the container name "{name}" is already in use'
        self.containers[name] = FakeContainer(
            name=name,
            hostname=options["--hostname"][0],
            network=options["--network"][0],
            ip=options["--ip"][0],
            labels=labels_of(options),
            image=positionals[0],
            devices=options.get("--device", []),
            caps=options.get("--cap-add", []),
            device_rules=options.get("--device-cgroup-rule", []),
            polls_until_booted=self.boot_polls,
            boot_result=self.boot_result,
            host_keys=[f"ssh-ed25519 AAAAkey-of-{name}", f"ecdsa-sha2-nistp256 AAAAecdsa-of-{name}"],
        )
        return 0, "0123abcd\n", ""

    def _cmd_start(self, options, names):
        self.containers[names[0]].state = "running"
        return 0, names[0] + "\n", ""

    def _cmd_rm(self, options, names):
        for name in names:
            self.containers.pop(name, None)
        return 0, "\n".join(names) + "\n", ""

    def _cmd_exec(self, options, positionals, stdin):
        name, argv = positionals[0], positionals[1:]
        c = self.containers.get(name)
        if c is None or c.state != "running":
            return (
                125,
                "",
                "Error: can only create exec sessions on running containers: container state improper",
            )
        if argv == ["systemctl", "is-system-running"]:
            if c.polls_until_booted > 0:
                c.polls_until_booted -= 1
                return 1, "starting\n", ""
            return (0 if c.boot_result == "running" else 1), c.boot_result + "\n", ""
        if argv[:2] == ["systemctl", "--failed"]:
            return 0, "ssh-hostkeys.service loaded failed failed Generate SSH host keys\n", ""
        if argv[:2] == ["sh", "-c"] and "authorized_keys" in argv[2] and "ssh_host_" in argv[2]:
            assert "--interactive" in options, "the key goes through stdin: exec needs --interactive"
            c.authorized_keys = stdin or ""
            return 0, "".join(f"{key} root@{c.hostname}\n" for key in c.host_keys), ""
        if argv[:2] == ["sh", "-ec"] and "cflab-bare-metal.service" in argv[2]:
            c.bare_metal_scripts.append(argv[2])
            # As the real unit: remounting the cgroup controllers needs CAP_SYS_ADMIN.
            if "SYS_ADMIN" not in c.caps:
                return (
                    1,
                    "",
                    "Job for cflab-bare-metal.service failed because the control process exited "
                    "with error code.\n--- journal of cflab-bare-metal:\n"
                    "mount: /sys/fs/cgroup/cpu: permission denied.\n"
                    "       dmesg(1) may have more information after failed mount system call.\n",
                )
            return 0, "", ""
        raise AssertionError(f"unexpected exec in {name}: {argv}")

    # -- losetup --------------------------------------------------------------------------
    def _losetup(self, args: list[str]) -> tuple[int, str, str]:
        if args[:2] == ["--find", "--show"]:
            assert Path(args[2]).is_file(), "losetup needs the image file to exist"
            device = f"/dev/loop{self.next_loop}"
            self.next_loop += 1
            self.loops[device] = args[2]
            return 0, device + "\n", ""
        if args[0] == "--associated":
            lines = [f"{dev}: [65024]:1234 ({path})\n" for dev, path in self.loops.items() if path == args[1]]
            return 0, "".join(lines), ""
        if args[0] == "--detach":
            self.loops.pop(args[1])
            return 0, "", ""
        raise AssertionError(f"unexpected losetup {args}")

    # -- ssh ------------------------------------------------------------------------------
    def _keygen(self, argv: list[str]) -> tuple[int, str, str]:
        key = Path(argv[argv.index("-f") + 1])
        key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n")
        key.with_name(key.name + ".pub").write_text(f"ssh-ed25519 AAAAlabkey {argv[argv.index('-C') + 1]}\n")
        return 0, "", ""

    def _ssh(self, argv: list[str]) -> tuple[int, str, str]:
        if "-O" in argv:
            return 255, "", "Control socket connect: No such file or directory"
        target = next(arg for arg in argv if arg.startswith("ansible@"))
        ip = target.split("@", 1)[1]
        options = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-o"]
        known_hosts = Path(next(o for o in options if o.startswith("UserKnownHostsFile=")).split("=", 1)[1])
        assert "StrictHostKeyChecking=yes" in options
        key = Path(argv[argv.index("-i") + 1])
        node = next((c for c in self.containers.values() if c.ip == ip and c.state == "running"), None)
        if node is None:
            return 255, "", f"ssh: connect to host {ip} port 22: No route to host"
        known = known_hosts.read_text().splitlines() if known_hosts.is_file() else []
        if not any(line == f"{ip} {node.host_keys[0]}" for line in known):
            return 255, "", "Host key verification failed."
        public = key.with_name(key.name + ".pub").read_text().strip()
        if ip in self.ssh_refuses or node.authorized_keys.strip() != public:
            return 255, "", f"ansible@{ip}: Permission denied (publickey)."
        return 0, "", ""


def route_line(iface: str, network: str, mask: str) -> str:
    """One /proc/net/route line (addresses in the kernel's little-endian hex)."""

    def hexaddr(addr: str) -> str:
        return f"{int.from_bytes(socket.inet_aton(addr), 'little'):08X}"

    return f"{iface}\t{hexaddr(network)}\t00000000\t0001\t0\t0\t0\t{hexaddr(mask)}\t0\t0\t0"
