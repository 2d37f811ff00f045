#!/usr/bin/python3
"""nvidia-ctk @VERSION@: ClusterForge test stand-in (tests/nvidia_repo) of the NVIDIA Container Toolkit CLI.

nvidia-ctk --version
nvidia-ctk runtime configure --runtime=containerd|docker [--config=PATH] [--set-as-default]
           [--cdi.enabled] [--dry-run]
    containerd: adds the `nvidia` runtime under plugins."io.containerd.grpc.v1.cri"
    .containerd.runtimes (config version 2; version 3 uses "io.containerd.cri.v1.runtime")
    based on the runc runtime's settings, with options.BinaryName
    /usr/bin/nvidia-container-runtime; docker: runtimes.nvidia in daemon.json.
    Like the real tool it rewrites the whole file (comments are lost).
nvidia-ctk cdi generate [--output=PATH] [--format=yaml|json] [--device-name-strategy=index|uuid]
    a CDI spec (kind nvidia.com/gpu): one device per GPU `nvidia-smi` reports (on a
    test node: the replayed ones) plus `all`.
nvidia-ctk cdi list [--spec-dir=DIR ...]
    the CDI devices of the specs in /etc/cdi and /var/run/cdi.
"""

import argparse
import copy
import glob
import json
import os
import re
import subprocess
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

VERSION = "@VERSION@"
RUNTIME_BINARY = "/usr/bin/nvidia-container-runtime"
DEFAULT_CONFIGS = {
    "containerd": "/etc/containerd/config.toml",
    "docker": "/etc/docker/daemon.json",
}
CDI_DIRS = ["/etc/cdi", "/var/run/cdi"]
LIB_DIR = "/usr/lib/x86_64-linux-gnu"


class CtkError(Exception):
    pass


def info(message):
    print(f"INFO[0000] {message}", file=sys.stderr)


# ----------------------------------------------------------------- TOML writer


def toml_key(key):
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def dump_toml(data):
    """TOML with nested tables indented two spaces per level, as go-toml (the real tool's) writes it."""
    lines = []

    def emit(table, path):
        depth = len(path)
        if path:
            lines.append("")
            lines.append("  " * (depth - 1) + "[" + ".".join(toml_key(part) for part in path) + "]")
        pad = "  " * depth
        for key, value in table.items():
            if not isinstance(value, dict):
                lines.append(f"{pad}{toml_key(key)} = {toml_value(value)}")
        for key, value in table.items():
            if isinstance(value, dict):
                emit(value, [*path, key])

    emit(data, [])
    return "\n".join(lines).lstrip("\n") + "\n"


# ------------------------------------------------------------ runtime configure


def load_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise CtkError(f"unable to load config: {path}: {exc.strerror}") from exc


def configure_containerd(text, path, set_default, cdi):
    if tomllib is None:
        raise CtkError("this stand-in needs Python 3.11+ (tomllib) to edit containerd's config")
    try:
        config = tomllib.loads(text) if text.strip() else {}
    except tomllib.TOMLDecodeError as exc:
        raise CtkError(f"unable to load config: {path}: {exc}") from exc
    version = int(config.get("version", 2 if not text.strip() else 1))
    config.setdefault("version", version if version >= 2 else 2)
    plugin = "io.containerd.cri.v1.runtime" if config["version"] >= 3 else "io.containerd.grpc.v1.cri"
    cri = config.setdefault("plugins", {}).setdefault(plugin, {})
    containerd = cri.setdefault("containerd", {})
    runtimes = containerd.setdefault("runtimes", {})
    runtime = copy.deepcopy(runtimes.get("runc", {}))
    runtime.setdefault("privileged_without_host_devices", False)
    runtime.setdefault("runtime_engine", "")
    runtime.setdefault("runtime_root", "")
    runtime["runtime_type"] = "io.containerd.runc.v2"
    runtime.setdefault("options", {})["BinaryName"] = RUNTIME_BINARY
    runtimes["nvidia"] = runtime
    if set_default:
        containerd["default_runtime_name"] = "nvidia"
    if cdi:
        cri["enable_cdi"] = True
    return dump_toml(config)


