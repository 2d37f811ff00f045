"""Benchmark of bring-up speed: prints figures, asserts nothing.

    .venv/bin/python tests/bench/bench_bringup.py lab [--lab NAME] [-i INVENTORY] [--playbook site.yml]
    .venv/bin/python tests/bench/bench_bringup.py fleet [--hosts 100 500 1000] [--shards 4]
    .venv/bin/python tests/bench/bench_bringup.py add-node [--hosts 1000] [--ledger-run DIR]

`lab` needs a lab that is already brought up (`clusterforge demo`: lab `lab`, its inventory
inventories/lab and its vault password .cache/lab/lab/vault-password, which it reads itself):
the converged re-run of the same playbook over SSH with three settings, one after the other in
one run, and the controller's cost per host-task of each. It prints as it goes: each pass's
time, and per host kind (gpu, npu, control, storage) the host-tasks of its busiest host (ok,
changed, skipped, failed: a converged pass changes nothing):
  stock    Ansible's defaults: a configuration with only what finds the collection and reaches
           the lab (collections and roles path, the lab's SSH options come from its inventory);
  shipped  ClusterForge's ansible.cfg (forks 50, pipelining, ControlPersist, fact cache, fixed
           interpreter), Ansible's own strategy;
  shipped + Mitogen  the same with Mitogen's linear strategy, as `clusterforge bringup` runs it.
A host-task is one task result of one host (ok, changed, skipped or failed), counted from
ansible-runner's events.

`fleet`: the controller alone at fleet scale. N simulated hosts whose tasks run on the
controller (set_fact, assert, debug: templating, a worker per host-task, the results queue;
no connection, no module transfer), which is where one ansible-playbook process tops out,
in one process and split into concurrent processes (--shards), as `clusterforge bringup`
shards node-local stages. The figure that matters on a controller with more cores is the
sharded one: each process is single-threaded at its core.

`add-node`: one host joining a fleet of N simulated hosts (local connection, each host's files
under a temporary folder). What grows with the fleet is playbooks/members.yml, the only part
of `clusterforge add-node` that touches the existing hosts: add_node_members.yml runs its plays
with the same filters and modules (the /etc/hosts block, the controller's slurm.conf with N-1
NodeName lines plus the new worker's, slurm.conf written on every node, a restart per node as
one command, the scrape targets), with the new worker's probe given instead of run. Two
figures: the controller alone (each node-side module replaced by a set_fact of its templated
argument: on a fleet the nodes run their modules on their own cores), and the same with every
node's modules executed on this controller (an upper bound: here the controller does the whole
fleet's work). The new host's own stages do not grow with the fleet: --ledger-run takes their
time from the ledger of a real add-node run (the lab test's) and prints the sum.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "cli"), str(ROOT / "plugins" / "module_utils")]

from clusterforge.ansible_env import ansible_env, mitogen_strategy  # noqa: E402


def run_counted(
    playbook: Path, inventory: Path, env: dict[str, str], private: Path, limit: str | None = None
):
    """(seconds, host-tasks, failed hosts, per host {ok, changed, skipped, failed}) of one
    ansible-playbook run through ansible-runner; a changed result counts as changed, not ok."""
    import ansible_runner

    per_host: dict[str, Counter] = defaultdict(Counter)
    kinds = {
        "runner_on_ok": "ok",
        "runner_on_skipped": "skipped",
        "runner_on_failed": "failed",
        "runner_on_unreachable": "failed",
    }

    def handle(event: dict) -> bool:
        kind = kinds.get(event.get("event"))
        if kind:
            data = event.get("event_data") or {}
            if kind == "ok" and (data.get("res") or {}).get("changed"):
                kind = "changed"
            per_host[str(data.get("host"))][kind] += 1
        return False

    private.mkdir(parents=True, exist_ok=True)
    clock = time.monotonic()
    result = ansible_runner.run(
        private_data_dir=str(private),
        playbook=str(playbook),
        inventory=str(inventory),
        limit=limit,
        envvars=env,
        quiet=True,
        event_handler=handle,
    )
    seconds = time.monotonic() - clock
    stats = result.stats or {}
    failed = sorted(set(stats.get("failures", {})) | set(stats.get("dark", {})))
    host_tasks = sum(sum(counts.values()) for counts in per_host.values())
    return seconds, host_tasks, failed, dict(per_host)


def settings(folder: Path) -> dict[str, dict[str, str]]:
    """The environments compared: stock, shipped, shipped + Mitogen (ANSIBLE_* and PATH only)."""
    shipped = {k: v for k, v in ansible_env().items() if k.startswith("ANSIBLE_") or k == "PATH"}
    for key in ("ANSIBLE_STRATEGY", "ANSIBLE_STRATEGY_PLUGINS"):
        shipped.pop(key, None)
    stock_cfg = folder / "stock.cfg"
    stock_cfg.write_text(
        f"[defaults]\ncollections_path = {ROOT / '.collections'}\nroles_path = {ROOT / 'roles'}\n"
    )
    stock = {**shipped, "ANSIBLE_CONFIG": str(stock_cfg)}
    mitogen = {**shipped, **mitogen_strategy({})}
    if "ANSIBLE_STRATEGY" not in mitogen:
        raise SystemExit("Mitogen is not installed in this venv (scripts/setup-venv.sh)")
    return {"stock": stock, "shipped": shipped, "shipped + Mitogen": mitogen}


def lab_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The lab's inventory and vault password file; SystemExit saying what is missing."""
    name = args.lab
    inventory = Path(args.inventory or ROOT / "inventories" / ("lab" if name == "lab" else f"lab-{name}"))
    password = ROOT / ".cache" / "lab" / name / "vault-password"
    missing = [str(path) for path in (inventory, password) if not path.exists()]
    if missing:
        raise SystemExit(
            f"bench_bringup.py lab needs a brought-up lab {name!r}: {', '.join(missing)} missing. "
            "Bring one up first (`clusterforge demo`), or name another with --lab."
        )
    return inventory.resolve(), password


