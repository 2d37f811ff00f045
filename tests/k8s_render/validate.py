"""Validate every document the Kubernetes roles rendered (docs/design.md, "Render tests").

`validate_tree(root, k8s_version)` parses every ``*.yaml`` under root and returns the problems
(empty: all valid). Dispatch by apiVersion:

- kustomize.config.k8s.io Kustomization: ``kubectl kustomize`` on its folder, and every
  document it builds is validated as below (the folder's other files are its inputs and are
  not validated alone). A resource the roles download at apply time (Calico's calico.yaml,
  pinned by URL + sha256) is absent here: its stand-in from tests/k8s_render/standins/ (or
  schemas/volcano/standins/ for the Volcano release manifest) is
  put in its place, so the patches and image rewrites are really applied by kustomize.
- kubeadm.k8s.io, kubelet.config.k8s.io, kubeproxy.config.k8s.io: our JSON schemas in
  schemas/kubeadm/<group>_<version>_<kind lower>.json.
- groups ending in volcano.sh: schemas/volcano/<group>_<version>_<kind lower>.json.
- core and built-in API groups: kubernetes-validate, strict, at k8s_version.
- anything else: a problem "no schema for <apiVersion> <kind>".

Also a CLI: python tests/k8s_render/validate.py ROOT K8S_VERSION (exit 1 on problems).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

HERE = Path(__file__).resolve().parent
SCHEMAS = HERE / "schemas"
# Stand-ins for resources fetched at apply time: ours, and the Volcano roles' next to their schemas.
STANDINS = (HERE / "standins", SCHEMAS / "volcano" / "standins")
KUBECTL = Path(sys.executable).parent / "kubectl"
CONFIG_GROUPS = ("kubeadm.k8s.io", "kubelet.config.k8s.io", "kubeproxy.config.k8s.io")
KUSTOMIZE_GROUP = "kustomize.config.k8s.io"


def _schema_path(api_version: str, kind: str) -> Path | None:
    group, _, version = api_version.rpartition("/")
    if group in CONFIG_GROUPS:
        folder = "kubeadm"
    elif group.endswith("volcano.sh"):
        folder = "volcano"
    else:
        return None
    return SCHEMAS / folder / f"{group}_{version}_{kind.lower()}.json"


def _is_builtin(api_version: str) -> bool:
    """Core (v1) and the built-in groups: dotless (apps, batch) or *.k8s.io but not the config groups."""
    group = api_version.rpartition("/")[0]
    if group in CONFIG_GROUPS or group == KUSTOMIZE_GROUP:
        return False
    return group == "" or "." not in group or group.endswith(".k8s.io")


def validate_document(doc: object, k8s_version: str, where: str) -> list[str]:
    """Problems of one parsed document (not a Kustomization)."""
    if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
        return [f"{where}: not a Kubernetes document (apiVersion and kind missing)"]
    api_version, kind = str(doc["apiVersion"]), str(doc["kind"])
    schema_file = _schema_path(api_version, kind)
    if schema_file is not None:
        if not schema_file.is_file():
            return [f"{where}: no schema for {api_version} {kind} ({schema_file.relative_to(HERE)} missing)"]
        schema = json.loads(schema_file.read_text())
        validator = jsonschema.Draft202012Validator(schema)
        return [
            f"{where}: {api_version} {kind}: {'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        ]
    if _is_builtin(api_version):
        try:
            kubernetes_validate.validate(doc, k8s_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = "/".join(map(str, exc.path)) or "<root>"
            return [f"{where}: {api_version} {kind}: {path}: {exc.message}"]
        except kubernetes_validate.SchemaNotFoundError:
            return [f"{where}: no schema for {api_version} {kind}"]
        return []
    return [f"{where}: no schema for {api_version} {kind}"]


def _load_all(path: Path) -> tuple[list[object], list[str]]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text()) if d is not None], []
    except yaml.YAMLError as exc:
        return [], [f"{path}: YAML does not parse: {exc}"]


def _kustomize(folder: Path, kustomization: dict) -> tuple[list[object], list[str]]:
    """Build the folder with kubectl kustomize, standing in for resources fetched at apply time."""
    with tempfile.TemporaryDirectory(prefix="cf-kustomize-") as tmp:
        work = Path(tmp) / folder.name
        shutil.copytree(folder, work)
        for resource in kustomization.get("resources") or []:
            target = work / str(resource)
            if not target.exists():
                name = Path(str(resource)).name
                standin = next((d / name for d in STANDINS if (d / name).is_file()), None)
                if standin is None:
                    return [], [f"{folder}: resource {resource} missing and no stand-in {name} in standins/"]
                shutil.copy(standin, target)
        run = subprocess.run(
            [str(KUBECTL), "kustomize", str(work)], capture_output=True, text=True, timeout=60, check=False
        )
    if run.returncode != 0:
        return [], [f"{folder}: kubectl kustomize failed: {run.stderr.strip()}"]
    return [d for d in yaml.safe_load_all(run.stdout) if d is not None], []


def validate_tree(root: str | Path, k8s_version: str) -> list[str]:
    """Every problem of every rendered document under root; empty when all are valid."""
    root = Path(root)
    problems: list[str] = []
    files = sorted(root.rglob("*.yaml"))
    if not files:
        return [f"{root}: no rendered *.yaml documents"]
    kustomized = {p.parent for p in files if p.name in ("kustomization.yaml", "kustomization.yml")}
    for path in files:
        if path.parent in kustomized and path.name != "kustomization.yaml":
            continue  # an input of the kustomization, validated through what it builds
        docs, errors = _load_all(path)
        problems += errors
        for index, doc in enumerate(docs):
            where = f"{path.relative_to(root)}#{index}"
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(KUSTOMIZE_GROUP + "/"):
                built, errors = _kustomize(path.parent, doc)
                problems += errors
                for n, item in enumerate(built):
                    name = f"{item.get('kind')}/{(item.get('metadata') or {}).get('name')}"
                    problems += validate_document(item, k8s_version, f"{where} (kustomize #{n} {name})")
            else:
                problems += validate_document(doc, k8s_version, where)
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: validate.py ROOT K8S_VERSION", file=sys.stderr)
        return 2
    problems = validate_tree(argv[1], argv[2])
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
