"""`clusterforge validate` through its entry point: exit codes, --from-capture, report files."""

import errno
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from clusterforge.main import main
from clusterforge.validation import workflow

HEALTHY = Path(__file__).resolve().parents[2] / "fixtures" / "captures" / "h100-healthy"


def run_cli(*args):
    with pytest.raises(SystemExit) as exited:
        main(["validate", *args])
    return exited.value.code


def make_capture(root, mounts=("/mnt/jfs",), meta=None):
    root.mkdir()
    meta = {"hostname": "cpu-r9-n01", "node_sku": "cpu-generic"} if meta is None else meta
    (root / "meta.json").write_text(json.dumps(meta))
    lines = ["sysfs /sys sysfs rw,nosuid 0 0"] + [f"jfs {m} fuse.juicefs rw 0 0" for m in mounts]
    (root / "proc-mounts.txt").write_text("\n".join(lines) + "\n")
    for name in ("chronyc-tracking.txt", "df-P-k-root.txt"):  # the node-level checks of every node
        shutil.copy(HEALTHY / name, root / name)
    return root


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--quarantine-on-error", "-i", "x"], "only apply with --quarantine"),
        (["--sku", "cpu-generic", "-i", "x"], "only apply with --from-capture"),
        ([], "no inventory"),
        (["-i", "/nonexistent/inventory"], "does not exist"),
        (["--from-capture", "/nonexistent/capture"], "is not a directory"),
        (["--format", "yaml", "-i", "x"], "Invalid value for '--format'"),
        (["--skip-check", "gpu.typo", "-i", "x"], "unknown check id(s) gpu.typo"),
        (["--from-capture", ""], "Invalid value for '--from-capture': must not be empty"),
        (["--from-capture", " "], "Invalid value for '--from-capture': must not be empty"),
        (["-i", ""], "Invalid value for '-i' / '--inventory': must not be empty"),
        (["-i", "x", "--out", ""], "Invalid value for '--out': must not be empty"),
        (["--from-capture", "/nonexistent", "--bom", ""], "Invalid value for '--bom': must not be empty"),
        (["--from-capture", "/nonexistent", "--sku", ""], "Invalid value for '--sku': must not be empty"),
        (["--from-capture", "/nonexistent", "--limit", ""], "--limit and --forks do not apply"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, words, capsys):
    assert run_cli(*args) == 2
    assert words in capsys.readouterr().err


