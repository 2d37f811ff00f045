"""The checkout is the Ansible collection clusterforge.cluster: it builds, installs
and resolves by FQCN without the clusterforge CLI, and its execution environment
definition renders a build context.

The run against real nodes from a plain environment is in
tests/integration/test_validate_lab.py (it needs the lab).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
PLUGIN_DIRS = (
    "plugins/action",
    "plugins/lookup",
    "plugins/modules",
    "plugins/filter",
    "plugins/module_utils",
)


def run(argv: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def plain_env(tmp_path: Path, collections: Path) -> dict[str, str]:
    """Ansible with stock settings (no ansible.cfg of the checkout) and only `collections` installed."""
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n")
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "ANSIBLE_CONFIG": str(config),
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "PYTHONNOUSERSITE": "1",
    }


def install(tarball: Path, collections: Path, env: dict[str, str], cwd: Path) -> Path:
    """Install the tarball with plain settings (the checkout's would find its own link and skip it)."""
    argv = [
        BIN / "ansible-galaxy",
        "collection",
        "install",
        "--offline",
        "--no-deps",
        "-p",
        collections,
        tarball,
    ]
    proc = run(argv, cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    installed = collections / "ansible_collections" / "clusterforge" / "cluster"
    assert (installed / "MANIFEST.json").is_file(), proc.stdout
    return installed


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = run([BIN / "ansible-galaxy", "collection", "build", "--output-path", out, ROOT], cwd=out)
    assert proc.returncode == 0, proc.stderr
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    built = out / f"clusterforge-cluster-{version}.tar.gz"
    assert built.is_file(), proc.stdout
    return built


def test_tarball_holds_the_collection_and_nothing_of_the_cli(tarball):
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    for needed in (
        "MANIFEST.json",
        "meta/runtime.yml",
        "playbooks/validate.yml",
        "playbooks/site.yml",
        "plugins/modules/node_validate.py",
        "plugins/lookup/validation_expected.py",
        "plugins/module_utils/cfcore/expected.py",
        "plugins/module_utils/cfcore/data/skus.yml",
        "plugins/module_utils/cfcore/data/bom_rules.yml",
        "roles/base/tasks/main.yml",
        "roles/base/meta/argument_specs.yml",
    ):
        assert needed in names, needed
    leaked = sorted(
        n for n in names if n.split("/")[0] in {"cli", "tests", "scripts", "images", ".venv", "ee"}
    )
    assert leaked == []
    assert not any("/molecule/" in n or n.endswith(".pyc") for n in names)


def test_no_plugin_imports_the_cli_package():
    """Playbooks must run where only ansible-core is installed: plugins import the collection only."""
    offenders = []
    for folder in PLUGIN_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                offenders += [
                    f"{path.relative_to(ROOT)}: {name}"
                    for name in names
                    if name.split(".")[0] in ("clusterforge", "cfcore")
                ]
    assert offenders == []


def test_installed_collection_resolves_by_fqcn_without_the_checkout(tarball, tmp_path):
    collections = tmp_path / "collections"
    proc = run(
        [
            BIN / "ansible-galaxy",
            "collection",
            "install",
            "--offline",
            "-p",
            collections,
            "--no-deps",
            tarball,
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    installed = collections / "ansible_collections" / "clusterforge" / "cluster"
    assert (installed / "plugins" / "module_utils" / "cfcore" / "data" / "skus.yml").is_file()
    env = plain_env(tmp_path, collections)
    for kind, name in (
        ("module", "clusterforge.cluster.node_validate"),
        ("filter", "clusterforge.cluster.cf_hccn_findings"),
        ("role", "clusterforge.cluster.base"),
    ):
        if kind == "filter":
            # Filters have no docs page: load the plugin through Ansible's loader instead.
            code = (
                "from ansible.plugins.loader import filter_loader, init_plugin_loader\n"
                "init_plugin_loader()\n"
                f"f = filter_loader.get({name!r})\n"
                "print(f.j2_function.__module__)"
            )
            proc = run([sys.executable, "-c", code], cwd=tmp_path, env=env)
            assert proc.returncode == 0 and "ansible_collections.clusterforge.cluster" in proc.stdout, (
                proc.stderr
            )
            continue
        proc = run([BIN / "ansible-doc", "-t", kind, name], cwd=tmp_path, env=env)
        assert proc.returncode == 0, f"{name}: {proc.stderr}"
        assert str(installed) in proc.stdout or name.split(".")[-1] in proc.stdout
    # The playbook resolves by FQCN from the installed collection.
    proc = run(
        [BIN / "ansible-playbook", "-i", "localhost,", "--syntax-check", "clusterforge.cluster.validate"],
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr


def test_lookup_builds_expectations_from_the_collection_alone(tarball, tmp_path):
    """Lookup validation_expected in a Python that cannot import clusterforge or cfcore."""
    collections = tmp_path / "collections"
    run(
        [BIN / "ansible-galaxy", "collection", "install", "-p", collections, "--no-deps", tarball],
        cwd=tmp_path,
    )
    (tmp_path / "play.yml").write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: 'expected: {{ e.sku.accelerator.model }} {{ e.bom.nvidia_driver_version }}'\n"
        "      vars:\n"
        "        e: \"{{ lookup('clusterforge.cluster.validation_expected') }}\"\n"
    )
    argv = ["ansible-playbook", "-i", "localhost,", "-c", "local", "play.yml",
            "-e", "node_sku=hgx-h100-8gpu nvidia_driver_version=535.183.01"]  # fmt: skip
    code = (
        "import sys, importlib.util\n"
        "assert importlib.util.find_spec('clusterforge') is None\n"
        "assert importlib.util.find_spec('cfcore') is None\n"
        f"sys.argv = {argv!r}\n"
        "from ansible.cli.playbook import main\n"
        "main()\n"
    )
    env = plain_env(tmp_path, collections)
    # -S: no site-packages processing, so the editable installs of this checkout
    # (.pth files) are not on the path; Ansible's own packages are added by hand.
    site = next(p for p in sys.path if p.endswith("site-packages"))
    proc = run([sys.executable, "-S", "-c", f"import sys; sys.path.append({site!r})\n" + code], tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "expected: H100 535.183.01" in proc.stdout


def test_execution_environment_renders_a_build_context(tarball, tmp_path):
    ee_dir = tmp_path / "checkout"
    (ee_dir / "ee").mkdir(parents=True)
    (ee_dir / "ee" / tarball.name).write_bytes(tarball.read_bytes())
    (ee_dir / "ee" / "requirements.yml").write_text((ROOT / "ee" / "requirements.yml").read_text())
    (ee_dir / "execution-environment.yml").write_text((ROOT / "execution-environment.yml").read_text())
    context = tmp_path / "context"
    proc = run(
        [BIN / "ansible-builder", "create", "-f", "execution-environment.yml", "-c", context], cwd=ee_dir
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text()
    core_pin = next(
        line
        for line in (ROOT / "requirements/constraints.txt").read_text().splitlines()
        if line.startswith("ansible-core==")
    )
    assert core_pin in containerfile
    assert (context / "_build" / "collections" / tarball.name).is_file()
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert requirements["collections"][0]["name"] == f"/build/collections/{tarball.name}"
    # The collection declares its own needs for the image.
    declared = yaml.safe_load((ROOT / "meta" / "execution-environment.yml").read_text())
    for path in declared["dependencies"].values():
        assert (ROOT / path).is_file(), path
