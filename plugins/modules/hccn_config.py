#!/usr/bin/python
"""Ansible module: the Ascend NPU NIC plan set with hccn_tool, only where a device differs (ClusterForge)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: hccn_config
short_description: Configure the Ascend NPUs' RoCE ports (address, netmask, gateway, netdetect) with hccn_tool
description:
  - For each planned device reads C(hccn_tool -i <id> -ip -g), C(-gateway -g) and C(-netdetect -g), and the
    device's keys in C(/etc/hccn.conf) (C(address_<id>), C(netmask_<id>), C(gateway_<id>), C(netdetect_<id>)).
  - Runs C(hccn_tool -i <id> -ip -s address <ip> netmask <mask>), C(-gateway -s gateway <gw>) and
    C(-netdetect -s address <ip>) only for the items that differ from the plan (live, or not kept in
    C(/etc/hccn.conf), where hccn_tool records what it sets). Devices that match are not touched.
  - After a write reads the device back (C(-g) again); a write that did not take fails with the evidence.
  - Reads C(-link -g) and C(-net_health -g) of every planned device and reports them. A link that is
    DOWN after a change is a warning, or a failure with I(check_link).
  - Finally checks that C(/etc/hccn.conf) holds the plan's keys.
  - Check mode runs only the C(-g) reads and reports, per device, what would be set (and a diff).
  - The plan rules (subnets, gateways) are not judged here; the filter C(cf_hccn_findings) does that
    before this module runs.
options:
  devices:
    description: The plan, C(hccn_devices) (one entry per NPU NIC; on the A3 one per die).
    type: list
    elements: dict
    required: true
    suboptions:
      id:
        description: The device id (C(hccn_tool -i <id>)).
        type: int
        required: true
      address:
        description: The port's IPv4 address.
        type: str
        required: true
      netmask:
        description: Its dotted netmask.
        type: str
        required: true
      gateway:
        description: The default gateway of the port (the leaf switch).
        type: str
        required: true
      netdetect:
        description: The address the port pings to judge its health (net_health).
        type: str
        required: true
  hccn_tool:
    description: Path of hccn_tool.
    type: path
    default: /usr/local/Ascend/driver/tools/hccn_tool
  conf:
    description: The file hccn_tool keeps the configuration in.
    type: path
    default: /etc/hccn.conf
  check_link:
    description: Fail when a planned device's link is not UP after the run (not in check mode).
    type: bool
    default: false
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Write the NPU NIC plan
  clusterforge.cluster.hccn_config:
    devices: "{{ hccn_devices }}"
    check_link: true
"""

RETURN = r"""
devices:
  description: One entry per planned device.
  type: list
  elements: dict
  returned: always
  contains:
    id: {description: The device id., type: int}
    changed: {description: "Something was (check mode: would be) set on it.", type: bool}
    items: {description: "What was (would be) set: ip, gateway, netdetect.", type: list, elements: str}
    before: {description: "address, netmask, gateway, netdetect read before (null: unset).", type: dict}
    after: {description: "The same read back after the write (check mode, the plan).", type: dict}
    conf_before: {description: What /etc/hccn.conf recorded for the device before., type: dict}
    link: {description: "UP or DOWN (-link -g), null when it could not be read.", type: str}
    net_health: {description: "The tool's word (-net_health -g), e.g. Success; null if unread.", type: str}
commands:
  description: The hccn_tool -s command lines run, in order (none in check mode).
  type: list
  elements: str
  returned: always
would_run:
  description: Check mode only, the -s command lines a real run would run.
  type: list
  elements: str
  returned: always
link_down:
  description: Planned devices whose link is not UP.
  type: list
  elements: int
  returned: always
errors:
  description: On failure, what went wrong per device, with the command, its output and the fix.
  type: list
  elements: dict
  returned: failure
"""

import os
import shlex

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import hccn_plan as hp
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.common import ParseError
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.parsers.hccn import (
    parse_hccn_ip,
    parse_hccn_link,
    parse_hccn_net_health,
)

_CONF_LIMIT = 1024 * 1024
_KEYS = ("address", "netmask", "gateway", "netdetect")


class ToolError(Exception):
    """One hccn_tool call failed or printed something that is not its answer."""

    def __init__(self, device, argv, rc, out, err, message, fix):
        super().__init__(message)
        self.evidence = {
            "device": device,
            "command": " ".join(shlex.quote(a) for a in argv),
            "rc": rc,
            "stdout": (out or "")[-2000:],
            "stderr": (err or "")[-2000:],
            "message": message,
            "fix": fix,
        }


