"""cfcore.ascend_labels and the ascend_runtime filters: labels, resource, manifest files, install info."""

from __future__ import annotations

import importlib

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import init_plugin_loader
from cfcore import ascend_labels as al
from cfcore.catalog import sku_spec
from cfcore.inputs import InputError
from clusterforge.ansible_env import ensure_collection_link

init_plugin_loader([str(ensure_collection_link().parents[2])])
flt = importlib.import_module("ansible_collections.clusterforge.cluster.plugins.filter.ascend_runtime")

SHA = "0" * 64


@pytest.mark.parametrize(
    ("sku", "arch", "accelerator_type", "count"),
    [
        ("atlas-800t-a2", "x86_64", "module-910b-8", 8),
        ("atlas-800t-a3", "aarch64", "module-a3-16", 16),
        ("atlas-800-9000", "arm64", "module", 8),
    ],
)
def test_labels_of_the_catalog_skus(sku, arch, accelerator_type, count):
    result = al.node_labels(sku_spec(sku), arch)
    assert result["labels"] == {
        "workerselector": "dls-worker-node",
        "host-arch": "huawei-x86" if arch == "x86_64" else "huawei-arm",
        "accelerator": "huawei-Ascend910",
        "accelerator-type": accelerator_type,
    }
    assert result["resource"] == "huawei.com/Ascend910" and result["resource_count"] == count


def test_310p_is_its_own_resource():
    sku = {"accelerator": {"vendor": "huawei", "model": "310P3", "count": 4}}
    result = al.node_labels(sku, "x86_64")
    assert result["resource"] == "huawei.com/Ascend310P"
    assert (
        result["labels"]["accelerator"] == "huawei-Ascend310P"
        and result["labels"]["accelerator-type"] == "card"
    )


@pytest.mark.parametrize(
    ("sku", "arch", "message"),
    [
        ({"accelerator": {"vendor": "nvidia", "model": "H100", "count": 8}}, "x86_64", "not huawei"),
        ({"accelerator": None}, "x86_64", "the SKU's accelerator is none"),
        ({"accelerator": {"vendor": "huawei", "model": "950", "count": 8}}, "x86_64", "not an Ascend chip"),
        ({"accelerator": {"vendor": "huawei", "model": "910B", "count": 8}}, "ppc64le", "neither x86_64"),
    ],
)
def test_refusals_name_the_problem(sku, arch, message):
    with pytest.raises(InputError, match=message):
        al.node_labels(sku, arch)


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("version=v6.0.0\narch=x86_64\n", "6.0.0"),
        ("arch=aarch64\nversion=v5.0.RC3\npath=/usr/local/Ascend/Ascend-Docker-Runtime\n", "5.0.RC3"),
        ("version=26.1.0\n", "26.1.0"),
        ("", ""),
        ("version=\n", ""),
    ],
)
def test_installed_runtime_version(text, version):
    assert al.installed_runtime_version(text) == version
    assert flt.cf_ascend_runtime_installed(text) == version


def test_strip_v_keeps_words_starting_with_v():
    assert al.strip_v("v6.0.0") == "6.0.0" and al.strip_v("6.0.0") == "6.0.0" and al.strip_v("vx") == "vx"


def test_filter_labels_and_unknown_sku():
    assert flt.cf_ascend_labels("atlas-800t-a2", {}, "x86_64")["labels"]["host-arch"] == "huawei-x86"
    with pytest.raises(AnsibleFilterError, match="node_sku hgx-h100-8gpu: the SKU's accelerator is nvidia"):
        flt.cf_ascend_labels("hgx-h100-8gpu", {}, "x86_64")


def test_runtime_files_from_the_manifest():
    manifest = {
        "Ascend-docker-runtime_6.0.0_linux-x86_64.run": SHA,
        "Ascend-docker-runtime_6.0.0_linux-aarch64.run": "1" * 64,
        "Ascend-mindxdl-npu-exporter_6.0.0_linux-x86_64.zip": "sha256:" + "A" * 64,
        "Ascend-hdk-910b-npu-driver_25.2.0_linux-x86-64.run": SHA,
    }
    files = flt.cf_ascend_runtime_files(
        manifest, "6.0.0", "6.0.0", "x86_64", "/var/cache/clusterforge/ascend/"
    )
    assert files["docker_runtime"] == {
        "name": "Ascend-docker-runtime_6.0.0_linux-x86_64.run",
        "sha256": SHA,
        "path": "/var/cache/clusterforge/ascend/Ascend-docker-runtime_6.0.0_linux-x86_64.run",
    }
    assert files["npu_exporter"]["sha256"] == "a" * 64
    only_runtime = flt.cf_ascend_runtime_files(manifest, "6.0.0", None, "aarch64", "/c")
    assert list(only_runtime) == ["docker_runtime"] and only_runtime["docker_runtime"]["sha256"] == "1" * 64
    # ascend_docker_runtime_enabled: false picks no runtime file
    only_exporter = flt.cf_ascend_runtime_files(manifest, None, "6.0.0", "x86_64", "/c")
    assert list(only_exporter) == ["npu_exporter"]


def test_runtime_files_refusals():
    with pytest.raises(AnsibleFilterError, match="ascend_packages must be a non-empty mapping"):
        flt.cf_ascend_runtime_files({}, "6.0.0", "6.0.0", "x86_64", "/c")
    manifest = {"Ascend-docker-runtime_6.0.0_linux-x86_64.run": SHA}
    with pytest.raises(AnsibleFilterError, match="no file matches the npu_exporter pattern"):
        flt.cf_ascend_runtime_files(manifest, "6.0.0", "6.0.0", "x86_64", "/c")
    with pytest.raises(AnsibleFilterError, match="no file matches the docker_runtime pattern"):
        flt.cf_ascend_runtime_files(manifest, "7.0.0", None, "x86_64", "/c")
