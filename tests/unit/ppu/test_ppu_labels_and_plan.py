"""ACK node labels from ppu-smi, and role ppu's package/installer plan (cfcore rules and the filters)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cfcore.inputs import InputError
from cfcore.parsers import parse
from cfcore.parsers.ppu import RESOURCE_NAME, ack_labels, sdk_version_matches
from cfcore.ppu_packages import install_argv, package_name, plan, read_record

PPU = Path(__file__).resolve().parents[2] / "fixtures" / "ppu"
SHA = "a" * 64
MANIFEST = {"PPU_SDK_2.1.0_linux-x86_64.run": SHA, "PPU_SDK_2.0.0_linux-x86_64.run": "b" * 64}


def fixture(name: str) -> str:
    return (PPU / name).read_text()


def test_labels_from_list_and_detail():
    listed = parse("ppu-smi-list", fixture("ppu_smi_L_zw810e_x16.txt"))
    detail = parse("ppu-smi-q", fixture("ppu_smi_q_zw810e_x16.txt"))
    assert ack_labels(listed, detail) == {
        "resource": "alibabacloud.com/ppu",
        "count": 16,
        "labels": {
            "aliyun.accelerator/xpu_type": "ppu",
            "aliyun.accelerator/ppu_name": "PPU-ZW810E",
            "aliyun.accelerator/ppu_count": "16",
            "aliyun.accelerator/ppu_mem": "97920",
        },
    }
    assert RESOURCE_NAME == "alibabacloud.com/ppu"


def test_labels_without_detail_leave_out_the_memory():
    labels = ack_labels({"ppus": [{"index": 0, "name": "PPU-ZW810E", "uuid": "PPU-a"}]})["labels"]
    assert "aliyun.accelerator/ppu_mem" not in labels and labels["aliyun.accelerator/ppu_count"] == "1"


def test_labels_take_the_smallest_memory():
    listed = {"ppus": [{"name": "PPU-ZW810E"}, {"name": "PPU-ZW810E"}]}
    detail = {"ppus": [{"memory_total_mib": 97920}, {"memory_total_mib": 97000}]}
    assert ack_labels(listed, detail)["labels"]["aliyun.accelerator/ppu_mem"] == "97000"


@pytest.mark.parametrize(
    ("listed", "words"),
    [({"ppus": []}, "lists no PPU"), ({"ppus": [{"name": "A"}, {"name": "B"}]}, "not one model")],
)
def test_labels_refuse_what_no_label_set_fits(listed, words):
    with pytest.raises(ValueError, match=words):
        ack_labels(listed)


def test_sdk_version_match_rule():
    assert sdk_version_matches("2.1.0-a5f865", "2.1.0")
    assert sdk_version_matches("2.1.0-A5F865", "2.1.0-a5f865")
    assert not sdk_version_matches("2.1.0-a5f865", "2.1")
    assert not sdk_version_matches("2.10.0", "2.1.0")
    assert not sdk_version_matches(None, "2.1.0")


def test_package_name_pattern():
    assert (
        package_name("PPU_SDK_{version}_linux-{arch}.run", "2.1.0", "aarch64")
        == "PPU_SDK_2.1.0_linux-aarch64.run"
    )
    with pytest.raises(InputError, match=r"no \{version\}"):
        package_name("PPU_SDK.run", "2.1.0", "x86_64")
    with pytest.raises(InputError, match="not a plain file name"):
        package_name("../{version}.run", "2.1.0", "x86_64")
    with pytest.raises(InputError, match="ppu_sdk_version is empty"):
        package_name("PPU_SDK_{version}.run", " ", "x86_64")


def test_install_argv_replaces_only_the_placeholders():
    argv = install_argv(
        ["bash", "{package}", "--silent", "--prefix={prefix}", "$HOME;rm"], "/c/p.run", "/opt/P"
    )
    assert argv == ["bash", "/c/p.run", "--silent", "--prefix=/opt/P", "$HOME;rm"]
    with pytest.raises(InputError, match=r"never names \{package\}"):
        install_argv(["bash", "x.run"], "/c/p.run", "/opt/P")
    with pytest.raises(InputError, match="list of strings"):
        install_argv("bash {package}", "/c/p.run", "/opt/P")


def test_plan_fresh_node_installs_from_the_url():
    got = plan(MANIFEST, "2.1.0", url="http://mirror/ppu/", command=None, recorded=None)
    assert got["package"] == "PPU_SDK_2.1.0_linux-x86_64.run" and got["sha256"] == SHA
    assert got["url"] == "http://mirror/ppu/PPU_SDK_2.1.0_linux-x86_64.run" and got["source"] == "url"
    assert got["path"] == "/var/cache/clusterforge/ppu/PPU_SDK_2.1.0_linux-x86_64.run"
    assert got["argv"] == ["bash", got["path"], "--silent", "--prefix=/usr/local/PPU_SDK"]
    assert got["install"] and got["record"] == {"package": got["package"], "sha256": SHA, "version": "2.1.0"}


def test_plan_matching_record_does_not_install_and_a_changed_one_does():
    record = json.dumps({"package": "PPU_SDK_2.1.0_linux-x86_64.run", "sha256": SHA, "version": "2.1.0"})
    same = plan(MANIFEST, "2.1.0", directory="/srv/ppu", recorded=record)
    assert not same["install"] and same["reasons"] == [] and same["source"] == "dir"
    upgrade = plan(MANIFEST, "2.0.0", directory="/srv/ppu", recorded=record)
    assert upgrade["install"] and "recorded version 2.1.0 -> 2.0.0" in upgrade["reasons"]
    resigned = plan(
        {**MANIFEST, "PPU_SDK_2.1.0_linux-x86_64.run": "c" * 64}, "2.1.0", directory="/d", recorded=record
    )
    assert resigned["install"] and any("sha256" in r for r in resigned["reasons"])
    assert plan(MANIFEST, "2.1.0", directory="/d", recorded="not json")["install"]
    assert read_record("[1, 2]") is None


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"url": "http://m", "directory": "/d"}, "both are set"),
        ({}, "neither is set"),
        ({"directory": "/d", "version": "9.9.9"}, "ppu_packages has no PPU_SDK_9.9.9_linux-x86_64.run"),
        ({"directory": "/d", "packages": {"x.run": "nothex"}}, "is not a sha256"),
        ({"directory": "/d", "packages": {}}, "ppu_packages is empty"),
        ({"directory": "/d", "prefix": "relative/dir"}, "not an absolute path"),
    ],
)
def test_plan_refusals_name_the_variable(kwargs, words):
    args = {"packages": MANIFEST, "version": "2.1.0", **kwargs}
    with pytest.raises(InputError) as caught:
        plan(**args)
    assert words in caught.value.message and caught.value.fix


def test_filters_adapt_the_rules():
    from ansible.errors import AnsibleFilterError
    from ansible.plugins.loader import filter_loader, init_plugin_loader
    from clusterforge.ansible_env import ensure_collection_link

    init_plugin_loader([str(ensure_collection_link().parents[2])])
    filters = {
        name: filter_loader.get(f"clusterforge.cluster.{name}").j2_function
        for name in ("cf_ppu_labels", "cf_ppu_plan")
    }
    labels = filters["cf_ppu_labels"](
        fixture("ppu_smi_L_zw810e_x16.txt"), fixture("ppu_smi_q_zw810e_x16.txt")
    )
    assert labels["count"] == 16 and labels["labels"]["aliyun.accelerator/ppu_mem"] == "97920"
    with pytest.raises(AnsibleFilterError, match="ppu-smi output not understood"):
        filters["cf_ppu_labels"]("GPU 0: NVIDIA H100 (UUID: GPU-1)\n")
    got = filters["cf_ppu_plan"](MANIFEST, version="2.1.0", directory="/srv", recorded="")
    assert got["install"] and got["source"] == "dir"
    with pytest.raises(AnsibleFilterError, match=r"fix: .*ppu_package_url"):
        filters["cf_ppu_plan"](MANIFEST, version="2.1.0")