def configure_docker(text, path, set_default, cdi):
    try:
        config = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise CtkError(f"unable to load config: {path}: {exc}") from exc
    if not isinstance(config, dict):
        raise CtkError(f"unable to load config: {path} does not hold a JSON object")
    config.setdefault("runtimes", {})["nvidia"] = {"args": [], "path": "nvidia-container-runtime"}
    if set_default:
        config["default-runtime"] = "nvidia"
    if cdi:
        config.setdefault("features", {})["cdi"] = True
    return json.dumps(config, indent=4, sort_keys=True) + "\n"


def runtime_configure(args):
    path = args.config or DEFAULT_CONFIGS[args.runtime]
    info(f"Loading config from {path}")
    text = load_text(path)
    editor = configure_containerd if args.runtime == "containerd" else configure_docker
    updated = editor(text, path, args.set_as_default, args.cdi_enabled)
    if args.dry_run:
        sys.stdout.write(updated)
        return 0
    if updated != text:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        tmp = f"{path}.nvidia-ctk-{os.getpid()}"
        with open(tmp, "w") as handle:
            handle.write(updated)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    info(f"Wrote updated config to {path}")
    info(f"It is recommended that {args.runtime} daemon be restarted.")
    return 0


# ----------------------------------------------------------------------- CDI


def yaml_scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    reserved = {"true", "false", "yes", "no", "on", "off", "null", "~", ""}
    if re.fullmatch(r"[A-Za-z_/][A-Za-z0-9_./=+-]*", text) and text.lower() not in reserved:
        return text
    return json.dumps(text)


def dump_yaml(value, indent=0):
    """Block-style YAML of dicts, lists and scalars (what nvidia-ctk writes)."""
    pad = "  " * indent
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                lines.extend(dump_yaml(item, indent + (0 if isinstance(item, list) else 1)))
            elif isinstance(item, list):
                lines.append(f"{pad}{key}: []")
            elif isinstance(item, dict):
                lines.append(f"{pad}{key}: {{}}")
            else:
                lines.append(f"{pad}{key}: {yaml_scalar(item)}")
        return lines
    for item in value:
        if isinstance(item, dict) and item:
            body = dump_yaml(item, indent + 1)
            lines.append(f"{pad}- {body[0].lstrip()}")
            lines.extend(body[1:])
        else:
            lines.append(f"{pad}- {yaml_scalar(item)}")
    return lines


def replayed_gpus():
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        done = None
    if done is None or done.returncode != 0:
        raise CtkError("failed to generate CDI spec: failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND")
    gpus = []
    for line in done.stdout.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) == 3:
            gpus.append({"index": parts[0], "uuid": parts[1], "bus_id": parts[2]})
    return gpus


def cdi_spec(strategy):
    gpus = replayed_gpus()
    devices = []
    for gpu in gpus:
        name = gpu["uuid"] if strategy == "uuid" else gpu["index"]
        devices.append(
            {"name": name, "containerEdits": {"deviceNodes": [{"path": f"/dev/nvidia{gpu['index']}"}]}}
        )
    devices.append(
        {
            "name": "all",
            "containerEdits": {"deviceNodes": [{"path": f"/dev/nvidia{gpu['index']}"} for gpu in gpus]},
        }
    )
    mounts = [
        {"hostPath": lib, "containerPath": lib, "options": ["ro", "nosuid", "nodev", "bind"]}
        for lib in sorted(glob.glob(os.path.join(LIB_DIR, "lib*.so.[0-9]*.[0-9]*")))
        if re.search(r"/lib(nvidia-ml|cuda|nvidia-nscq)\.so\.", lib)
    ]
    edits = {
        "env": ["NVIDIA_VISIBLE_DEVICES=void"],
        "deviceNodes": [
            {"path": node} for node in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
        ],
        "hooks": [
            {
                "hookName": "createContainer",
                "path": "/usr/bin/nvidia-cdi-hook",
                "args": ["nvidia-cdi-hook", "update-ldcache", "--folder", LIB_DIR],
            }
        ],
    }
    if mounts:
        edits["mounts"] = mounts
    return {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devices, "containerEdits": edits}


