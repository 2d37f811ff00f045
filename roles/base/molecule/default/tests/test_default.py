"""Role base on the scenario's nodes: the real state, read over SSH.

Expectations come from the role's defaults and the scenario's inventory, never
from what the role reports about itself, so every test fails on a node the
role has not touched.
"""

from __future__ import annotations

from pathlib import Path

import cfmol_testinfra as cfmol
import pytest
import yaml

ROLE_DEFAULTS = yaml.safe_load((Path(__file__).resolve().parents[3] / "defaults" / "main.yml").read_text())
SYSCTL_FILE = "/etc/sysctl.d/60-clusterforge.conf"
HOSTS_BEGIN = "# BEGIN ClusterForge cluster hosts (role base)"
HOSTS_END = "# END ClusterForge cluster hosts (role base)"


def role_var(host, name):
    """The value the role ran with: the scenario's inventory, else the role default."""
    return cfmol.node_vars(host).get(name, ROLE_DEFAULTS[name])


def normalised(value):
    return " ".join(str(value).split())


def expected_sysctls(host):
    merged = {**role_var(host, "base_sysctls"), **role_var(host, "base_sysctls_site")}
    return {key: normalised(value) for key, value in merged.items() if value is not None}


@pytest.mark.parametrize(
    "package", ["chrony", "unattended-upgrades", "numactl", "pciutils", "ethtool", "dmidecode", "jq"]
)
def test_base_packages_are_installed(host, package):
    assert host.package(package).is_installed


def test_sysctl_file_holds_every_tunable(host):
    sysctl_file = host.file(SYSCTL_FILE)
    assert sysctl_file.is_file and sysctl_file.mode == 0o644
    persisted = {}
    for line in sysctl_file.content_string.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            persisted[key.strip()] = normalised(value)
    assert persisted == expected_sysctls(host)


def test_sysctls_are_live_or_reported_not_applicable(host):
    fact = cfmol.read_json(host, "/etc/ansible/facts.d/clusterforge_sysctl.fact")
    not_applicable = fact["not_applicable"]
    container = cfmol.is_container(host)
    if not container:
        assert not_applicable == {}, "outside a container every tunable must apply"
    for key, wanted in expected_sysctls(host).items():
        live = host.run("cat %s", "/proc/sys/" + key.replace(".", "/"))
        in_effect = live.rc == 0 and normalised(live.stdout) == wanted
        if key in not_applicable:
            # A key reported as not applicable must really be off: no false report.
            assert not in_effect, f"{key} is in effect but reported not applicable"
        else:
            assert in_effect, f"{key}: live {live.stdout.strip() or live.stderr.strip()!r}, want {wanted!r}"