def test_capture_of_a_healthy_node_passes_and_writes_every_report(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    bom = tmp_path / "bom.yml"
    bom.write_text("validate_required_mounts: [/mnt/jfs]\n")
    out = tmp_path / "out"
    assert (
        run_cli("--from-capture", str(capture), "--bom", str(bom), "--out", str(out), "--format", "json") == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((out / "report.json").read_text())
    assert printed["run"]["source"] == "capture"
    [node] = printed["nodes"]
    assert node["host"] == "cpu-r9-n01"
    assert node["status"] == "pass"
    assert {c["id"]: c["status"] for c in node["checks"]}["node.mounts"] == "pass"
    assert (
        (out / "junit.xml").is_file()
        and (out / "report.html").is_file()
        and (out / "clusterforge.prom").is_file()
    )


def test_capture_missing_a_mount_fails_with_evidence(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap", mounts=())
    bom = tmp_path / "bom.yml"
    bom.write_text("validate_required_mounts: [/mnt/jfs]\n")
    out = tmp_path / "out"
    assert run_cli("--from-capture", str(capture), "--bom", str(bom), "--out", str(out)) == 3
    captured = capsys.readouterr()
    assert "node.mounts" in captured.out
    assert "1 of 1 node(s) failed validation: cpu-r9-n01" in captured.err
    [node] = json.loads((out / "report.json").read_text())["nodes"]
    mounts = next(c for c in node["checks"] if c["id"] == "node.mounts")
    assert mounts["status"] == "fail"
    assert "/mnt/jfs" in mounts["message"]
    assert mounts["evidence"]


def test_capture_sku_comes_from_the_flag_over_meta(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap", meta={"hostname": "x"})
    assert run_cli("--from-capture", str(capture), "--out", str(tmp_path / "o1")) == 2
    assert "no SKU for the capture" in capsys.readouterr().err
    assert run_cli("--from-capture", str(capture), "--sku", "hgx-h900", "--out", str(tmp_path / "o2")) == 2
    err = capsys.readouterr().err
    assert "host x: variable node_sku" in err and "hgx-h900" in err
    assert run_cli("--from-capture", str(capture), "--sku", "cpu-generic", "--out", str(tmp_path / "o3")) == 0


def test_capture_with_broken_meta_or_bom(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    (capture / "meta.json").write_text("{not json")
    assert run_cli("--from-capture", str(capture), "--sku", "cpu-generic", "--out", str(tmp_path / "o")) == 2
    assert "meta.json is not valid JSON" in capsys.readouterr().err
    (capture / "meta.json").write_text("{}")
    bom = tmp_path / "bom.yml"
    bom.write_text("- just\n- a list\n")
    args = [
        "--from-capture",
        str(capture),
        "--sku",
        "cpu-generic",
        "--bom",
        str(bom),
        "--out",
        str(tmp_path / "o"),
    ]
    assert run_cli(*args) == 2
    assert "must be a mapping of BOM variables" in capsys.readouterr().err


# ------------------------------------------------------------ --out (finding 5) ----


def test_unwritable_out_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    capture = make_capture(tmp_path / "cap")
    (tmp_path / "a-file").write_text("")

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("validated although --out is unwritable")

    monkeypatch.setattr(workflow, "finish", must_not_run)
    assert run_cli("--from-capture", str(capture), "--out", str(tmp_path / "a-file" / "out")) == 2
    err = capsys.readouterr().err
    assert f"error: --out {tmp_path}/a-file/out: cannot write reports there" in err
    assert "fix: pass --out with a folder you can write to" in err


def test_default_reports_folder_that_cannot_be_made_is_refused(tmp_path, capsys, monkeypatch):
    capture = make_capture(tmp_path / "cap")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("not a folder")  # as a read-only current folder would, mkdir fails
    assert run_cli("--from-capture", str(capture)) == 2
    err = capsys.readouterr().err
    assert "error: --out reports/validate-" in err and "the default is reports/" in err


def test_unwritable_out_on_a_fleet_stops_before_the_playbook(tmp_path, capsys, monkeypatch):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    n1: {node_sku: cpu-generic, ansible_connection: local}\n")
    (tmp_path / "a-file").write_text("")

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("the playbook ran although --out is unwritable")

    monkeypatch.setattr(workflow, "run_playbook", must_not_run)
    assert run_cli("-i", str(inventory), "--out", str(tmp_path / "a-file" / "out")) == 2
    assert "cannot write reports there" in capsys.readouterr().err


def _fail_writing_into(monkeypatch, *folders):
    real = workflow.reports.write_all

    def write_all(report, out_dir):
        if out_dir in folders or not folders:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(report, out_dir)

    monkeypatch.setattr(workflow.reports, "write_all", write_all)


@pytest.mark.parametrize(("mounts", "verdict"), [(("/mnt/jfs",), 0), ((), 3)])
def test_reports_failing_after_validation_keep_the_verdict(tmp_path, capsys, monkeypatch, mounts, verdict):
    capture = make_capture(tmp_path / "cap", mounts=mounts)
    bom = tmp_path / "bom.yml"
    bom.write_text("validate_required_mounts: [/mnt/jfs]\n")
    out = tmp_path / "out"
    _fail_writing_into(monkeypatch, out)
    args = ["--from-capture", str(capture), "--bom", str(bom), "--out", str(out), "--format", "json"]
    assert run_cli(*args) == verdict
    captured = capsys.readouterr()
    assert f"error: cannot write the reports into {out}/: [Errno 28] No space left on device" in captured.err
    fallback = Path(captured.err.split("the reports were written to ")[1].split("/ instead")[0])
    assert json.loads(captured.out) == json.loads((fallback / "report.json").read_text())
    assert "internal error" not in captured.err
    shutil.rmtree(fallback)


def test_no_report_anywhere_still_keeps_the_verdict(tmp_path, capsys, monkeypatch):
    capture = make_capture(tmp_path / "cap", mounts=())
    bom = tmp_path / "bom.yml"
    bom.write_text("validate_required_mounts: [/mnt/jfs]\n")
    _fail_writing_into(monkeypatch)
    assert run_cli("--from-capture", str(capture), "--bom", str(bom), "--out", str(tmp_path / "o")) == 3
    err = capsys.readouterr().err
    assert "error: no report file written (a temporary folder failed too" in err
    assert "1 of 1 node(s) failed validation: cpu-r9-n01" in err
    assert "see the errors above" in err


# ------------------------------------------------- --bom formats and files (9, 15) ----


def capture_with_bom(tmp_path, text: str | bytes):
    capture = make_capture(tmp_path / "cap")
    bom = tmp_path / "bom.yml"
    if isinstance(text, bytes):
        bom.write_bytes(text)
    else:
        bom.write_text(text)
    return [
        "--from-capture",
        str(capture),
        "--sku",
        "cpu-generic",
        "--bom",
        str(bom),
        "--out",
        str(tmp_path / "o"),
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("cuda_version: 12.10\n", "cuda_version must be a quoted string, got the number 12.1"),
        ("nvidia_driver_version: latest\n", "nvidia_driver_version 'latest' is not a version"),
        ('cann_version: "{{ site_cann }}"\n', "cann_version '{{ site_cann }}' is a template, not a version"),
        ('nvidia_driver_version: "535.183.01\\n"\n', "has leading or trailing white space or a line break"),
        ('nvidia_driver_version: "٥٣٥.183.01"\n', "contains non-ASCII characters"),
        ("dcgm_version: [3, 3, 9]\n", "dcgm_version must be a quoted string, got the list"),
    ],
)
def test_bom_versions_in_a_wrong_form_are_bad_input_not_bad_nodes(tmp_path, capsys, text, words):
    args = capture_with_bom(tmp_path, text)
    assert run_cli(*args) == 2
    err = capsys.readouterr().err
    assert f"error: --bom {tmp_path}/bom.yml: " in err
    assert words in err
    assert f"fix: correct {tmp_path}/bom.yml: each version a quoted string" in err
    assert not (tmp_path / "o").exists()  # nothing validated, no report


def test_an_empty_bom_entry_means_not_pinned(tmp_path, capsys):
    assert run_cli(*capture_with_bom(tmp_path, 'cuda_version:\nnccl_version: ""\n')) == 0


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (bytes(range(256)) * 4, "is not UTF-8 text (undecodable byte at offset 128): a binary file?"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "is not valid YAML or JSON"),
        (b"cuda_version: [", "is not valid YAML or JSON (line 1, column 16)"),
        (b'{"cuda_version": "12.2"', "is not valid YAML or JSON"),
        (b"a: &x [1, 2]\nb: [*x, *x, *x]\n", "YAML aliases (*name) are not allowed here"),
        (b"just text\n", "must be a mapping of BOM variables, got a YAML str"),
        (b"", "must be a mapping of BOM variables, got an empty file"),
        (b"x: '" + b"a" * (1024 * 1024) + b"'\n", "over the limit of 1048576 bytes"),
    ],
)
def test_a_bom_that_is_no_yaml_mapping_is_bad_input(tmp_path, capsys, content, words):
    assert run_cli(*capture_with_bom(tmp_path, content)) == 2
    err = capsys.readouterr().err
    assert f"error: --bom {tmp_path}/bom.yml" in err and words in err
    assert "fix: pass a YAML or JSON mapping of BOM variables" in err
    assert "internal error" not in err


def test_a_bom_fifo_is_refused_without_hanging(tmp_path, capsys, watchdog):
    args = capture_with_bom(tmp_path, "")
    (tmp_path / "bom.yml").unlink()
    os.mkfifo(tmp_path / "bom.yml")
    assert run_cli(*args) == 2
    assert f"error: --bom {tmp_path}/bom.yml is a FIFO, not a regular file" in capsys.readouterr().err


def test_a_bom_link_to_a_device_is_refused(tmp_path, capsys, watchdog):
    args = capture_with_bom(tmp_path, "")
    (tmp_path / "bom.yml").unlink()
    (tmp_path / "bom.yml").symlink_to("/dev/zero")
    assert run_cli(*args) == 2
    assert "is a character device, not a regular file" in capsys.readouterr().err


def test_a_missing_bom_is_bad_input(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    assert run_cli("--from-capture", str(capture), "--bom", str(tmp_path / "nope.yml")) == 2
    assert f"error: --bom {tmp_path}/nope.yml: No such file or directory" in capsys.readouterr().err


def test_a_good_bom_passes(tmp_path, capsys):
    text = 'nvidia_driver_version: "535.183.01"\ncuda_version: "12.10"\ncann_version: "8.0.RC2"\n'
    assert run_cli(*capture_with_bom(tmp_path, text)) == 0


# ------------------------------------------- --from-capture -i INV --host H (9) ----


TEMPLATED_INVENTORY = """\
all:
  vars:
    cuda_version: "{{ lookup('env', 'CF_TEST_CUDA') }}"
  hosts:
    cpu-r9-n01:
      node_sku: cpu-generic
"""


def test_a_still_templated_inventory_version_is_not_compared(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(TEMPLATED_INVENTORY)
    args = ["--from-capture", str(capture), "-i", str(inventory), "--host", "cpu-r9-n01"]
    assert run_cli(*args, "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert "error: host cpu-r9-n01: value(s) only Ansible can resolve, not compared with the capture" in err
    assert f"cuda_version from inventory {inventory}: {{{{ lookup('env', 'CF_TEST_CUDA') }}}}" in err
    assert "fix: give --bom FILE with the literal versions" in err
    # The literal value from --bom replaces the template.
    bom = tmp_path / "bom.yml"
    bom.write_text('cuda_version: "12.2"\n')
    assert run_cli(*args, "--bom", str(bom), "--out", str(tmp_path / "o2")) == 0


# ---------------------------------------------------- --from-capture flags (12) ----


def test_skip_check_applies_to_a_capture(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap", mounts=())
    bom = tmp_path / "bom.yml"
    bom.write_text("validate_required_mounts: [/mnt/jfs]\n")
    out = tmp_path / "out"
    args = [
        "--from-capture",
        str(capture),
        "--bom",
        str(bom),
        "--out",
        str(out),
        "--skip-check",
        "node.mounts",
    ]
    assert run_cli(*args) == 0
    [node] = json.loads((out / "report.json").read_text())["nodes"]
    assert {c["id"]: c["status"] for c in node["checks"]}["node.mounts"] == "skip"


def test_unknown_check_ids_are_refused_with_a_capture_too(tmp_path, capsys):
    from cfcore.checks import CHECK_IDS

    capture = make_capture(tmp_path / "cap")
    assert run_cli("--from-capture", str(capture), "--skip-check", "gpu.typo", "--skip-check", "gpu.xid") == 2
    err = capsys.readouterr().err
    assert "error: --skip-check: unknown check id(s) gpu.typo\n" in err
    assert f"fix: use one of the known ids: {', '.join(CHECK_IDS)}" in err


def test_host_without_an_inventory_is_refused(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    assert run_cli("--from-capture", str(capture), "--host", "n9", "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert "error: --host needs -i" in err and "fix: add -i INVENTORY, or drop --host" in err
    assert not (tmp_path / "o").exists()


def test_capture_meta_that_is_a_fifo_is_refused_without_hanging(tmp_path, capsys, watchdog):
    capture = make_capture(tmp_path / "cap")
    (capture / "meta.json").unlink()
    os.mkfifo(capture / "meta.json")
    assert run_cli("--from-capture", str(capture), "--sku", "cpu-generic") == 2
    assert "meta.json is a FIFO, not a regular file" in capsys.readouterr().err


def test_inventory_host_names_the_capture_node(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        textwrap.dedent("""\
        all:
          hosts:
            n9: {node_sku: cpu-generic}
    """)
    )
    out = tmp_path / "o"
    assert (
        run_cli("--from-capture", str(capture), "-i", str(inventory), "--host", "n9", "--out", str(out)) == 0
    )
    assert [n["host"] for n in json.loads((out / "report.json").read_text())["nodes"]] == ["n9"]


def vaulted_inventory(tmp_path) -> Path:
    """An inventory whose cuda_version is an inline !vault value (its password is not given to the CLI)."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = VaultSecret(b"not-given-to-the-cli")
    cipher = VaultLib([("default", secret)]).encrypt("12.2", secret).decode()
    block = textwrap.indent(cipher, " " * 8)
    inventory = tmp_path / "hosts.yml"
    host = "cpu-r9-n01: {node_sku: cpu-generic}"
    inventory.write_text(f"all:\n  vars:\n    cuda_version: !vault |\n{block}\n  hosts:\n    {host}\n")
    return inventory


def test_a_vaulted_inventory_version_without_password_is_not_compared(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE", raising=False)
    capture = make_capture(tmp_path / "cap")
    inventory = vaulted_inventory(tmp_path)
    args = [
        "--from-capture",
        str(capture),
        "-i",
        str(inventory),
        "--host",
        "cpu-r9-n01",
        "--out",
        str(tmp_path / "o"),
    ]
    assert run_cli(*args) == 2
    err = capsys.readouterr().err
    assert f"cuda_version from inventory {inventory}: vault-encrypted, no password given" in err
    assert "fix: give the vault password (ANSIBLE_VAULT_PASSWORD_FILE); give --bom FILE" in err


def test_preflight_leaves_vaulted_values_to_the_playbook(tmp_path, monkeypatch):
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE", raising=False)
    inventory = workflow.load_inventory(vaulted_inventory(tmp_path))
    assert workflow.preflight(inventory) == {"cpu-r9-n01": "cpu-generic"}


def test_validate_runs_no_inventory_script_without_allow_scripts(tmp_path, monkeypatch, capsys):
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    marker = tmp_path / "script-ran"
    script = inventory / "dynamic.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\necho \'{{"_meta": {{"hostvars": {{}}}}}}\'\n')
    script.chmod(0o755)
    assert run_cli("-i", str(inventory), "--out", str(tmp_path / "out")) == 2
    assert not marker.exists()
    assert "--allow-scripts" in capsys.readouterr().err
    # With the flag the loader runs it (and finds no hosts: still bad input, but the script ran).
    assert run_cli("-i", str(inventory), "--allow-scripts", "--out", str(tmp_path / "out")) == 2
    assert marker.exists()


def test_a_deeply_nested_meta_json_is_exit_2(tmp_path, capsys):
    capture = make_capture(tmp_path / "cap")
    (capture / "meta.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    assert (
        run_cli("--from-capture", str(capture), "--sku", "cpu-generic", "--out", str(tmp_path / "out")) == 2
    )
    err = capsys.readouterr().err
    assert "meta.json is not valid JSON: it nests too deep" in err and "fix:" in err


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "a: " + "[" * 100_000 + "]" * 100_000])
def test_a_deeply_nested_bom_file_is_exit_2(tmp_path, capsys, text):
    capture = make_capture(tmp_path / "cap")
    (tmp_path / "bom.yml").write_text(text)
    out = str(tmp_path / "out")
    assert run_cli("--from-capture", str(capture), "--bom", str(tmp_path / "bom.yml"), "--out", out) == 2
    err = capsys.readouterr().err
    assert "its YAML or JSON nests too deep" in err and "fix:" in err and "internal error" not in err
