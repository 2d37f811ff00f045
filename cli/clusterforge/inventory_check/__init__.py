"""`clusterforge inventory check`: load an inventory through Ansible and report every problem at once.

    report = check_inventory(["inventories/example"], allow_scripts=False)
    report.valid, report.errors, report.warnings

The checks, each in its own module:
  sources     unsafe files (FIFOs, devices, huge files) and inventory scripts, before Ansible opens them
  files       YAML syntax, duplicate keys, group_vars/host_vars matching nothing, a variable two
              files of one group or host set to different values
  hosts       required variables (requirements.py), host names, management addresses and ports,
              racks, hosts defined twice with different values
  skus        node_sku known to the catalog and matching the accelerator group
  bom         version formats and compatibility rules (data/bom_rules.yml)
  framework   PyTorch against the CUDA major, torch_npu against CANN and PyTorch (data/framework_compat.yml);
              the framework_* settings of validate --level framework (framework_env, backend, numbers)
  hccn        the Ascend NPU NIC plan and its subnet rule
  topology    the fabric topology (leaf, spine, nvlink_domain): placement, leaf ports, tree, NVLink domains
  addresses   IP/network formats, address inside its network, duplicate addresses fleet-wide
  groups      expected groups, group dependencies, quorum sizes, Slurm partitions
"""

from __future__ import annotations

from cfcore.bom import load_rules

from clusterforge.inventory_check import files as file_checks
from clusterforge.inventory_check.addresses import check_addresses
from clusterforge.inventory_check.ansible_load import load_inventory
from clusterforge.inventory_check.bom import check_bom
from clusterforge.inventory_check.context import Context, HostView
from clusterforge.inventory_check.framework import check_framework
from clusterforge.inventory_check.groups import check_groups
from clusterforge.inventory_check.hccn import check_hccn
from clusterforge.inventory_check.hosts import check_hosts
from clusterforge.inventory_check.problems import ERROR, WARNING, Problem, Report
from clusterforge.inventory_check.skus import check_skus
from clusterforge.inventory_check.templating import TemplateCache
from clusterforge.inventory_check.topology import check_topology

__all__ = ["ERROR", "WARNING", "Problem", "Report", "check_inventory"]

# Problems of the files themselves that make Ansible's view of the variables unreliable.
_BLOCKING_FILE_RULES = ("yaml.syntax", "vars.not_mapping", "file.unreadable")


def check_inventory(sources: list[str], allow_scripts: bool = False) -> Report:
    """Every problem of the inventory made of `sources` (files, directories, plugin configs, host lists).

    Nothing from the inventory runs: no lookups, no side-effect filters, and
    executable inventory files only with allow_scripts (`--allow-scripts`).
    """
    loaded = load_inventory(sources, allow_scripts=allow_scripts)
    report = Report(sources=loaded.sources, host_count=len(loaded.hosts), group_count=len(loaded.groups))
    if loaded.unsafe:  # files that must not be opened: nothing else was read
        report.extend(loaded.problems)
        report.finalize()
        return report

    vars_files = file_checks.vars_files(loaded.paths)
    inventory_problems = file_checks.check_inventory_yaml(file_checks.inventory_files(loaded.paths))
    file_problems = list(inventory_problems)
    for vars_file in vars_files:
        file_problems += file_checks.check_vars_file(vars_file)
    file_problems += file_checks.check_conflicts(vars_files)
    parse_problems = _without_duplicates_of(loaded.problems, file_problems)
    inventory_parsed = not any(
        p.rule in ("inventory.parse", "yaml.syntax") for p in parse_problems + inventory_problems
    )
    if inventory_parsed:  # otherwise groups and hosts are missing and every vars file looks orphaned
        file_problems += file_checks.check_orphans(vars_files, set(loaded.groups), set(loaded.hosts))
    report.extend(file_problems)
    report.extend(parse_problems)

    if not loaded.hosts:
        if not report.errors:
            report.add(
                Problem(
                    rule="inventory.empty",
                    message="the inventory defines no hosts",
                    fix="add the cluster's hosts (see inventories/example/hosts.yml)",
                )
            )
        report.finalize()
        return report

    host_vars_keys = _host_vars_keys(vars_files)
    templates = TemplateCache()
    files_broken = any(p.rule in _BLOCKING_FILE_RULES for p in file_problems)
    views = []
    for entry in loaded.hosts.values():
        if entry.vars_error is None:
            keys = host_vars_keys.get(entry.name, set())
            views.append(HostView(entry, loaded.loader, keys, templates, loaded.vault))
        elif not files_broken:  # a broken file is reported once, with its line, by the file checks
            report.add(entry.vars_error)

    ctx = Context(inventory=loaded, views=views, rules=load_rules())
    report.extend(check_hosts(ctx))
    report.extend(check_skus(ctx))
    report.extend(check_bom(ctx))
    report.extend(check_framework(ctx))
    hccn_problems, npu_addresses = check_hccn(ctx)
    report.extend(hccn_problems)
    report.extend(check_addresses(ctx, npu_addresses))
    report.extend(check_topology(ctx))
    report.extend(check_groups(ctx))
    for view in views:
        report.extend(view.template_problems)
    report.finalize()
    return report


def _host_vars_keys(vars_files: list[file_checks.VarsFile]) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    for vars_file in vars_files:
        if vars_file.kind == "host" and isinstance(vars_file.data, dict):
            keys.setdefault(vars_file.target, set()).update(map(str, vars_file.data))
    return keys


def _without_duplicates_of(ansible_problems: list[Problem], file_problems: list[Problem]) -> list[Problem]:
    """Drop Ansible's parse failure of a file whose YAML syntax error the file checks already located."""
    broken = {p.file for p in file_problems if p.rule == "yaml.syntax"}
    return [p for p in ansible_problems if not (p.rule == "inventory.parse" and p.file in broken)]