def cdi_generate(args):
    spec = cdi_spec(args.device_name_strategy)
    fmt = args.format or ("json" if (args.output or "").endswith(".json") else "yaml")
    text = json.dumps(spec, indent=2) + "\n" if fmt == "json" else "---\n" + "\n".join(dump_yaml(spec)) + "\n"
    if not args.output:
        sys.stdout.write(text)
        return 0
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    tmp = f"{args.output}.nvidia-ctk-{os.getpid()}"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.output)
    info("Generated CDI spec with version 0.5.0")
    return 0


def spec_devices(path):
    """(kind, [device names]) of one spec: JSON; YAML through PyYAML when present, else the YAML we write."""
    with open(path) as handle:
        text = handle.read()
    if path.endswith(".json"):
        spec = json.loads(text)
        return spec.get("kind"), [device["name"] for device in spec.get("devices") or []]
    try:
        import yaml

        spec = yaml.safe_load(text) or {}
        return spec.get("kind"), [str(device["name"]) for device in spec.get("devices") or []]
    except ImportError:
        pass
    kind, names, in_devices = None, [], False
    for line in text.splitlines():
        if line.startswith("kind:"):
            kind = line.split(":", 1)[1].strip().strip('"')
        if re.match(r"^[A-Za-z]", line):
            in_devices = line.startswith("devices:")
        elif in_devices and line.startswith("- name:"):
            names.append(line.split(":", 1)[1].strip().strip('"'))
    return kind, names


def cdi_list(args):
    found = []
    for directory in args.spec_dir or CDI_DIRS:
        for path in sorted(glob.glob(os.path.join(directory, "*"))):
            if not path.endswith((".yaml", ".yml", ".json")):
                continue
            try:
                kind, names = spec_devices(path)
            except (OSError, ValueError, KeyError) as exc:
                print(f"WARN[0000] failed to read CDI spec {path}: {exc}", file=sys.stderr)
                continue
            found.extend(f"{kind}={name}" for name in names)
    info(f"Found {len(found)} CDI devices")
    for device in found:
        print(device)
    return 0


def parser():
    top = argparse.ArgumentParser(prog="nvidia-ctk")
    top.add_argument("--version", "-v", action="store_true")
    top.add_argument("--debug", "-d", action="store_true")
    sub = top.add_subparsers(dest="command")
    runtime = sub.add_parser("runtime").add_subparsers(dest="action", required=True)
    configure = runtime.add_parser("configure")
    configure.add_argument("--runtime", choices=sorted(DEFAULT_CONFIGS), default="docker")
    configure.add_argument("--config")
    configure.add_argument("--set-as-default", action="store_true")
    configure.add_argument("--cdi.enabled", dest="cdi_enabled", action="store_true")
    configure.add_argument("--dry-run", action="store_true")
    cdi = sub.add_parser("cdi").add_subparsers(dest="action", required=True)
    generate = cdi.add_parser("generate")
    generate.add_argument("--output")
    generate.add_argument("--format", choices=["yaml", "json"])
    generate.add_argument("--device-name-strategy", choices=["index", "uuid"], default="index")
    listing = cdi.add_parser("list")
    listing.add_argument("--spec-dir", action="append")
    return top


def main(argv=None):
    args = parser().parse_args(argv)
    if args.version:
        print(f"NVIDIA Container Toolkit CLI version {VERSION}\ncommit: clusterforge-test-stand-in")
        return 0
    handlers = {
        ("runtime", "configure"): runtime_configure,
        ("cdi", "generate"): cdi_generate,
        ("cdi", "list"): cdi_list,
    }
    handler = handlers.get((args.command, getattr(args, "action", None)))
    if handler is None:
        parser().print_help(sys.stderr)
        return 1
    try:
        return handler(args)
    except CtkError as exc:
        print(f"ERRO[0000] {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
