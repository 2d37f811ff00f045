"""`clusterforge backup` and `clusterforge restore`: the playbooks around a backup set.

docs/design.md, "Backup and restore of cluster state", is the contract. The set's logic (plan,
manifest, verify, retention) is cfcore/backup_set.py's, shared with the playbooks; this module
resolves the target, runs the playbooks through ansible-runner and turns their outcome into the
documented exit codes.
"""

from __future__ import annotations

import os
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cfcore import backup_set
from cfcore.inputs import InputError, plain_problem

from clusterforge import __version__
from clusterforge.errors import ChecksFailed, EnvironmentNotReady, InvalidInput
from clusterforge.paths import project_root
from clusterforge.runs.ledger import DEFAULT_LEDGER, is_run_id
from clusterforge.validation.runner import run_playbook

RUNNER_DIR = ".ansible-runner"
S3_CACHE = Path.home() / ".cache" / "clusterforge" / "backup"
# A fresh host of a restore: its node stages before the data is placed (the packages the placing
# needs come from the repositories role base sets), its service stages after (on the placed data).
NODE_STAGES = ("preflight", "base", "fabric", "accelerators")
SERVICE_STAGES = ("storage", "schedulers", "monitoring")
# The ledger archive of a set unpacks to at most this much: its runs' records compress well, but not
# a hundredfold (a gzip of zeros does, a thousandfold), and never past the disk it lands on.
LEDGER_MIN_LIMIT_BYTES, LEDGER_MAX_RATIO, LEDGER_MAX_MEMBERS = 256 << 20, 100, 200_000


@dataclass
class Target:
    """Where sets go: a folder on the controller, or an S3 bucket with a local staging folder."""

    folder: Path
    bucket: str = ""
    prefix: str = ""

    @property
    def is_s3(self) -> bool:
        return bool(self.bucket)

    def describe(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/") if self.is_s3 else str(self.folder)

    def extravars(self) -> dict[str, Any]:
        found: dict[str, Any] = {"backup_target": str(self.folder)}
        if self.is_s3:
            found.update(backup_s3_bucket=self.bucket, backup_s3_prefix=self.prefix)
        return found


def site_var(inventory: Any, name: str) -> Any:
    """A site-wide variable (group_vars/all) as the inventory's first host sees it."""
    for host in inventory.hostvars:
        return inventory.vars_of(host).get(name)
    return None


def _s3_target(url: str, where: str) -> Target:
    parts = urlsplit(url)
    if not parts.netloc:
        raise InvalidInput(f"{where} {url!r} names no bucket", "write it as s3://BUCKET/PREFIX")
    prefix = parts.path.strip("/")
    return Target(S3_CACHE / parts.netloc / (prefix or "_"), parts.netloc, prefix)


def resolve_target(option: str | None, inventory: Any) -> Target:
    """--target, else the inventory's backup_s3_bucket or backup_target."""
    if option:
        if option.startswith("s3://"):
            return _s3_target(option, "--target")
        return Target(Path(option).expanduser().resolve())
    bucket = site_var(inventory, "backup_s3_bucket") if inventory is not None else None
    if isinstance(bucket, str) and bucket and "{{" not in bucket:
        prefix = site_var(inventory, "backup_s3_prefix") or ""
        return _s3_target(f"s3://{bucket}/{prefix}", "backup_s3_bucket")
    folder = site_var(inventory, "backup_target") if inventory is not None else None
    if isinstance(folder, str) and folder and "{{" not in folder:
        if not os.path.isabs(folder):
            raise InvalidInput(f"backup_target {folder!r} is not an absolute path", "set an absolute folder")
        return Target(Path(folder))
    raise InvalidInput(
        "no backup target: neither --target nor the inventory's backup_target / backup_s3_bucket is set",
        "pass --target DIR or --target s3://BUCKET/PREFIX, or set backup_target in group_vars/all",
    )


def writable_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        probe = folder / f".clusterforge-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise InvalidInput(
            f"cannot write to the backup folder {folder}: {err.strerror or err}",
            "pass --target with a folder you can write to",
        ) from None


def free_set_id(folder: Path) -> str:
    """A new set id not taken in `folder` (two backups in one second: the second waits)."""
    while True:
        set_id = backup_set.new_set_id()
        if not (folder / set_id).exists() and not (folder / backup_set.partial_name(set_id)).exists():
            return set_id
        time.sleep(1)


