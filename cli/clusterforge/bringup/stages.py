"""The bring-up's stages, in order, and the choice of them (--stages, --skip).

One playbook per stage; playbooks/site.yml imports the same playbooks, so a
bring-up and `ansible-playbook site.yml` apply the same plays (docs/design.md,
"Bring-up runs and the run ledger"). `validate` has no playbook of its own
here: it is the validation workflow of `clusterforge validate`.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.errors import InvalidInput


@dataclass(frozen=True)
class Stage:
    name: str
    playbook: str | None  # under playbooks/; None: the validation workflow
    title: str
    # Node-local plays only: its hosts may run in concurrent ansible-playbook processes (shards).
    # Not storage, schedulers, monitoring: their clients need their servers up in the same run.
    shardable: bool = False
    # Runs on every host of the inventory, whatever the run's hosts: the pieces that name every
    # host (/etc/hosts, slurm.conf, scrape targets) after hosts joined (add-node).
    cluster_wide: bool = False


STAGES: tuple[Stage, ...] = (
    Stage("preflight", "preflight.yml", "reachability, facts, OS", shardable=True),
    Stage("base", "base.yml", "OS layer", shardable=True),
    # Before the accelerators: OFED's modules must exist before the NVIDIA DKMS build.
    Stage("fabric", "fabric.yml", "RDMA, IPoIB, RoCE", shardable=True),
    Stage("accelerators", "accelerators.yml", "NVIDIA, Ascend, PPU stacks", shardable=True),
    Stage("storage", "storage.yml", "Ceph, JuiceFS"),
    Stage("schedulers", "schedulers.yml", "Slurm, Kubernetes"),
    Stage("monitoring", "monitoring.yml", "exporters, Prometheus"),
    Stage("validate", None, "node validation and reports"),
)
STAGE_NAMES = tuple(stage.name for stage in STAGES)

# `clusterforge add-node`: the node stages on the new hosts only, then the cluster-wide pieces on
# every host (playbooks/members.yml re-runs no role), then the new hosts' validation.
MEMBERS = Stage("members", "members.yml", "/etc/hosts, Slurm nodes, scrape targets", cluster_wide=True)
ADD_NODE_STAGE_NAMES = (*STAGE_NAMES[:-1], MEMBERS.name, "validate")
_BY_NAME = {stage.name: stage for stage in (*STAGES, MEMBERS)}


def stage(name: str) -> Stage:
    return _BY_NAME[name]


def parse_stage_list(text: str | None, option: str, allowed: tuple[str, ...] = STAGE_NAMES) -> list[str]:
    """'base,storage' -> ['base', 'storage']; an unknown name is bad input naming the valid ones."""
    if text is None:
        return []
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in allowed]
    if unknown or not names:
        raise InvalidInput(
            f"{option} {text!r}: {'unknown stage ' + ', '.join(unknown) if unknown else 'no stage named'}",
            f"name stages separated by commas, from: {', '.join(allowed)}",
        )
    return names


def select_stages(only: str | None, skip: str | None, allowed: tuple[str, ...] = STAGE_NAMES) -> list[str]:
    """The stages to run, always in their order in `allowed`: --stages (default all) minus --skip."""
    chosen = set(parse_stage_list(only, "--stages", allowed) or allowed)
    chosen -= set(parse_stage_list(skip, "--skip", allowed))
    if not chosen:
        raise InvalidInput(
            "--stages and --skip leave no stage to run", f"keep at least one of: {', '.join(allowed)}"
        )
    return [name for name in allowed if name in chosen]


def shards_of(hosts: list[str], rack_of: dict[str, str], size: int) -> list[list[str]]:
    """Hosts in shards of at most `size`, whole racks together where a rack fits (inventory order).

    A rack is a failure domain and usually a switch: keeping it in one process keeps a rack's
    hosts in step. A rack larger than `size` is split.
    """
    racks: dict[str, list[str]] = {}
    for host in hosts:
        racks.setdefault(rack_of.get(host, ""), []).append(host)
    shards: list[list[str]] = []
    current: list[str] = []
    for members in racks.values():
        for start in range(0, len(members), size):
            piece = members[start : start + size]
            if current and len(current) + len(piece) > size:
                shards.append(current)
                current = []
            current = current + piece
    if current:
        shards.append(current)
    return shards