def test_a_new_login_gets_the_memlock_and_nofile_limits(host):
    session = cfmol.fresh_login(host, "ulimit -l; ulimit -n")
    assert session.rc == 0, session.stderr
    memlock, nofile = session.stdout.split()
    want_memlock = str(role_var(host, "base_memlock_limit"))
    want_nofile = int(role_var(host, "base_nofile_limit"))
    if cfmol.is_container(host):
        # A container cannot go above the hard limits its runtime set (PID 1's).
        ceiling_bytes = cfmol.pid1_hard_limit(host, "Max locked memory")
        if ceiling_bytes != "unlimited" and want_memlock == "unlimited":
            want_memlock = str(int(ceiling_bytes) // 1024)
        ceiling_nofile = cfmol.pid1_hard_limit(host, "Max open files")
        if ceiling_nofile != "unlimited":
            want_nofile = min(want_nofile, int(ceiling_nofile))
    assert (memlock, int(nofile)) == (want_memlock, want_nofile)


def test_limits_file_asks_for_unlimited_memlock_outside_containers(host):
    content = host.file("/etc/security/limits.d/60-clusterforge.conf").content_string
    lines = [line.split() for line in content.splitlines() if line and not line.startswith("#")]
    memlock = {(domain, kind): value for domain, kind, item, value in lines if item == "memlock"}
    assert set(memlock) == {("*", "soft"), ("*", "hard"), ("root", "soft"), ("root", "hard")}
    if not cfmol.is_container(host):
        assert set(memlock.values()) == {"unlimited"}


def test_services_default_to_unlimited_memlock(host):
    manager = host.run("systemctl show -p DefaultLimitMEMLOCK -p DefaultLimitNOFILE").stdout.split()
    assert "DefaultLimitMEMLOCK=infinity" in manager
    assert f"DefaultLimitNOFILE={role_var(host, 'base_nofile_limit')}" in manager


def test_chrony_runs_with_the_configured_sources(host):
    chrony = host.service("chrony")
    assert chrony.is_running and chrony.is_enabled
    conf = host.file("/etc/chrony/chrony.conf").content_string
    for server in role_var(host, "base_chrony_servers"):
        assert f"server {server} iburst" in conf
    assert [line for line in conf.splitlines() if line.startswith("pool ")] == [
        f"pool {pool} iburst" for pool in role_var(host, "base_chrony_pools")
    ]


def test_chrony_reaches_its_servers_by_name(host):
    servers = role_var(host, "base_chrony_servers")
    stratum = int(role_var(host, "base_chrony_local_stratum"))
    if not servers:
        assert stratum > 0, "a node without servers must be the site's time server"
        tracking = host.run("chronyc tracking").stdout
        assert f"Stratum         : {stratum}" in tracking, tracking
        return
    for server in servers:
        address = cfmol.node_address(host, server)

        def reach(address=address):
            # chronyc -c sources: mode,state,address,stratum,poll,reach(octal),...
            for row in host.run("chronyc -n -c sources").stdout.splitlines():
                fields = row.split(",")
                if len(fields) > 5 and fields[2] == address:
                    return int(fields[5], 8)
            return 0

        assert cfmol.wait_for(reach, timeout=40), f"chrony never reached {server} ({address})"


def test_journal_is_persistent_and_size_capped(host):
    assert host.service("systemd-journald").is_running
    config = host.run("systemd-analyze cat-config systemd/journald.conf").stdout
    assert "Storage=persistent" in config
    # journald states its limits each time it opens the journal on disk, e.g.
    # "System Journal (/var/log/journal/<id>) is 8.0M, max 1.0G, 1015.9M free.":
    # proof that the running journald uses the drop-in.
    own_messages = host.run("sudo journalctl -b -t systemd-journald -o cat --no-pager").stdout
    opened = [line for line in own_messages.splitlines() if line.startswith("System Journal (/var/log/")]
    assert opened, "journald never opened a persistent journal"
    max_use = role_var(host, "base_journald_system_max_use")  # e.g. "1G", printed as "1.0G"
    assert f"max {max_use[:-1]}.0{max_use[-1]}," in opened[-1]
    machine_id = host.file("/etc/machine-id").content_string.strip()
    assert host.file(f"/var/log/journal/{machine_id}/system.journal").is_file


def test_nouveau_is_blacklisted(host):
    blacklist = host.file("/etc/modprobe.d/blacklist-nouveau.conf")
    assert blacklist.mode == 0o644
    # What kmod itself reads from the configuration, not just the file's text.
    config = host.run("/sbin/modprobe --showconfig").stdout.splitlines()
    assert "blacklist nouveau" in config
    assert "options nouveau modeset=0" in config


def test_etc_hosts_names_every_node(host):
    hosts = host.file("/etc/hosts").content_string
    assert HOSTS_BEGIN in hosts and HOSTS_END in hosts
    block = hosts.split(HOSTS_BEGIN)[1].split(HOSTS_END)[0].split("\n")
    domain = role_var(host, "base_cluster_domain")
    for name in [cfmol.node_name(host), *cfmol.peers(host)]:
        assert f"{cfmol.node_address(host, name)} {name}.{domain} {name}" in block
    # The runtime's own entries outside the block are kept.
    assert "localhost" in hosts.split(HOSTS_BEGIN)[0]


@pytest.mark.parametrize("qualified", [False, True])
def test_other_nodes_resolve_and_answer_by_name(host, qualified):
    # The scenario network has no DNS: only /etc/hosts can resolve these names.
    domain = role_var(host, "base_cluster_domain")
    for peer in cfmol.peers(host):
        name = f"{peer}.{domain}" if qualified else peer
        resolved = host.run("getent hosts %s", name)
        assert resolved.rc == 0, f"{name} does not resolve"
        assert resolved.stdout.split()[0] == cfmol.node_address(host, peer)
        assert host.run("ping -c1 -W2 %s", name).rc == 0, f"{name} does not answer ping"


def test_unattended_upgrades_skip_driver_packages(host):
    assert host.package("unattended-upgrades").is_installed
    # apt's own view of the merged configuration.
    dump = host.run("apt-config dump Unattended-Upgrade::Package-Blacklist").stdout
    for prefix in role_var(host, "base_upgrade_blacklist"):
        assert f'Unattended-Upgrade::Package-Blacklist:: "{prefix}";' in dump
    periodic = host.run("apt-config dump APT::Periodic").stdout
    assert 'APT::Periodic::Unattended-Upgrade "1";' in periodic


def test_reboot_flag_is_a_valid_local_fact(host):
    fact_file = host.file("/etc/ansible/facts.d/clusterforge_reboot.fact")
    # Not executable: Ansible would run it instead of reading it.
    assert fact_file.mode == 0o644
    fact = cfmol.read_json(host, fact_file.path)
    assert isinstance(fact["required"], bool)
    assert isinstance(fact["reasons"], list)
    assert fact["required"] == bool(fact["reasons"])
    # Nothing on these fresh nodes asks for a reboot.
    if not host.file("/var/run/reboot-required").exists and not host.file("/sys/module/nouveau").exists:
        assert fact == {"required": False, "reasons": []}