@dataclass
class PlaybookOutcome:
    rc: int
    stdout: Path | None
    failures: list[str] = field(default_factory=list)  # "host: task: message"
    facts: dict[str, Any] = field(default_factory=dict)  # debug `var` results by name


def run(
    playbook: str,
    inventory: Path,
    private_dir: Path,
    extravars: dict[str, Any],
    operator_vars: dict[str, Any] | None = None,
    **kw: Any,
) -> PlaybookOutcome:
    """One playbook; its failed tasks (not rescued ones) and its debug `var` outputs collected.
    `operator_vars`: the operator's -e (run_playbook passes them as given, checks `extravars`)."""
    outcome = PlaybookOutcome(rc=0, stdout=None)

    def on_event(name: str, data: dict[str, Any]) -> None:
        res = data.get("res") or {}
        if name == "runner_on_failed" and not data.get("ignore_errors"):
            message = res.get("msg") or res.get("stderr") or ""
            outcome.failures.append(f"{data.get('host')}: {data.get('task')}: {str(message).strip()[:600]}")
        if name == "runner_on_ok" and isinstance(res, dict):
            for key, value in res.items():
                if key not in ("changed", "failed", "_ansible_verbose_always", "_ansible_no_log"):
                    outcome.facts.setdefault(key, value)

    result = run_playbook(
        project_root() / "playbooks" / playbook, inventory, private_dir, on_event,
        extravars=extravars, operator_vars=operator_vars, **kw,
    )  # fmt: skip
    outcome.rc, outcome.stdout = result.rc, result.stdout_path
    return outcome


def inventory_record(inventory_path: Path) -> dict[str, str]:
    from clusterforge.bringup.workflow import inventory_sha256

    return {"path": str(inventory_path), "sha256": inventory_sha256(str(inventory_path))}


# -------------------------------------------------------------------- backup ----


@dataclass
class BackupResult:
    set_dir: Path
    manifest: dict[str, Any]
    target: Target
    outcome: PlaybookOutcome


def take(
    inventory: Any,
    target: Target,
    components: list[str],
    extra_vars: dict[str, Any],
    ledger_dir: Path | None,
    note: Any,
) -> BackupResult:
    try:
        backup_set.plan(inventory.groups, inventory.hostvars, components or None)
    except InputError as err:
        raise InvalidInput(err.message, err.fix) from None
    writable_folder(target.folder)
    set_id = free_set_id(target.folder)
    ledger = (ledger_dir or DEFAULT_LEDGER).resolve()
    extravars = {
        **target.extravars(),
        "backup_set_id": set_id,
        "backup_components": components,
        "backup_inventory_record": inventory_record(inventory.path),
        "backup_tool_version": __version__,
        "backup_ledger_dir": str(ledger) if ledger.is_dir() else "",
    }
    note(f"backup set {set_id} into {target.describe()}")
    outcome = run("backup.yml", inventory.path, target.folder / RUNNER_DIR / set_id, extravars, extra_vars)
    set_dir = target.folder / set_id
    if not (set_dir / backup_set.MANIFEST_NAME).is_file():
        raise EnvironmentNotReady(
            f"the backup playbook stopped (rc {outcome.rc}) before the set was finished:\n"
            + "\n".join(outcome.failures[-10:]),
            f"read {outcome.stdout} for the whole output; the staged items are in "
            f"{target.folder / backup_set.partial_name(set_id)}",
        )
    return BackupResult(set_dir, backup_set.load_manifest(str(set_dir)), target, outcome)


def list_sets(target: Target, inventory: Any, extra_vars: dict[str, Any]) -> list[dict[str, Any]]:
    """The complete sets, oldest first: `{id, items, bytes, components}` (S3: ids only)."""
    if target.is_s3:
        outcome = run_s3(inventory, target, extra_vars, fetch="")
        return [{"id": set_id} for set_id in outcome.facts.get("backup_s3_sets") or []]
    found = []
    for set_id in backup_set.complete_sets(str(target.folder)):
        try:
            data = backup_set.load_manifest(str(target.folder / set_id))
        except backup_set.BackupSetError as err:
            found.append({"id": set_id, "error": err.message})
            continue
        found.append(
            {
                "id": set_id,
                "items": len(data["items"]),
                "bytes": sum(item["size"] for item in data["items"]),
                "components": {name: c.get("status") for name, c in data["components"].items()},
            }
        )
    return found


