"""`clusterforge validate` through its entry point: exit codes, --from-capture, report files."""

import json

import pytest
from clusterforge.main import main


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
    assert run_cli("--from-capture", str(capture), "--bom", str(bom), "--out", str(out), "--host", "n9") == 3
    captured = capsys.readouterr()
    assert "node.mounts" in captured.out
    assert "1 of 1 node(s) failed validation: n9" in captured.err
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