def host_kind(host: str) -> str:
    """A lab host's kind from its name (<lab>-<kind>-NN: gpu, npu, control, storage)."""
    match = re.search(r"-([a-z]+)-\d+$", host)
    return match.group(1) if match else host


def print_kinds(per_host: dict[str, Counter]) -> None:
    by_kind: dict[str, list[Counter]] = defaultdict(list)
    for host, counts in per_host.items():
        by_kind[host_kind(host)].append(counts)
    for kind, hosts in sorted(by_kind.items()):
        most = max(hosts, key=lambda counts: sum(counts.values()))
        print(
            f"      {kind:8} {len(hosts)} host(s): up to {sum(most.values()):4d} host-tasks per host "
            f"(ok {most['ok']}, changed {most['changed']}, skipped {most['skipped']}, "
            f"failed {most['failed']})",
            flush=True,
        )


def bench_lab(args: argparse.Namespace) -> None:
    inventory, password = lab_paths(args)
    playbook = ROOT / "playbooks" / args.playbook
    print(f"converged re-run of playbooks/{args.playbook} on {inventory.name}, same nodes:", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        envs = {
            name: {**env, "ANSIBLE_VAULT_PASSWORD_FILE": str(password)}
            for name, env in settings(folder).items()
        }
        # A first converged pass with the shipped settings: every later pass starts from the same state.
        seconds, host_tasks, failed, per_host = run_counted(
            playbook, inventory, envs["shipped + Mitogen"], folder / "warm"
        )
        print(f"  warm-up pass {seconds:.1f} s, {host_tasks} host-tasks", flush=True)
        print_kinds(per_host)
        stock = None
        for name, env in envs.items():
            seconds, host_tasks, failed, per_host = run_counted(
                playbook, inventory, env, folder / name.replace(" ", "")
            )
            stock = stock or seconds
            changed = sum(counts["changed"] for counts in per_host.values())
            note = f"  FAILED on {', '.join(failed)}" if failed else ""
            note += f"  {changed} CHANGED (not converged)" if changed else ""
            print(
                f"  {name:18} {seconds:7.1f} s  {host_tasks:5d} host-tasks  "
                f"{1000 * seconds / host_tasks:6.1f} ms/host-task  {stock / seconds:4.1f}x stock{note}",
                flush=True,
            )
        print_kinds(per_host)


def fleet_files(folder: Path, hosts: int, tasks: int) -> tuple[Path, Path]:
    names = [f"node-{i:05d}" for i in range(hosts)]
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "node_sku": "hgx-h100-8gpu"},
            "hosts": {
                n: {"rack": f"r{i // 40:03d}", "ansible_host": f"198.51.100.{i % 250 + 1}"}
                for i, n in enumerate(names)
            },
        }
    }
    (folder / "fleet.yml").write_text(yaml.safe_dump(inventory))
    body = []
    for index in range(tasks):
        body += [
            {
                "name": f"Compute a value {index}",
                "ansible.builtin.set_fact": {f"v{index}": "{{ rack }}-{{ node_sku }}"},
            },
        ]
    body.append(
        {
            "name": "Check it",
            "ansible.builtin.assert": {"that": ["v0 == rack ~ '-' ~ node_sku"], "quiet": True},
        }
    )
    play = [{"name": "A converged pass", "hosts": "all", "gather_facts": False, "tasks": body}]
    (folder / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    return folder / "play.yml", folder / "fleet.yml"


def bench_fleet(args: argparse.Namespace) -> None:
    env = {k: v for k, v in ansible_env().items() if k.startswith("ANSIBLE_") or k == "PATH"}
    for key in ("ANSIBLE_STRATEGY", "ANSIBLE_STRATEGY_PLUGINS"):  # no connection here: Mitogen adds nothing
        env.pop(key, None)
    print(f"controller alone: {args.tasks} tasks per host, {os.cpu_count()} cores here")
    for hosts in args.hosts:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            playbook, inventory = fleet_files(folder, hosts, args.tasks - 1)
            one, host_tasks, _, _ = run_counted(playbook, inventory, env, folder / "one")
            names = [f"node-{i:05d}" for i in range(hosts)]
            size = -(-hosts // args.shards)
            limits = []
            for k in range(args.shards):
                path = folder / f"limit-{k}.txt"
                path.write_text("\n".join(names[k * size : (k + 1) * size]) + "\n")
                limits.append(path)
            shard_runs = [
                (playbook, inventory, env, folder / f"s{k}", f"@{limit}") for k, limit in enumerate(limits)
            ]
            clock = time.monotonic()
            with ThreadPoolExecutor(args.shards) as pool:
                list(pool.map(lambda shard: run_counted(*shard), shard_runs))
            sharded = time.monotonic() - clock
        print(
            f"  {hosts:5d} hosts: one process {one:6.1f} s ({host_tasks / one:5.0f} host-tasks/s), "
            f"{args.shards} shards {sharded:6.1f} s ({host_tasks / sharded:5.0f} host-tasks/s)"
        )


def add_node_files(folder: Path, hosts: int) -> tuple[Path, Path]:
    """A fleet of `hosts` simulated Slurm workers (one controller), the last one joining."""
    names = [f"node-{i:05d}" for i in range(hosts)]
    shape = {"CPUs": 224, "Boards": 1, "SocketsPerBoard": 2, "CoresPerSocket": 56, "ThreadsPerCore": 2,
             "RealMemory": 2063937}  # fmt: skip
    host_vars = {
        n: {"rack": f"r{i // 40:03d}", "ansible_host": f"10.{64 + i // 65536}.{i // 256 % 256}.{i % 256}",
            "cf_root": str(folder / "nodes" / n)}
        for i, n in enumerate(names)
    }  # fmt: skip
    host_vars[names[-1]]["slurm__probe"] = {"hardware": shape}  # what the probe play would register
    inventory = {
        "all": {
            "vars": {
                "node_sku": "cpu-generic",
                "slurm_partitions": [{"name": "all", "nodes_group": "slurm_workers", "default": True}],
            },
            "hosts": host_vars,
            "children": {
                "slurm_controller": {"hosts": {names[0]: {}}},
                "slurm_workers": {"hosts": {n: {} for n in names[1:]}},
                "monitoring": {"hosts": {names[0]: {}}},
            },
        }
    }
    (folder / "fleet.yml").write_text(yaml.safe_dump(inventory))
    line = " ".join(f"{k}={v}" for k, v in shape.items() if k != "RealMemory")
    conf = "ClusterName=bench\n" + "".join(
        f"NodeName={n} {line} RealMemory=2059841 State=UNKNOWN\n" for n in names[1:-1]
    )
    for n in names:
        (folder / "nodes" / n).mkdir(parents=True)
        (folder / "nodes" / n / "slurm.conf").write_text(conf)
        (folder / "nodes" / n / "hosts").write_text("127.0.0.1 localhost\n")
    return Path(__file__).parent / "add_node_members.yml", folder / "fleet.yml"


NODE_SIDE = {  # module -> the argument whose templating the controller does either way
    "ansible.builtin.blockinfile": "block",
    "ansible.builtin.copy": "content",
    "ansible.builtin.command": "argv",
}


def controller_only(playbook: Path, folder: Path) -> Path:
    """The same plays with each node-side module replaced by a set_fact of its templated argument
    (a slurp by a controller-side file lookup): what the controller does when the nodes run their
    own modules, as on a real fleet, with no node's work on this controller's cores."""
    plays = yaml.safe_load(playbook.read_text())
    for play in plays:
        for index, task in enumerate(play["tasks"]):
            keep = {
                k: v for k, v in task.items() if k in ("name", "when", "loop", "run_once", "changed_when")
            }
            if "ansible.builtin.slurp" in task:
                source = task["ansible.builtin.slurp"]["src"].strip("{} ")
                lookup = f"{{{{ lookup('ansible.builtin.file', {source}) | b64encode }}}}"
                play["tasks"][index] = {
                    **keep,
                    "ansible.builtin.set_fact": {task["register"]: {"content": lookup}},
                }
            for module, argument in NODE_SIDE.items():
                if module in task:
                    value = task[module][argument]
                    play["tasks"][index] = {**keep, "ansible.builtin.set_fact": {"node_side": value}}
    path = folder / "controller-only.yml"
    path.write_text(yaml.safe_dump(plays, sort_keys=False))
    return path


def node_stages_seconds(run_dir: Path) -> float:
    """The new host's own stages (all but members) of an add-node run in the ledger."""
    import json

    total = 0.0
    for path in sorted((run_dir / "stages").glob("*.json")):
        record = json.loads(path.read_text())
        if record.get("stage") != "members":
            total += float(record.get("duration_s") or 0)
    return total


def bench_add_node(args: argparse.Namespace) -> None:
    env = {k: v for k, v in ansible_env().items() if k.startswith("ANSIBLE_") or k == "PATH"}
    for key in ("ANSIBLE_STRATEGY", "ANSIBLE_STRATEGY_PLUGINS"):
        env.pop(key, None)
    env["ANSIBLE_TRANSPORT"] = "local"  # the connection, not a host variable: targets stay as in production
    env["ANSIBLE_BECOME"] = "false"
    print(f"add-node: the members pass over simulated fleets, {os.cpu_count()} cores here")
    for hosts in args.hosts:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            playbook, inventory = add_node_files(folder, hosts)
            alone, _, failed_alone, _ = run_counted(
                controller_only(playbook, folder), inventory, env, folder / "alone"
            )
            seconds, host_tasks, failed, _ = run_counted(playbook, inventory, env, folder / "run")
            conf = (folder / "nodes" / "node-00001" / "slurm.conf").read_text()
        failed = sorted(set(failed) | set(failed_alone))
        note = f"  FAILED on {', '.join(failed[:5])}" if failed else ""
        if f"NodeName=node-{hosts - 1:05d} " not in conf:
            note += "  THE NEW NODE IS NOT IN slurm.conf"
        print(
            f"  1 host into {hosts:5d}: members {host_tasks} host-tasks; controller alone {alone:6.1f} s; "
            f"with every node's modules run on this controller too {seconds:6.1f} s{note}"
        )
        if args.ledger_run:
            own = node_stages_seconds(Path(args.ledger_run))
            print(f"    + the new host's own stages {own:.0f} s ({args.ledger_run}) = {own + alone:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    lab = sub.add_parser("lab", help="stock vs shipped vs Mitogen on a brought-up lab")
    lab.add_argument("--lab", default="lab", help="the lab's name (`lab up --name`) [default: lab]")
    lab.add_argument("-i", "--inventory", help="its inventory [default: inventories/lab or lab-NAME]")
    lab.add_argument("--playbook", default="site.yml")
    fleet = sub.add_parser("fleet", help="the controller over N simulated hosts, one process vs shards")
    fleet.add_argument("--hosts", type=int, nargs="+", default=[100, 500, 1000])
    fleet.add_argument("--tasks", type=int, default=10)
    fleet.add_argument("--shards", type=int, default=4)
    add = sub.add_parser("add-node", help="one host into N simulated hosts: the members pass")
    add.add_argument("--hosts", type=int, nargs="+", default=[1000])
    add.add_argument("--ledger-run", help="an add-node run's folder in a ledger: adds its node stages' time")
    args = parser.parse_args()
    {"lab": bench_lab, "fleet": bench_fleet, "add-node": bench_add_node}[args.what](args)


if __name__ == "__main__":
    main()
