"""Hostile and careless inventories (issue 7 bad-input findings 1, 2, 4, 8, 11, 14, 16).

Each test asserts the exit code and the message; none runs anything from the
inventory (markers prove it) and none connects anywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from invcase import EXAMPLE, Inventory, run_check
from patience import HANG_S

VENV_BIN = Path(sys.executable).parent


# A check that hangs (a FIFO, an alias bomb) fails the test instead of stalling the suite.
pytestmark = pytest.mark.usefixtures("watchdog")


@pytest.fixture
def inv(tmp_path) -> Inventory:
    return Inventory(tmp_path / "inv")


def _warnings(outcome, rule: str) -> list[dict]:
    return [p for p in outcome.problems if p["severity"] == "warning" and p["rule"] == rule]


# --- finding 1: no lookups, no side effects ---------------------------------------------------


def test_pipe_lookup_is_never_run(inv, tmp_path, capsys):
    marker = tmp_path / "pwned"
    inv.set_host_var("gpu-r1-n01", "node_sku", f"{{{{ lookup('pipe', 'touch {marker}; id') }}}}")
    inv.set_var("group_vars/all/versions.yml", "cuda_version", f"{{{{ query('pipe', 'touch {marker}') }}}}")
    inv.set_var("group_vars/all/versions.yml", "dcgm_version", "{{ dcgm_from_pipe }}")
    inv.set_var("group_vars/all/versions.yml", "dcgm_from_pipe", f"{{{{ q('pipe', 'touch {marker}') }}}}")
    outcome = run_check(capsys, inv.root)
    assert not marker.exists()
    assert outcome.code == 0, outcome.out
    templated = {p["variable"]: p for p in _warnings(outcome, "vars.templated")}
    assert set(templated) == {"node_sku", "cuda_version", "dcgm_version"}
    assert "templated, checked at run time" in templated["node_sku"]["message"]
    assert "lookup()" in templated["node_sku"]["message"] and "uid=" not in outcome.out


def test_env_and_file_lookups_leak_nothing(inv, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CF_TEST_SECRET", "s3cr3t-token")
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text("file-secret-content\n")
    inv.set_host_var("gpu-r1-n01", "node_sku", "{{ lookup('env', 'CF_TEST_SECRET') }}")
    inv.set_host_var("gpu-r1-n02", "node_sku", f"{{{{ lookup('file', '{secret_file}') }}}}")
    inv.set_host_var("gpu-r1-n03", "node_sku", "{{ 'CF_TEST_SECRET' | expandvars }}")  # a side-effect filter
    inv.set_host_var("gpu-r1-n04", "node_sku", "{{ '$CF_TEST_SECRET' is exists }}")  # a filesystem test
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out
    assert "s3cr3t-token" not in outcome.out + outcome.err
    assert "file-secret-content" not in outcome.out + outcome.err
    hosts = sorted(p["host"] for p in _warnings(outcome, "vars.templated"))
    assert hosts == ["gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03", "gpu-r1-n04"]


def test_embedded_and_included_templates_are_refused(inv, tmp_path, capsys):
    marker = tmp_path / "pwned"
    inv.set_host_var("gpu-r1-n01", "node_sku", f"{{{{ \"{{{{ lookup('pipe', 'touch {marker}') }}}}\" }}}}")
    inv.set_host_var("gpu-r1-n02", "node_sku", "{% include '/etc/passwd' %}")
    inv.set_host_var("gpu-r1-n03", "node_sku", "{{ hostvars['gpu-r1-n01'].node_sku }}")
    outcome = run_check(capsys, inv.root)
    assert not marker.exists()
    assert outcome.code == 0, outcome.out
    assert len(_warnings(outcome, "vars.templated")) == 3


def test_pure_templates_are_still_rendered_and_checked(inv, capsys):
    inv.set_var("group_vars/gpu_nvidia.yml", "gpu_sku", "HGX-H100-8GPX")
    for host in ("gpu-r1-n01", "gpu-r1-n02", "gpu-r1-n03", "gpu-r1-n04"):
        inv.set_host_var(host, "node_sku", "{{ gpu_sku | lower | default('x') }}")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    assert "unknown SKU 'hgx-h100-8gpx'" in outcome.errors("sku.unknown")[0]["message"]


def test_ansible_itself_cannot_load_a_lookup_while_checking():
    """Belt and braces: a template that slipped past the allowlist still cannot run a lookup."""
    from ansible._internal._templating._jinja_bits import TrustedAsTemplate
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from clusterforge.inventory_check.templating import refused_lookups, unsafe_reason

    template = TrustedAsTemplate().tag("{{ lookup('env', 'HOME') }}")
    assert unsafe_reason(template, {}, lambda _v: False).reason
    with refused_lookups(), pytest.raises(AnsibleError, match="refused"):
        Templar(loader=DataLoader(), variables={}).template(template)
    assert Templar(loader=DataLoader(), variables={}).template(template) == os.environ["HOME"]


def _script(path: Path, marker: Path) -> None:
    path.write_text(
        "#!/bin/sh\n"
        f"touch {marker}\n"
        'echo \'{"scripted": {"hosts": ["scr-r9-n01"]}, "_meta": {"hostvars": {"scr-r9-n01": '
        '{"ansible_host": "10.10.9.11", "node_sku": "cpu-generic", "rack": "r9"}}}}\'\n'
    )
    path.chmod(0o755)


def test_inventory_script_runs_only_with_allow_scripts(inv, tmp_path, capsys):
    marker = tmp_path / "script-ran"
    _script(inv.path("dynamic.sh"), marker)
    outcome = run_check(capsys, inv.root)
    assert not marker.exists()
    assert outcome.code == 2
    [problem] = outcome.errors("inventory.script")
    assert "dynamic.sh" in problem["location"] and "not run" in problem["message"]
    assert "--allow-scripts" in problem["fix"]
    assert not outcome.errors("inventory.parse")  # the file is reported once, as not run

    outcome = run_check(capsys, inv.root, fmt="text", flags=("--allow-scripts",))
    assert marker.exists()
    assert outcome.code == 0, outcome.out
    assert "valid: 17 hosts" in outcome.out  # the script's host was loaded and checked


def test_validate_loader_refuses_scripts_by_default(inv, tmp_path):
    from clusterforge.errors import InvalidInput
    from clusterforge.validation.inventory import load_inventory

    marker = tmp_path / "script-ran"
    _script(inv.path("dynamic.sh"), marker)
    with pytest.raises(InvalidInput) as caught:
        load_inventory(inv.root)
    assert "dynamic.sh" in caught.value.message and "--allow-scripts" in caught.value.fix
    assert not marker.exists()
    assert "scr-r9-n01" in load_inventory(inv.root, allow_scripts=True).targets
    assert marker.exists()


# --- finding 2: inline !vault values -----------------------------------------------------------


def _vaulted(plaintext: str, password: str = "right-password") -> str:
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = VaultSecret(password.encode())
    ciphertext = VaultLib([("default", secret)]).encrypt(plaintext, secret).decode()
    return "!vault |\n" + "".join(f"  {line}\n" for line in ciphertext.splitlines())


def _vault_bom(inv: Inventory, driver: str) -> None:
    original = (EXAMPLE / "group_vars/all/versions.yml").read_text().splitlines()
    lines = [line for line in original if not line.startswith("nvidia_driver_version:")]
    inv.write(
        "group_vars/all/versions.yml", "\n".join(lines) + "\nnvidia_driver_version: " + _vaulted(driver)
    )


def test_vault_values_without_a_password_are_reported_not_checked(inv, capsys):
    _vault_bom(inv, "535.183.01")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out + outcome.err
    warnings = {p["variable"]: p for p in _warnings(outcome, "vars.encrypted")}
    # The vaulted value itself, and the template that reads it (fabric manager = driver).
    assert set(warnings) == {"nvidia_driver_version", "nvidia_fabricmanager_version"}, outcome.out
    assert "versions.yml" in warnings["nvidia_driver_version"]["location"]
    assert all("encrypted, not checked" in p["message"] for p in warnings.values())


def test_a_wrong_vault_password_for_an_inline_value_is_bad_input(inv, tmp_path, capsys, monkeypatch):
    # As for a vaulted file (vars.load): exit 2, naming the variable and the file.
    from ansible import constants

    _vault_bom(inv, "535.183.01")
    (tmp_path / "pass").write_text("wrong-password")
    monkeypatch.setattr(constants, "DEFAULT_VAULT_PASSWORD_FILE", str(tmp_path / "pass"))
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2, outcome.out + outcome.err
    errors = {p["variable"]: p for p in outcome.errors("vars.encrypted")}
    assert "nvidia_driver_version" in errors, outcome.out
    problem = errors["nvidia_driver_version"]
    assert problem["file"].endswith("group_vars/all/versions.yml")
    assert "password given does not decrypt it" in problem["message"]
    assert "ANSIBLE_VAULT_PASSWORD_FILE" in problem["fix"]
    assert "error:" in outcome.err
    text = run_check(capsys, inv.root, fmt="text")
    assert "versions.yml:" in text.out and " nvidia_driver_version: " in text.out
    assert "error:" in text.err and "fix:" in text.err


def test_vault_values_are_decrypted_and_checked_with_the_password(inv, tmp_path, capsys, monkeypatch):
    from ansible import constants

    (tmp_path / "pass").write_text("right-password\n")
    monkeypatch.setattr(constants, "DEFAULT_VAULT_PASSWORD_FILE", str(tmp_path / "pass"))
    _vault_bom(inv, "535.183.01")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0 and outcome.problems == [], outcome.out

    _vault_bom(inv, "470.82.01")  # decrypted, then found too old for the H100
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    assert any("470.82.01" in p["message"] for p in outcome.errors("bom.sku_driver"))
    assert "EncryptedString" not in outcome.out


def test_missing_vault_password_file_is_bad_input(capsys, monkeypatch, tmp_path):
    from ansible import constants

    missing = tmp_path / "no-such-pass"
    monkeypatch.setattr(constants, "DEFAULT_VAULT_PASSWORD_FILE", str(missing))
    outcome = run_check(capsys, EXAMPLE)
    assert outcome.code == 2
    assert str(missing) in outcome.err and "ANSIBLE_VAULT_PASSWORD_FILE" in outcome.err
    assert "fix: point ANSIBLE_VAULT_PASSWORD_FILE" in outcome.err


def test_validate_loader_decrypts_or_leaves_vaulted_values(inv, tmp_path, monkeypatch):
    from ansible import constants
    from clusterforge.validation.inventory import is_encrypted, load_inventory

    _vault_bom(inv, "535.183.01")
    raw = load_inventory(inv.root).vars_of("gpu-r1-n01")["nvidia_driver_version"]
    assert is_encrypted(raw)
    (tmp_path / "pass").write_text("right-password\n")
    monkeypatch.setattr(constants, "DEFAULT_VAULT_PASSWORD_FILE", str(tmp_path / "pass"))
    assert load_inventory(inv.root).vars_of("gpu-r1-n01")["nvidia_driver_version"] == "535.183.01"


# --- finding 4: FIFOs, devices, huge files -----------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "make"),
    [
        ("group_vars/all/pipe.yml", lambda p: os.mkfifo(p)),
        ("host_vars/gpu-r1-n01.yml", lambda p: os.symlink("/dev/zero", p)),
        ("extra-hosts.yml", lambda p: os.mkfifo(p)),
        ("group_vars/all/huge.yml", lambda p: os.truncate(p.open("w").name, 17 * 1024 * 1024)),
    ],
    ids=["fifo-group-vars", "dev-zero-host-vars", "fifo-inventory-dir", "oversized"],
)
def test_unsafe_files_are_refused_before_anything_opens_them(inv, capsys, rel, make):
    path = inv.path(rel)
    path.unlink(missing_ok=True)
    make(path)
    started = time.monotonic()
    outcome = run_check(capsys, inv.root)
    assert time.monotonic() - started < HANG_S / 2
    assert outcome.code == 2
    [problem] = outcome.errors("file.unsafe")
    assert rel in problem["location"] and "refusing to read it" in problem["message"]


def test_validate_loader_refuses_unsafe_files(inv):
    from clusterforge.errors import InvalidInput
    from clusterforge.validation.inventory import load_inventory

    os.mkfifo(inv.path("group_vars/all/pipe.yml"))
    with pytest.raises(InvalidInput, match=r"pipe\.yml"):
        load_inventory(inv.root)


# --- finding 8: full matches, ASCII digits -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("nvidia_driver_version: |\n  535.183.01\n", ["line break"]),
        ('nvidia_driver_version: "\u0665\u0663\u0665.183.01"\n', ["non-ASCII"]),
        ("cuda_version: 12.10\n", ["quoted string", "number 12.1"]),
        ("cuda_version: latest\n", ["'latest' is not a version"]),
    ],
    ids=["block-scalar-newline", "arabic-indic-digits", "float", "latest"],
)
def test_bom_values_must_match_their_format_in_full(inv, capsys, text, words):
    variable = text.split(":")[0]
    path = inv.path("group_vars/all/versions.yml")
    kept = [line for line in path.read_text().splitlines() if not line.startswith(f"{variable}:")]
    path.write_text("\n".join(kept) + "\n" + text)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    [problem] = [p for p in outcome.errors("bom.format") if p["variable"] == variable]
    assert all(w in problem["message"] for w in words), problem


def test_host_name_ending_in_a_newline_is_not_a_dns_name(inv, capsys):
    text = inv.path("hosts.yml").read_text()
    inv.write("hosts.yml", text.replace("        gpu-r1-n04:\n", '        "gpu-r1-n04\\n":\n', 1))
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    assert any("gpu-r1-n04\\n" in p["message"] for p in outcome.errors("host.name"))


# --- finding 11: contradictions ----------------------------------------------------------------


def test_host_defined_twice_with_different_values(inv, capsys):
    inv.write(
        "more-hosts.yml",
        "all:\n  children:\n    gpu_nvidia:\n      hosts:\n        gpu-r1-n01:\n          rack: r9\n",
    )
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    [problem] = outcome.errors("host.redefined")
    assert problem["host"] == "gpu-r1-n01" and problem["variable"] == "rack"
    assert "'r1'" in problem["message"] and "'r9'" in problem["message"]
    # Both places are named: the first in the message, the one Ansible keeps as the location.
    assert "hosts.yml:" in problem["message"] and "more-hosts.yml" in problem["location"]


def test_invalid_port_does_not_hide_a_duplicate_address(inv, capsys):
    inv.set_host_var("gpu-r1-n02", "ansible_host", "10.10.1.11")  # gpu-r1-n01's address
    inv.set_host_var("gpu-r1-n02", "ansible_port", "ssh")
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    duplicates = [p for p in outcome.errors("ip.duplicate") if p["variable"] == "ansible_host"]
    assert {p["host"] for p in duplicates} == {"gpu-r1-n01", "gpu-r1-n02"}
    [port] = outcome.errors("host.port")
    assert port["host"] == "gpu-r1-n02" and "integer 1-65535" in port["message"]


@pytest.mark.parametrize("port", [0, 65536, -22, True, "22x"])
def test_ansible_port_must_be_a_tcp_port(inv, capsys, port):
    inv.set_host_var("gpu-r1-n03", "ansible_port", port)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 2
    [problem] = outcome.errors("host.port")
    assert problem["host"] == "gpu-r1-n03" and problem["variable"] == "ansible_port"


def test_distinct_valid_ports_on_one_address_are_distinct_nodes(inv, capsys):
    for index, host in enumerate(("gpu-r1-n01", "gpu-r1-n02")):
        inv.set_host_var(host, "ansible_host", "10.10.1.11")
        inv.set_host_var(host, "ansible_port", 2201 + index)
    outcome = run_check(capsys, inv.root)
    assert outcome.code == 0, outcome.out


# --- finding 14: YAML alias bomb ---------------------------------------------------------------

_BOMB = """\
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
{variable}: {{bomb: [*h, *h, *h, *h, *h, *h, *h, *h, *h]}}
"""


def test_alias_bomb_in_a_checked_variable_is_refused(inv, capsys):
    inv.write("group_vars/all/zz-bomb.yml", _BOMB.format(variable="clusterforge_sku_catalog"))
    started = time.monotonic()
    outcome = run_check(capsys, inv.root)
    assert time.monotonic() - started < HANG_S / 2
    assert outcome.code == 2
    [problem] = outcome.errors("vars.too_large")
    assert problem["variable"] == "clusterforge_sku_catalog" and "zz-bomb.yml" in problem["location"]
    assert "aliases" in problem["message"]


def test_alias_bomb_is_refused_by_the_validate_loader(inv):
    from clusterforge.errors import InvalidInput
    from clusterforge.validation.inventory import load_inventory

    inv.write("group_vars/all/zz-bomb.yml", _BOMB.format(variable="validate_required_mounts"))
    hostvars = load_inventory(inv.root).vars_of("gpu-r1-n01")
    with pytest.raises(InvalidInput, match="validate_required_mounts expands to more than"):
        hostvars["validate_required_mounts"]


# --- finding 16: host lists ----------------------------------------------------------------------


def test_host_list_is_an_inventory_not_a_path(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing named "a,b," exists here, and no group_vars/ may be read
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("node_sku: [broken\n")
    outcome = run_check(capsys, "gpu-a,gpu-b,")
    assert outcome.code == 2
    required = outcome.errors("vars.required")
    assert {p["host"] for p in required} == {"gpu-a", "gpu-b"}
    assert all(p["file"] is None for p in outcome.problems)
    assert not outcome.errors("yaml.syntax")


def test_validate_loader_takes_a_host_list():
    from clusterforge.validation.inventory import load_inventory

    inventory = load_inventory("node-1,node-2,")
    assert inventory.targets == ["node-1", "node-2"]
    assert inventory.group_hosts("ungrouped") == ["node-1", "node-2"] and inventory.groups_of("node-1") == []


def test_ansible_inventory_agrees_on_the_host_list():
    """The host list is what Ansible itself makes of -i 'a,b,' (no file is read)."""
    result = subprocess.run(
        [str(VENV_BIN / "ansible-inventory"), "-i", "node-1,node-2,", "--list"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0 and "node-1" in result.stdout and "node-2" in result.stdout