class Device:
    """hccn_tool calls for one device; run(argv) -> (rc, stdout, stderr)."""

    def __init__(self, run, tool, device):
        self.run = run
        self.tool = tool
        self.id = device

    def _get(self, option):
        argv = [self.tool, "-i", str(self.id), option, "-g"]
        rc, out, err = self.run(argv)
        if rc != 0:
            raise ToolError(
                self.id,
                argv,
                rc,
                out,
                err,
                f"hccn_tool {option} -g failed for device {self.id} (rc {rc}): {(err or out).strip()[:300]}",
                f"check that device {self.id} exists (npu-smi info) and that the driver is loaded; run "
                f"{argv[0]} -i {self.id} {option} -g by hand",
            )
        return argv, out, err

    def _parse(self, option, reader):
        argv, out, err = self._get(option)
        try:
            return reader(out)
        except (ParseError, hp.ReadError) as exc:
            raise ToolError(
                self.id,
                argv,
                0,
                out,
                err,
                f"device {self.id}: {exc}",
                "compare with the tool's documented output; a different driver version may print otherwise",
            ) from None

    def read(self):
        """The live address, netmask, gateway and netdetect (None: unset)."""
        argv, out, _err = self._get("-ip")
        if out.strip():
            try:
                ip = parse_hccn_ip(out, device=self.id)
            except ParseError as exc:
                raise ToolError(
                    self.id, argv, 0, out, "", f"device {self.id}: {exc}", "compare with the tool's output"
                ) from None
        else:  # nothing configured: the tool prints nothing
            ip = {"address": None, "netmask": None}
        return {
            "address": ip["address"],
            "netmask": ip["netmask"],
            "gateway": self._parse("-gateway", hp.parse_gateway),
            "netdetect": self._parse("-netdetect", hp.parse_netdetect),
        }

    def link(self):
        return self._parse("-link", lambda out: parse_hccn_link(out, device=self.id)["link_status"])

    def net_health(self):
        return self._parse(
            "-net_health", lambda out: parse_hccn_net_health(out, device=self.id)["net_health"]
        )

    def set(self, item, planned):
        argv = hp.set_argv(self.tool, self.id, item, planned)
        rc, out, err = self.run(argv)
        if rc != 0:
            raise ToolError(
                self.id,
                argv,
                rc,
                out,
                err,
                f"hccn_tool could not set {item} of device {self.id} (rc {rc}): {(err or out).strip()[:300]}",
                "check the plan's values for this device, that no other process holds the device, and the "
                "driver log (/var/log/npu/slog); then rerun",
            )
        return argv


def read_conf(path):
    """(values, error): the conf's key/values; error when it exists but cannot be read."""
    try:
        with open(path, errors="replace") as handle:
            return hp.parse_conf(handle.read(_CONF_LIMIT)), None
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"{path}: {exc.strerror}"


def configure(params, run, check_mode):
    """The module's result (separate from AnsibleModule for the unit tests)."""
    tool = params["hccn_tool"]
    conf_path = params["conf"]
    conf, conf_error = read_conf(conf_path)
    result = {"changed": False, "devices": [], "commands": [], "would_run": [], "link_down": [], "diff": []}
    errors, warnings = [], []
    if conf_error:
        errors.append({"device": None, "message": conf_error, "fix": f"make {conf_path} readable by root"})
    for entry in sorted(params["devices"], key=lambda e: e["id"]):
        device = Device(run, tool, entry["id"])
        planned = hp.planned_state(entry)
        record = {"id": entry["id"], "changed": False, "items": [], "before": None, "after": None}
        record.update(conf_before=hp.conf_state(conf, entry["id"]), link=None, net_health=None)
        result["devices"].append(record)
        try:
            record["before"] = device.read()
            items = hp.items_to_write(planned, record["before"], record["conf_before"])
            record["items"] = items
            record["changed"] = bool(items)
            if items and check_mode:
                result["would_run"] += [_line(hp.set_argv(tool, entry["id"], i, planned)) for i in items]
                record["after"] = planned
            elif items:
                for item in items:
                    result["commands"].append(_line(device.set(item, planned)))
                record["after"] = device.read()
                _confirm(entry["id"], tool, planned, record["after"])
            else:
                record["after"] = record["before"]
            if items:
                result["changed"] = True
                result["diff"].append(
                    {
                        "before_header": f"{conf_path} (device {entry['id']})",
                        "after_header": f"{conf_path} (device {entry['id']})",
                        "before": hp.conf_lines(entry["id"], record["before"]),
                        "after": hp.conf_lines(entry["id"], record["after"]),
                    }
                )
            record["link"] = device.link()
            record["net_health"] = device.net_health()
        except ToolError as exc:
            errors.append(exc.evidence)
            continue
        if record["link"] != "UP":
            result["link_down"].append(entry["id"])
            if record["changed"]:
                warnings.append(
                    f"device {entry['id']}: link {record['link']} after "
                    f"{'the planned change' if check_mode else 'the change'}; {_link_fix(entry['id'])}"
                )
    if not check_mode and not errors:
        errors += _conf_holds_plan(conf_path, params["devices"])
    if params["check_link"] and not check_mode and result["link_down"]:
        errors += [
            {"device": d, "message": f"device {d}: link is not UP (check_link)", "fix": _link_fix(d)}
            for d in result["link_down"]
        ]
    return result, errors, warnings


