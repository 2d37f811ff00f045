"""`clusterforge validate --level framework`: does the training framework see every accelerator and
all-reduce across them (docs/design.md, "Framework readiness (`clusterforge validate --level
framework`)")?

playbooks/validate_framework.yml runs module framework_smoke on every accelerator node of the run;
its node results (checks `framework.*`) go through workflow.finish like any level's: outliers,
reports, --quarantine, exit 3 when a node fails or could not be validated.
"""

from __future__ import annotations

import time

from cfcore.framework_run import env_problem
from cfcore.inputs import is_template

from clusterforge.errors import InvalidInput
from clusterforge.validation.inventory import Inventory, is_encrypted, load_inventory
from clusterforge.validation.results import utc_now
from clusterforge.validation.workflow import (
    RUNNER_DIR,
    Output,
    QuarantineOptions,
    accelerator_targets,
    ansible_run_meta,
    finish,
    preflight,
    prepare_out_dir,
    run_node_playbook,
)

PLAYBOOK = "validate_framework.yml"
LEVEL = "framework"
FRAMEWORK_GROUPS = ("gpu_nvidia", "npu_ascend", "npu_ppu")
# The groups whose nodes run the probe (PPU nodes get every check skipped: no documented PyTorch path).
PROBED_GROUPS = ("gpu_nvidia", "npu_ascend")
ENV_VARIABLE = "framework_env"


def validate_framework_fleet(
    inventory_path,
    output: Output,
    *,
    limit: str | None = None,
    forks: int | None = None,
    quarantine: QuarantineOptions | None = None,
    allow_scripts: bool = False,
) -> None:
    started, clock = utc_now(), time.monotonic()
    inventory = load_inventory(inventory_path, limit, allow_scripts=allow_scripts)
    targets = accelerator_targets(
        inventory,
        FRAMEWORK_GROUPS,
        inventory_path,
        limit,
        "framework validation runs on accelerator nodes: put them in those groups, or widen --limit",
    )
    check_environments(inventory, targets)
    node_skus = preflight(inventory)
    prepare_out_dir(output.out_dir)
    extravars = {"validate_hosts": ":".join(FRAMEWORK_GROUPS), "validate_block_on_fail": False}
    results, run = run_node_playbook(
        PLAYBOOK,
        inventory,
        targets,
        node_skus,
        LEVEL,
        output,
        output.out_dir / RUNNER_DIR,
        extravars,
        limit=limit,
        forks=forks,
    )
    run_meta = ansible_run_meta(inventory_path, limit, LEVEL, started, run)
    finish(results, run_meta, clock, output, inventory=inventory, quarantine=quarantine)


def check_environments(inventory: Inventory, targets: list[str]) -> None:
    """Every probed host names a well-formed training environment; one error (exit 2) for all of them."""
    problems = []
    for host in targets:
        if not set(inventory.groups_of(host)) & set(PROBED_GROUPS):
            continue
        env = inventory.vars_of(host).get(ENV_VARIABLE)
        if env is not None and (is_template(env) or is_encrypted(env)):
            continue  # only Ansible resolves it: the module checks it on the node
        if env is None:
            problems.append(f"host {host}: {ENV_VARIABLE} is not set")
            continue
        problem = env_problem(env)
        if problem:
            problems.append(f"host {host}: {problem}")
    if problems:
        shown = "\n  ".join(problems[:10])
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise InvalidInput(
            f"{len(problems)} host(s) have no usable training environment:\n  {shown}{more}",
            f"set {ENV_VARIABLE} in group_vars (e.g. {ENV_VARIABLE}: {{kind: venv, path: /opt/train/venv}}, "
            "docs/design.md 'Framework readiness')",
        )
