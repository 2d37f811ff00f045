#!/usr/bin/python
"""Ansible module: the CDI spec of a node's NVIDIA GPUs, kept current in one call (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_cdi_spec
short_description: Keep the CDI spec of the node's NVIDIA GPUs current (refresh service or nvidia-ctk)
description:
  - Container runtimes find the GPUs through a CDI spec. Toolkit 1.18 and later ship
    C(nvidia-cdi-refresh.path) and C(.service), which regenerate O(refresh_spec) at boot and when the
    driver's files change; older toolkits need C(nvidia-ctk cdi generate), again after each driver change.
  - C(refresh) (chosen by O(method=auto) when both refresh units are installed) removes the static
    specs O(static_specs) and the generate record (a static spec beside the refreshed one lists every
    device twice), enables and starts the path unit, enables the service, and starts the service once
    when the spec is missing.
  - C(generate) asks the driver for its version (C(nvidia-smi)) and runs C(nvidia-ctk cdi generate)
    when O(spec_path) is missing or O(record) says it was made for another driver version, toolkit
    version or path; then it writes the record. When the driver does not answer (not loaded, a reboot
    pending), nothing is generated and a warning says why; the next run generates it.
  - Replaces a dozen stat, slurp, command, file and systemd tasks of role nvidia_container_toolkit.
options:
  toolkit_version:
    description: The toolkit version installed (recorded with the spec; a change regenerates it).
    type: str
    required: true
  method:
    description: C(auto) uses the refresh service where the toolkit ships it, else C(generate).
    type: str
    choices: [auto, refresh, generate]
    default: auto
  spec_path:
    description: Where C(nvidia-ctk cdi generate) writes the spec.
    type: path
    default: /var/run/cdi/nvidia.yaml
  record:
    description: What the generated spec was made for (JSON, driver and toolkit version, path).
    type: path
    default: /var/lib/clusterforge/nvidia-cdi.json
  refresh_spec:
    description: The spec the refresh service writes.
    type: path
    default: /var/run/cdi/nvidia.yaml
  static_specs:
    description: Specs that must not sit beside the refreshed one.
    type: list
    elements: path
    default: [/etc/cdi/nvidia.yaml]
  refresh_units:
    description: The toolkit's refresh units, the path unit first.
    type: list
    elements: str
    default: [nvidia-cdi-refresh.path, nvidia-cdi-refresh.service]
  unit_dirs:
    description: Where packaged unit files are looked for.
    type: list
    elements: path
    default: [/usr/lib/systemd/system, /lib/systemd/system, /etc/systemd/system]
attributes:
  check_mode:
    support: full
    details: Reads the driver version and the record, reports what it would do, and changes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Keep the CDI spec of the node's GPUs current
  clusterforge.cluster.nvidia_cdi_spec:
    toolkit_version: 1.17.8-1
"""

RETURN = r"""
method:
  description: C(refresh) or C(generate), what was used.
  type: str
  returned: always
generated:
  description: The spec was (re)generated or its refresh started in this call (would be, in check mode).
  type: bool
  returned: always
driver_version:
  description: The driver version nvidia-smi reported (generate); empty when it did not answer.
  type: str
  returned: always
removed:
  description: Static specs and records removed (refresh).
  type: list
  elements: str
  returned: always
not_generated:
  description: Why no spec was generated; empty otherwise.
  type: str
  returned: always
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

WANTED_KEYS = ("driver_version", "toolkit_version", "spec")


def _run(module, argv, what):
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"{what} failed (rc {rc}): {(err or out).strip()[-400:]}")
    return out


def _read_record(path):
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _unit_installed(unit, unit_dirs):
    return any(os.path.exists(os.path.join(folder, unit)) for folder in unit_dirs)


def refresh(module, params, result):
    """The toolkit's refresh service writes the spec; no static spec or record beside it."""
    systemctl = module.get_bin_path("systemctl", required=True)
    for path in params["static_specs"] + [params["record"]]:
        if os.path.lexists(path):
            result["removed"].append(path)
            if not module.check_mode:
                os.unlink(path)
    path_unit, service_unit = params["refresh_units"][0], params["refresh_units"][1]
    for unit, start in ((path_unit, True), (service_unit, False)):
        enabled = module.run_command([systemctl, "is-enabled", "--quiet", unit])[0] == 0
        active = not start or module.run_command([systemctl, "is-active", "--quiet", unit])[0] == 0
        if enabled and active:
            continue
        result["changed"] = True
        if not module.check_mode:
            verb = ["enable", "--now"] if start else ["enable"]
            _run(module, [systemctl, *verb, unit], f"systemctl {' '.join(verb)} {unit}")
    if not os.path.exists(params["refresh_spec"]):
        result["changed"] = result["generated"] = True
        if not module.check_mode:
            _run(module, [systemctl, "start", service_unit], f"systemctl start {service_unit}")