def _confirm(device, tool, planned, after):
    """A write that did not take: the read-back still differs."""
    left = [key for key in _KEYS if not hp.same_value(after.get(key), planned[key])]
    if left:
        raise ToolError(
            device,
            [tool, "-i", str(device), "-ip|-gateway|-netdetect", "-g"],
            0,
            ", ".join(f"{key}={after.get(key)}" for key in left),
            "",
            f"device {device}: hccn_tool -s succeeded but {', '.join(left)} read back as "
            f"{', '.join(str(after.get(k)) for k in left)}, not {', '.join(planned[k] for k in left)}",
            "the device did not take the setting: check the NPU's health (npu-smi info -t health -i "
            f"{device}) and the driver log, then rerun",
        )


def _conf_holds_plan(conf_path, devices):
    conf, error = read_conf(conf_path)
    if error:
        return [{"device": None, "message": error, "fix": f"make {conf_path} readable by root"}]
    errors = []
    for entry in devices:
        recorded = hp.conf_state(conf, entry["id"])
        planned = hp.planned_state(entry)
        wrong = [
            f"{key}_{entry['id']}={recorded[key]}"
            if recorded[key] is not None
            else f"{key}_{entry['id']} missing"
            for key in _KEYS
            if not hp.same_value(recorded[key], planned[key])
        ]
        if wrong:
            absent = "" if os.path.exists(conf_path) else f" ({conf_path} does not exist)"
            errors.append(
                {
                    "device": entry["id"],
                    "message": f"{conf_path} does not hold the plan of device {entry['id']}: "
                    f"{', '.join(wrong)}{absent}",
                    "fix": f"hccn_tool keeps {conf_path}: the settings would not survive a reboot; check the "
                    "driver version's hccn_tool and that the file is writable, then rerun",
                }
            )
    return errors


def _link_fix(device):
    return (
        f"check the cable/optic and the switch port of device {device} (hccn_tool -i {device} -link -g, "
        f"hccn_tool -i {device} -net_health -g) and that the leaf switch serves its subnet"
    )


def _line(argv):
    return " ".join(shlex.quote(a) for a in argv)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    id=dict(type="int", required=True),
                    address=dict(type="str", required=True),
                    netmask=dict(type="str", required=True),
                    gateway=dict(type="str", required=True),
                    netdetect=dict(type="str", required=True),
                ),
            ),
            hccn_tool=dict(type="path", default="/usr/local/Ascend/driver/tools/hccn_tool"),
            conf=dict(type="path", default="/etc/hccn.conf"),
            check_link=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    tool = module.params["hccn_tool"]
    if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
        module.fail_json(
            msg=f"hccn_tool not found or not executable at {tool}",
            fix="install the Ascend driver (role ascend_driver) or set hccn_tool to its path",
        )
    ids = [d["id"] for d in module.params["devices"]]
    if len(set(ids)) != len(ids):
        module.fail_json(msg=f"devices: a device id is planned twice ({ids})", fix="one entry per device id")

    def run(argv):
        return module.run_command(argv)

    result, errors, warnings = configure(module.params, run, module.check_mode)
    if not module._diff:
        result.pop("diff")
    for warning in warnings:
        module.warn(warning)
    if errors:
        module.fail_json(
            msg="; ".join(e["message"] for e in errors),
            fix="; ".join(sorted({e["fix"] for e in errors})),
            errors=errors,
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