def run_s3(inventory: Any, target: Target, extra_vars: dict[str, Any], fetch: str) -> PlaybookOutcome:
    writable_folder(target.folder)
    extravars = {**target.extravars(), "backup_s3_fetch_id": fetch}
    private = (
        target.folder / RUNNER_DIR / f"s3-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}"
    )
    outcome = run("backup_s3.yml", inventory.path, private, extravars, extra_vars)
    if outcome.rc != 0:
        raise EnvironmentNotReady(
            f"reading s3://{target.bucket}/{target.prefix} failed:\n" + "\n".join(outcome.failures[-5:]),
            f"check the bucket and the backup_s3_* variables; the whole output: {outcome.stdout}",
        )
    return outcome


# ------------------------------------------------------------------- restore ----


def locate_set(source: str, target: Target | None, inventory: Any, extra_vars: dict[str, Any]) -> Path:
    """--from: a set folder, or a set id in the target (downloaded first from S3)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path.resolve()
    if not backup_set.is_set_id(source):
        raise InvalidInput(
            f"--from {source!r} is neither a set folder nor a set id (YYYYmmddTHHMMSSZ)",
            "name a set folder, or an id that `clusterforge backup list` shows",
        )
    if target is None:
        raise InvalidInput(
            f"--from {source}: a set id needs a target", "pass --target, or name the set's folder"
        )
    if target.is_s3:
        run_s3(inventory, target, extra_vars, fetch=source)
    folder = target.folder / source
    if not folder.is_dir():
        raise InvalidInput(
            f"no set {source} in {target.describe()}",
            "pick one that `clusterforge backup list` shows, or name the set's folder",
        )
    return folder


def verified_manifest(set_dir: Path, components: list[str] | None) -> dict[str, Any]:
    """The set's manifest, after every item (of `components`) matched its sha256 and size; a bad
    or missing item refuses the restore before anything runs. The set's folder and id reach the
    restore playbooks as extra variables (templated by ansible-playbook): both must be plain, and
    the id is the folder's name (load_manifest)."""
    problem = plain_problem(str(set_dir), backup_set.SET_DIR_FORM)
    if problem:
        raise InvalidInput(
            f"the set folder {str(set_dir)!r} {problem}: it would reach the restore playbooks as a template",
            "move the set to a folder whose path is one line without {{, {% or {#, and restore from there",
        )
    try:
        data = backup_set.load_manifest(str(set_dir))
    except backup_set.BackupSetError as err:
        raise InvalidInput(err.message, err.fix) from None
    problems = backup_set.verify(str(set_dir), data, components)
    if problems:
        raise InvalidInput(
            f"the set {set_dir} fails its checksums, so nothing is restored:\n"
            + "\n".join(f"  {problem}" for problem in problems),
            "restore from another set (`clusterforge backup list`), or fetch this one again",
        )
    ledger_items = backup_set.items_of(data, "ledger") if components is None or "ledger" in components else []
    if ledger_items:
        ledger_members(set_dir / ledger_items[0]["path"])  # refused here, before any playbook runs
    return data


def ledger_members(archive_path: Path) -> list[tuple[tarfile.TarInfo, str]]:
    """Each member of a set's ledger archive with the run it belongs to, once every member proved to
    be what a ledger holds: the archive's one folder of run folders (named as run ids) holding
    regular files and folders, unpacking to a bounded size. Anything else is refused whole
    (InvalidInput), so a restore never unpacks half an archive, and never a link, a device, a path
    out of the ledger or a bomb (checksums prove a set unchanged, not written by this CLI)."""
    where = f"the set's ledger archive {archive_path}"
    fix = "restore without the ledger (--components naming the others), or from another set"
    limit = max(LEDGER_MIN_LIMIT_BYTES, LEDGER_MAX_RATIO * archive_path.stat().st_size)
    members: list[tuple[tarfile.TarInfo, str]] = []
    total = 0
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            for member in archive:
                parts = member.name.strip("/").split("/")
                if len(members) >= LEDGER_MAX_MEMBERS:
                    raise InvalidInput(f"{where} holds more than {LEDGER_MAX_MEMBERS} entries", fix)
                if member.name.startswith("/") or ".." in parts:  # the data filter would strip a "/"
                    raise InvalidInput(f"{where}: {member.name!r} is not a path inside the ledger", fix)
                if not (member.isreg() or member.isdir()) or member.issparse():
                    raise InvalidInput(f"{where}: {member.name!r} is not a regular file or a folder", fix)
                try:
                    tarfile.data_filter(member, str(archive_path.parent))
                except tarfile.FilterError as err:
                    raise InvalidInput(f"{where}: {err}", fix) from None
                if len(parts) >= 2 and not is_run_id(parts[1]):
                    raise InvalidInput(f"{where}: {member.name!r} is in no run's folder", fix)
                total += member.size
                if total > limit:
                    raise InvalidInput(f"{where} unpacks to more than {limit} bytes", fix)
                if len(parts) >= 2:
                    members.append((member, parts[1]))
    except (tarfile.TarError, OSError, EOFError) as err:
        raise InvalidInput(f"{where} is not a readable tar.gz archive ({err})", fix) from None
    return members


