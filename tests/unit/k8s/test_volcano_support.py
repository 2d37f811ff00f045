"""Helpers of the volcano / k8s_device_plugins tests (no tests here): facts, the render run, validation.

`render(tmp, roles)` runs each role's `tasks/render.yml` (entry point `render`) on localhost with
inventories/example plus a generated inventory holding every k8s worker's facts, built from the
SKU catalog as the render harness does (tests/k8s_render/render.yml): `clusterforge_accelerators`
(vendor, accelerator_count, accelerator_models, npus, hcas) and `ansible_architecture`. The
architecture is an assumption of the test: aarch64 (Kunpeng) for Huawei SKUs, x86_64 otherwise.

`validate(doc, k8s_version)`: one document through the render harness's validator
(tests/k8s_render/validate.py, on sys.path from conftest.py): built-in kinds with
kubernetes-validate (strict), `*.volcano.sh` kinds with their JSON schemas; a kind without a
schema fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from cfcore.catalog import sku_spec
from validate import validate_document

ROOT = Path(__file__).resolve().parents[3]
ENV_BIN = Path(sys.executable).parent
EXAMPLE = ROOT / "inventories" / "example"


def facts_from_sku(sku_name: str) -> dict:
    """clusterforge_accelerators of a healthy node of the SKU (the shape of accelerator_facts)."""
    sku = sku_spec(sku_name)
    acc = sku.get("accelerator") or {}
    vendor = acc.get("vendor")
    count = int(acc.get("count") or 0)
    chips = int(acc.get("chips_per_device") or 1)
    if vendor == "nvidia":
        models = [f"NVIDIA {acc['model']}"]
    elif vendor == "huawei":
        models = [str(acc["model"])]
    else:
        models = []
    npus = [{"npu_id": i // chips, "chip_id": i % chips, "name": models[0]} for i in range(count * chips)]
    hca = sku.get("hca") or {}
    hcas = [
        {
            "name": f"mlx5_{n}",
            "type": "MT4129",
            "ports": [{"port": 1, "state": "Active", "link_layer": hca.get("link_layer")}],
        }
        for n in range(int(hca.get("count") or 0))
    ]
    return {
        "vendor": vendor if count else None,
        "accelerator_count": count,
        "accelerator_models": models,
        "npus": npus if vendor == "huawei" else [],
        "gpus": [],
        "hca_count": len(hcas),
        "hcas": hcas,
    }


def architecture_of(sku_name: str) -> str:
    acc = sku_spec(sku_name).get("accelerator") or {}
    return "aarch64" if acc.get("vendor") == "huawei" else "x86_64"


def example_hosts() -> dict:
    """{host: node_sku} of the example inventory's k8s_workers."""
    doc = yaml.safe_load((EXAMPLE / "hosts.yml").read_text())
    children = doc["all"]["children"]
    skus: dict = {}

    def walk(group: dict) -> None:
        for host, hvars in ((group or {}).get("hosts") or {}).items():
            if hvars and "node_sku" in hvars:
                skus[host] = hvars["node_sku"]
        for child in ((group or {}).get("children") or {}).values():
            walk(child)

    for group in children.values():
        walk(group)
    return {host: skus[host] for host in children["k8s_workers"]["hosts"]}


def example_vars(name: str):
    for path in sorted((EXAMPLE / "group_vars" / "all").glob("*.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        if name in data:
            return data[name]
    raise KeyError(name)


def render(tmp: Path, roles: list, extra_vars: dict | None = None, workers: dict | None = None):
    """Run each role's render entry point on localhost; returns (CompletedProcess, manifest root)."""
    manifest_root = tmp / "manifests"
    hosts = (
        workers
        if workers is not None
        else {
            host: {
                "clusterforge_accelerators": facts_from_sku(sku),
                "ansible_architecture": architecture_of(sku),
            }
            for host, sku in example_hosts().items()
        }
    )
    facts_inventory: dict = {
        "all": {
            "hosts": {
                "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                **hosts,
            }
        }
    }
    if workers is not None:  # a cluster of the test's own: no example inventory
        facts_inventory["all"]["children"] = {"k8s_workers": {"hosts": dict.fromkeys(workers)}}
        inventories = ["-i", str(tmp / "facts.yml")]
    else:
        inventories = ["-i", str(EXAMPLE), "-i", str(tmp / "facts.yml")]
    (tmp / "facts.yml").write_text(yaml.safe_dump(facts_inventory))
    plays = [
        {
            "name": "Render",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": f"Render {role}",
                    "ansible.builtin.include_role": {
                        "name": f"clusterforge.cluster.{role}",
                        "tasks_from": "render",
                    },
                }
                for role in roles
            ],
        }
    ]
    (tmp / "render.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    env = {
        **os.environ,
        "PATH": f"{ENV_BIN}:/usr/bin:/bin",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local"),
        "ANSIBLE_NOCOLOR": "1",
    }
    variables = {"k8s_manifest_dir": str(manifest_root), **(extra_vars or {})}
    done = subprocess.run(
        [
            str(ENV_BIN / "ansible-playbook"),
            *inventories,
            str(tmp / "render.yml"),
            "-e",
            json.dumps(variables),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    return done, manifest_root


def documents(path: Path) -> list:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def validate(doc: dict, k8s_version: str) -> None:
    """Raise AssertionError with the render harness's problems when `doc` is invalid (or has no schema)."""
    problems = validate_document(doc, k8s_version, f"{doc.get('kind')} {doc.get('metadata', {}).get('name')}")
    assert not problems, "; ".join(problems)
