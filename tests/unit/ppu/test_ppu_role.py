"""Role ppu: argument specs typed, described and agreeing with the defaults; the playbook; the README."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "ppu"
REQUIRED = {"node_sku", "ppu_sdk_version", "ppu_packages"}


def options() -> dict:
    return yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"][
        "options"
    ]


def defaults() -> dict:
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()) or {}


def validate(**values):
    spec = {name: {k: v for k, v in opt.items() if k != "description"} for name, opt in options().items()}
    return ArgumentSpecValidator(spec).validate(values)


def test_every_option_is_typed_and_described():
    for name, option in options().items():
        assert option.get("type"), name
        assert option.get("description"), name


def test_defaults_match_the_spec_and_required_ones_have_none():
    spec = options()
    for name, value in defaults().items():
        assert name in spec, f"{name} is in defaults/main.yml but not in meta/argument_specs.yml"
        assert spec[name].get("default") == value, name
    assert {n for n, o in spec.items() if o.get("required")} == REQUIRED
    assert not REQUIRED & set(defaults())


def test_spec_accepts_a_good_host_and_names_missing_variables():
    good = validate(
        node_sku="alibaba-ppu-zw810e-16",
        ppu_sdk_version="2.1.0",
        ppu_packages={"PPU_SDK_2.1.0_linux-x86_64.run": "a" * 64},
        **defaults(),
    )
    assert not good.error_messages
    missing = validate(**defaults())
    assert any("ppu_sdk_version" in m and "ppu_packages" in m for m in missing.error_messages)
    wrong = validate(node_sku="x", ppu_sdk_version="2.1.0", ppu_packages={}, ppu_install_timeout_s="ten")
    assert any("ppu_install_timeout_s" in m for m in wrong.error_messages)


def test_os_family_vars_exist_for_both_task_paths():
    for family in ("Debian", "RedHat"):
        data = yaml.safe_load((ROLE / "vars" / f"{family}.yml").read_text())
        assert data["ppu__prerequisites"], family


def test_playbook_runs_the_role_on_npu_ppu_then_validates_those_hosts():
    plays = yaml.safe_load((ROOT / "playbooks" / "ppu.yml").read_text())
    assert plays[0]["hosts"] == "npu_ppu" and plays[0]["become"] is True
    assert plays[0]["gather_subset"] == ["min", "virtual"]
    assert plays[0]["roles"] == [{"role": "clusterforge.cluster.ppu"}]
    assert plays[1]["ansible.builtin.import_playbook"] == "validate.yml"
    # Storage comes later in site.yml: storage.yml checks the mounts (docs/design.md).
    assert plays[1]["vars"] == {
        "validate_hosts": "npu_ppu",
        "validate_extra_skip_checks": ["node.mounts", "storage.juicefs_session", "storage.ceph_health"],
    }


def test_readme_separates_public_facts_from_assumptions():
    readme = (ROLE / "README.md").read_text()
    for words in (
        "alibabacloud.com/ppu",
        "aliyun.accelerator/ppu_mem",
        "Assumptions",
        "Public documentation",
    ):
        assert words in readme