def generate(module, params, result):
    """nvidia-ctk writes the spec for the driver that answers; the record says for which."""
    smi = module.get_bin_path("nvidia-smi")
    if smi is None:
        rc, out, err = 127, "", "nvidia-smi is not installed"
    else:
        rc, out, err = module.run_command([smi, "--query-gpu=driver_version", "--format=csv,noheader"])
    versions = sorted({line.strip() for line in out.splitlines() if line.strip()})
    if rc != 0 or not versions:
        said = (err or out).strip()[-200:] or "no GPU listed"
        result["not_generated"] = (
            f"nvidia-smi fails (rc {rc}: {said}), so nvidia-ctk cannot list the GPUs. The driver is not"
            " loaded (a reboot pending, or a node without GPUs); the next run generates the spec once"
            " nvidia-smi answers."
        )
        module.warn(f"CDI spec not generated: {result['not_generated']}")
        return
    result["driver_version"] = versions[0]
    wanted = {
        "driver_version": versions[0],
        "toolkit_version": params["toolkit_version"],
        "spec": params["spec_path"],
    }
    recorded = {key: _read_record(params["record"]).get(key) for key in WANTED_KEYS}
    if os.path.exists(params["spec_path"]) and recorded == wanted:
        return
    result["changed"] = result["generated"] = True
    if module.check_mode:
        return
    ctk = module.get_bin_path("nvidia-ctk", required=True)
    os.makedirs(os.path.dirname(params["spec_path"]), mode=0o755, exist_ok=True)
    _run(module, [ctk, "cdi", "generate", f"--output={params['spec_path']}"], "nvidia-ctk cdi generate")
    os.makedirs(os.path.dirname(params["record"]), mode=0o755, exist_ok=True)
    temporary = params["record"] + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(wanted, indent=4, sort_keys=True) + "\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, params["record"])


def main():
    module = AnsibleModule(
        argument_spec={
            "toolkit_version": {"type": "str", "required": True},
            "method": {"type": "str", "choices": ["auto", "refresh", "generate"], "default": "auto"},
            "spec_path": {"type": "path", "default": "/var/run/cdi/nvidia.yaml"},
            "record": {"type": "path", "default": "/var/lib/clusterforge/nvidia-cdi.json"},
            "refresh_spec": {"type": "path", "default": "/var/run/cdi/nvidia.yaml"},
            "static_specs": {"type": "list", "elements": "path", "default": ["/etc/cdi/nvidia.yaml"]},
            "refresh_units": {
                "type": "list",
                "elements": "str",
                "default": ["nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service"],
            },
            "unit_dirs": {
                "type": "list",
                "elements": "path",
                "default": ["/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system"],
            },
        },
        supports_check_mode=True,
    )
    params = module.params
    if len(params["refresh_units"]) != 2:
        module.fail_json(msg="refresh_units names two units, the path unit first. Fix: list both")
    method = params["method"]
    if method == "auto":
        shipped = all(_unit_installed(unit, params["unit_dirs"]) for unit in params["refresh_units"])
        method = "refresh" if shipped else "generate"
    result = {"changed": False, "method": method, "generated": False, "driver_version": ""}
    result.update(removed=[], not_generated="")
    (refresh if method == "refresh" else generate)(module, params, result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
