"""The one contract layer: a host's variables -> node_validate's expectation (cfcore.expected)."""

import pytest
from cfcore import catalog
from cfcore.expected import InvalidExpectation, SkuResolver, build_expected, inputs_of, normalize
from cfcore.inputs import is_template

GPU_VARS = {
    "node_sku": "hgx-h100-8gpu",
    "nvidia_driver_version": "535.183.01",
    "cuda_version": "12.2",
    "cann_version": None,
    "validate_required_mounts": ["/mnt/jfs"],
    "group_names": ["gpu_nvidia", "k8s_workers"],
}


def test_gpu_host_expected_state():
    expected = build_expected("gpu-r1-n01", GPU_VARS)
    assert expected["node_sku"] == "hgx-h100-8gpu"
    assert expected["sku"]["accelerator"]["model"] == "H100"
    assert expected["bom"] == {"nvidia_driver_version": "535.183.01", "cuda_version": "12.2"}
    assert expected["required_mounts"] == ["/mnt/jfs"]
    assert expected["hccn_devices"] == []
    assert expected["sysfs_root"] == "/"
    assert expected["skip_checks"] == []
    assert expected["os_release"] is None
    assert expected["root_min_free_gib"] == 10.0


def test_required_mounts_apply_to_job_nodes_only():
    control = {
        **GPU_VARS,
        "node_sku": "cpu-generic",
        "group_names": ["k8s_control_plane", "slurm_controller"],
    }
    assert build_expected("ctl-01", control)["required_mounts"] == []
    custom = {**control, "validate_mount_groups": ["slurm_controller"]}
    assert build_expected("ctl-01", custom)["required_mounts"] == ["/mnt/jfs"]
    unknown_groups = {k: v for k, v in control.items() if k != "group_names"}
    assert build_expected("capture", unknown_groups)["required_mounts"] == ["/mnt/jfs"]


def test_site_overrides_of_the_catalog_are_applied():
    overrides = {"hgx-h100-8gpu": {"hca": {"rate_gbps": 200}}}
    expected = build_expected("gpu-r1-n01", {**GPU_VARS, "clusterforge_sku_catalog": overrides})
    assert expected["sku"]["hca"]["rate_gbps"] == 200
    assert expected["sku"]["hca"]["count"] == 8  # merged key by key


def test_sysfs_root_and_skip_checks():
    expected = build_expected(
        "n", {**GPU_VARS, "sysfs_root": "/opt/hwreplay/sysroot", "validate_skip_checks": ["gpu.mig"]}
    )
    assert expected["sysfs_root"] == "/opt/hwreplay/sysroot"
    assert expected["skip_checks"] == ["gpu.mig"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"node_sku": None}, ["host gpu-r1-n01", "node_sku is not set"]),
        ({"node_sku": "hgx-h900"}, ["host gpu-r1-n01", "variable node_sku", "hgx-h900"]),
        ({"validate_required_mounts": "/mnt/jfs"}, ["validate_required_mounts must be a list"]),
        ({"validate_required_mounts": ["mnt/jfs"]}, ["must be a list of absolute paths", "mnt/jfs"]),
        ({"hccn_devices": [{"address": "1.2.3.4"}]}, ["hccn_devices[0] lacks 'id'"]),
        ({"hccn_devices": [{"id": "٣", "address": "1.2.3.4", "netmask": "x"}]}, ["must be a device number"]),
        ({"sysfs_root": "opt"}, ["sysfs_root must be an absolute path"]),
        ({"nvidia_driver_version": ["535"]}, ["host gpu-r1-n01", "variable nvidia_driver_version"]),
        ({"cuda_version": 12.1}, ["variable cuda_version", "12.1"]),
        ({"cuda_version": "latest"}, ["variable cuda_version", "latest"]),
        ({"nvidia_driver_version": "535.183.01\n"}, ["variable nvidia_driver_version"]),
        ({"nvidia_driver_version": "{{ driver }}"}, ["nvidia_driver_version still hold Jinja templates"]),
        ({"clusterforge_sku_catalog": ["x"]}, ["clusterforge_sku_catalog", "must be a mapping"]),
        ({"os_release": "debian"}, ["os_release must be the OS ID and VERSION_ID"]),
        ({"validate_root_min_free_gib": "lots"}, ["validate_root_min_free_gib must be a number"]),
        ({"validate_root_min_free_gib": -1}, ["validate_root_min_free_gib must be a number"]),
        ({"validate_mount_groups": "gpu_nvidia"}, ["validate_mount_groups must be a list"]),
        ({"validate_skip_checks": ["gpu.typo"]}, ["host gpu-r1-n01", "unknown check ids gpu.typo"]),
    ],
)
def test_bad_variables_name_host_and_variable(change, words):
    with pytest.raises(InvalidExpectation) as caught:
        build_expected("gpu-r1-n01", {**GPU_VARS, **change})
    for word in words:
        assert word in caught.value.message
    assert caught.value.fix


