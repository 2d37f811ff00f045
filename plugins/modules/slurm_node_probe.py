#!/usr/bin/python
"""Ansible module: what Slurm is installed on a node and, on a worker, the shape slurmd -C reports."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node_probe
short_description: Read a node's installed Slurm versions, its slurmd -C hardware shape and NVML support
description:
  - Runs C(<daemon> -V) for each daemon named in C(daemons) that is installed and reports its version.
  - With C(hardware=true) runs C(slurmd -C) and parses it (CPUs, Boards, SocketsPerBoard, CoresPerSocket,
    ThreadsPerCore, RealMemory); output that is not slurmd -C's fails the module, naming what it got.
  - Reports whether Slurm's NVML GPU plugin (C(gpu_nvml.so)) is in one of C(plugin_dirs) and whether
    C(libnvidia-ml.so.1) is known to the dynamic linker, which decides AutoDetect=nvml in gres.conf.
  - It only reads, so check mode runs it fully. A daemon that is not installed is reported as null,
    never an error.
options:
  daemons:
    description: Slurm programs whose version to read (slurmctld, slurmd, slurmdbd, sinfo).
    type: list
    elements: str
    default: [slurmd]
  hardware:
    description: Run and parse C(slurmd -C) (a worker's hardware shape).
    type: bool
    default: false
  plugin_dirs:
    description: Folders where the Slurm build keeps its plugins (the first that exists is used).
    type: list
    elements: path
    default: [/usr/lib/x86_64-linux-gnu/slurm-wlm, /usr/lib/aarch64-linux-gnu/slurm-wlm, /usr/lib64/slurm,
              /usr/lib/slurm, /usr/local/lib/slurm]
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ClusterForge
"""

EXAMPLES = r"""
- name: Probe a worker
  clusterforge.cluster.slurm_node_probe:
    daemons: [slurmd]
    hardware: true
  register: probe
"""

RETURN = r"""
versions:
  description: Installed version of each daemon asked for ("22.05.8"), null when it is not installed.
  type: dict
  returned: always
  sample:
    slurmd: "22.05.8"
hardware:
  description: The parsed slurmd -C line (node_name, CPUs, Boards, ..., RealMemory, extra); null without
    hardware=true or when slurmd is not installed.
  type: dict
  returned: always
  sample:
    node_name: w1
    CPUs: 2
    RealMemory: 24105
hostname:
  description: The node's short host name (what slurmctld and slurmd compare with slurm.conf).
  type: str
  returned: always
plugin_dir:
  description: The Slurm plugin folder found, or null.
  type: str
  returned: always
nvml_plugin:
  description: gpu_nvml.so is in the plugin folder.
  type: bool
  returned: always
nvml_library:
  description: libnvidia-ml.so.1 is known to the dynamic linker (ldconfig -p).
  type: bool
  returned: always
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore import slurm_conf as sc
from ansible_collections.clusterforge.cluster.plugins.module_utils.cfcore.inputs import InputError

DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "sinfo")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "daemons": {"type": "list", "elements": "str", "default": ["slurmd"]},
            "hardware": {"type": "bool", "default": False},
            "plugin_dirs": {
                "type": "list",
                "elements": "path",
                "default": [
                    "/usr/lib/x86_64-linux-gnu/slurm-wlm",
                    "/usr/lib/aarch64-linux-gnu/slurm-wlm",
                    "/usr/lib64/slurm",
                    "/usr/lib/slurm",
                    "/usr/local/lib/slurm",
                ],
            },
        },
        supports_check_mode=True,
    )
    params = module.params
    unknown = sorted(set(params["daemons"]) - set(DAEMONS))
    if unknown:
        module.fail_json(
            msg=f"daemons: {unknown} are not Slurm programs this module reads ({', '.join(DAEMONS)})"
        )
    versions = {}
    for daemon in params["daemons"]:
        path = module.get_bin_path(daemon)
        if path is None:
            versions[daemon] = None
            continue
        rc, out, err = module.run_command([path, "-V"])
        try:
            versions[daemon] = sc.parse_version(out if rc == 0 else out + err, f"{daemon} -V")
        except InputError as error:
            module.fail_json(msg=str(error), rc=rc, stdout=out, stderr=err)
    hardware = None
    if params["hardware"]:
        slurmd = module.get_bin_path("slurmd")
        if slurmd is not None:
            rc, out, err = module.run_command([slurmd, "-C"])
            if rc != 0:
                module.fail_json(msg=f"slurmd -C exited {rc}: {err.strip() or out.strip()}", rc=rc)
            try:
                hardware = sc.parse_slurmd_c(out)
            except InputError as error:
                module.fail_json(msg=str(error), stdout=out, stderr=err)
    plugin_dir = next((d for d in params["plugin_dirs"] if os.path.isdir(d)), None)
    nvml_plugin = bool(plugin_dir) and os.path.isfile(os.path.join(plugin_dir, "gpu_nvml.so"))
    nvml_library = False
    ldconfig = module.get_bin_path("ldconfig")
    if ldconfig:
        rc, out, _ = module.run_command([ldconfig, "-p"])
        nvml_library = rc == 0 and any(
            line.strip().startswith("libnvidia-ml.so.1 ") for line in out.splitlines()
        )
    module.exit_json(
        changed=False,
        versions=versions,
        hardware=hardware,
        hostname=socket.gethostname().split(".")[0],
        plugin_dir=plugin_dir,
        nvml_plugin=nvml_plugin,
        nvml_library=nvml_library,
    )


if __name__ == "__main__":
    main()