def restore_ledger(set_dir: Path, data: dict[str, Any], ledger_dir: Path) -> dict[str, list[str]]:
    """The set's run ledger unpacked into `ledger_dir`: `{restored: [run ids], kept: [run ids
    already there, left as they are]}`. The archive holds one folder (the ledger) of run folders."""
    items = backup_set.items_of(data, "ledger")
    if not items:
        return {"restored": [], "kept": []}
    archive_path = set_dir / items[0]["path"]
    members = ledger_members(archive_path)
    run_ids = sorted({run_id for _member, run_id in members})
    kept = [run_id for run_id in run_ids if (ledger_dir / run_id).exists()]
    ledger_dir.mkdir(parents=True, exist_ok=True)
    checked = {member.name: run_id for member, run_id in members}
    with tarfile.open(archive_path, "r:gz") as archive:
        for member in archive:
            run_id = checked.get(member.name)
            if run_id is None or run_id in kept:
                continue
            member.name = "/".join(member.name.strip("/").split("/")[1:])
            archive.extract(member, ledger_dir, filter="data")
    return {"restored": [run_id for run_id in run_ids if run_id not in kept], "kept": kept}


@dataclass
class RestoreResult:
    components: list[str]
    ledger: dict[str, list[str]]
    placed: PlaybookOutcome
    drill: PlaybookOutcome | None


def place_and_drill(
    inventory: Any,
    set_dir: Path,
    data: dict[str, Any],
    components: list[str],
    extra_vars: dict[str, Any],
    ledger_dir: Path,
    bring_up: Any,
    note: Any,
) -> RestoreResult:
    """Steps 2-5 of a restore (the set is verified): the ledger; the fresh hosts' node stages
    (`bring_up(NODE_STAGES)`: their OS, repositories and time first, as any new node); the placing
    playbook; their service stages on the placed data (`bring_up(SERVICE_STAGES)`); the drill.
    `bring_up` raises on a failed run. ChecksFailed names the step that failed."""
    chosen = components or None
    ledger = restore_ledger(set_dir, data, ledger_dir) if not chosen or "ledger" in chosen else {}
    if ledger:
        note(
            f"ledger: {len(ledger['restored'])} run(s) restored into {ledger_dir}, {len(ledger['kept'])} kept"
        )
    try:
        plans = backup_set.plan(inventory.groups, inventory.hostvars, chosen)
    except InputError as err:
        raise InvalidInput(err.message, err.fix) from None
    placing = backup_set.restorable(plans, data)
    extravars = {
        "restore_set_dir": str(set_dir),
        "restore_set_id": data["id"],
        "restore_components": components,
    }
    private = set_dir.parent / RUNNER_DIR / f"restore-{data['id']}-{time.strftime('%H%M%S')}"
    bring_up(NODE_STAGES)
    placed = run("restore.yml", inventory.path, private / "place", extravars, extra_vars) if placing else None
    if placed is not None and placed.rc != 0:
        raise ChecksFailed(
            "placing the data failed:\n" + "\n".join(placed.failures[-10:]),
            f"fix what it names and run the restore again (it is idempotent); output: {placed.stdout}",
        )
    bring_up(SERVICE_STAGES)
    drill = (
        run("restore_drill.yml", inventory.path, private / "drill", extravars, extra_vars)
        if placing
        else None
    )
    if drill is not None and drill.rc != 0:
        raise ChecksFailed(
            "the restore drill failed: the services do not work on the restored data:\n"
            + "\n".join(drill.failures[-10:]),
            f"read {drill.stdout}; the data is placed, so fix the service and rerun the drill "
            "(ansible-playbook playbooks/restore_drill.yml -e restore_set_dir=... -e restore_set_id=...)",
        )
    missing = [
        run_id for run_id in ledger.get("restored", []) if not (ledger_dir / run_id / "run.json").is_file()
    ]
    if missing:
        raise ChecksFailed(f"ledger runs without run.json after the restore: {', '.join(missing)}")
    return RestoreResult(placing, ledger, placed or PlaybookOutcome(0, None), drill)