def test_resolver_caches_one_catalog_per_override_set(monkeypatch):
    calls = []
    real = catalog.load_catalog
    monkeypatch.setattr(
        catalog, "load_catalog", lambda overrides=None: calls.append(overrides) or real(overrides)
    )
    resolver = SkuResolver()
    for index in range(50):
        build_expected(f"n{index}", GPU_VARS, resolver)
    assert len(calls) == 1


def test_templates_are_found_anywhere_in_the_inputs():
    assert is_template("{{ x }}")
    assert is_template({"a": [1, "{% if x %}"]})
    assert not is_template({"a": ["/mnt/jfs", 3]})
    assert inputs_of({"node_sku": "x", "juicefs_meta_url": "{{ y }}"}) == {"node_sku": "x"}


def test_os_release_plan_and_root_space_threshold():
    expected = build_expected(
        "n", {**GPU_VARS, "os_release": "Debian 12", "validate_root_min_free_gib": "20"}
    )
    checked = normalize(expected)
    assert checked["os_release"] == {"id": "debian", "version_id": "12", "text": "debian 12"}
    assert checked["root_min_free_gib"] == 20.0


def test_the_node_checks_the_sku_with_the_catalog_schema():
    """One SKU schema: the node refuses a spec the catalog would refuse, with the same words."""
    expected = build_expected("gpu-r1-n01", GPU_VARS)
    broken = {**expected["sku"], "accelerator": {**expected["sku"]["accelerator"], "count": "eight"}}
    issues = catalog.validate_catalog({"hgx-h100-8gpu": broken})
    with pytest.raises(InvalidExpectation) as caught:
        normalize({**expected, "sku": broken})
    assert issues and issues[0][1] in caught.value.message
    assert "hgx-h100-8gpu.accelerator.count" in caught.value.message


def test_defaults_the_checks_read_are_filled():
    checked = normalize(build_expected("gpu-r1-n01", GPU_VARS))
    assert checked["accelerator"]["mig_mode"] == "disabled"
    assert checked["accelerator"]["kernel_module_flavour"] == "any"
    assert checked["hca"]["rate_gbps"] == 400


def test_metrics_textfile_dir_comes_from_monitoring_textfile_dir():
    assert build_expected("gpu-r1-n01", GPU_VARS)["metrics_textfile_dir"] is None
    expected = build_expected(
        "gpu-r1-n01", {**GPU_VARS, "monitoring_textfile_dir": "/var/lib/prometheus/node-exporter/"}
    )
    assert expected["metrics_textfile_dir"] == "/var/lib/prometheus/node-exporter/"
    assert normalize(expected)["metrics_textfile_dir"] == "/var/lib/prometheus/node-exporter"
    assert inputs_of({"node_sku": "x", "monitoring_textfile_dir": "/m"}) == {
        "node_sku": "x",
        "monitoring_textfile_dir": "/m",
    }


@pytest.mark.parametrize("value", ["prometheus/textfiles", 3, ["/m"]])
def test_a_bad_monitoring_textfile_dir_names_host_and_variable(value):
    with pytest.raises(InvalidExpectation) as caught:
        build_expected("gpu-r1-n01", {**GPU_VARS, "monitoring_textfile_dir": value})
    assert "host gpu-r1-n01" in caught.value.message
    assert "monitoring_textfile_dir must be an absolute path or null" in caught.value.message
    assert "--collector.textfile.directory" in caught.value.fix
