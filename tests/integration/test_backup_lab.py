"""`clusterforge backup` and `clusterforge restore` on the shared lab (conftest.py): a lost control
node (Slurm's controller, the JuiceFS metadata engine, Prometheus) comes back from a backup set.

Before the backup: a job held in Slurm's queue, a file written into JuiceFS, the bring-up runs in
the ledger. The set goes to the lab's own object store (its Ceph RGW, as the lab's inventory says:
group_vars/all/backup.yml). Then the control node's container is removed and created again from the
node image (nothing of it left), and `clusterforge restore --fresh` takes the set from the bucket,
brings the node up around the placed data and runs the drill. Checked afterwards, on the nodes:
- Slurm's node list and partitions are what they were, and the held job is back, by id;
- the file written before the backup reads back byte-identical through two clients' mounts;
- the ledger holds the earlier runs;
- a set with one corrupted item is refused, naming the item, before anything runs.

Runs late (LAB_ORDER): it removes the control node the other modules use, and leaves it restored.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest
from clusterforge.backups.workflow import S3_CACHE
from conftest import LEDGER, TIMINGS
from labkit import BIN, INVENTORY, LAB, explain, lab_cli, run, sh

pytestmark = pytest.mark.lab
LAB_ORDER = 87  # after the upgrades (85), before the lab's lifecycle (90)
CONTROLLER = f"{LAB}-ctl-01"  # slurm_controller, juicefs_meta, monitoring
CLIENTS = [f"{LAB}-gpu-01", f"{LAB}-npu-01"]  # both mount the JuiceFS volume
JFS_FILE = "/mnt/jfs/before-backup/data.bin"
BUCKET = "clusterforge-backup"  # the lab inventory's backup_s3_bucket (clusterforge/lab/sitevars.py)


def slurm_view() -> tuple[list[str], dict[str, str]]:
    nodes = sorted(sh(CONTROLLER, "sinfo --noheader --Node --format='%N|%P'").split())
    jobs = dict(
        line.split("|", 1)
        for line in sh(CONTROLLER, "squeue --noheader --all --format='%i|%j'").split()
        if line
    )
    return nodes, jobs


def state_saved_after(moment: float) -> bool:
    """slurmctld has written its job state since `moment` (it saves within seconds of a change)."""
    location = sh(CONTROLLER, "scontrol show config | sed -n 's/^StateSaveLocation *= *//p'").strip()
    saved = float(sh(CONTROLLER, f"stat -c %Y {location}/job_state").strip())
    return saved >= moment


@pytest.fixture(scope="module")
def restored(lab, tmp_path_factory):
    # 1. State worth restoring.
    submitted = float(sh(CONTROLLER, "date +%s").strip())
    job_id = sh(
        CONTROLLER, "sbatch --parsable --hold --job-name=queued-before-backup --wrap 'sleep 1'"
    ).strip()
    deadline = time.monotonic() + 60
    while not state_saved_after(submitted) and time.monotonic() < deadline:
        time.sleep(2)
    written = sh(
        CLIENTS[0],
        f"mkdir -p {JFS_FILE.rsplit('/', 1)[0]} && head -c 3000000 /dev/urandom > {JFS_FILE} && sync "
        f"&& sha256sum {JFS_FILE}",
    ).split()[0]
    before = slurm_view()
    runs_before = sorted(p.name for p in LEDGER.iterdir() if (p / "run.json").is_file())

    # 2. The backup, into the lab's RGW bucket.
    clock = time.monotonic()
    backup = run(
        BIN / "clusterforge", "backup", "-i", INVENTORY, "--ledger", LEDGER, "--format", "json", timeout=900
    )
    took_backup = time.monotonic() - clock
    assert backup.returncode == 0, explain(backup)
    result = json.loads(backup.stdout)
    set_dir, manifest = result["set_dir"], result["manifest"]

    # 3. A corrupted copy is refused before anything runs.
    corrupted = tmp_path_factory.mktemp("corrupted") / manifest["id"]
    shutil.copytree(set_dir, corrupted)
    victim = next(item for item in manifest["items"] if item["name"] == "slurm-state.tar.gz")
    data = bytearray((corrupted / victim["path"]).read_bytes())
    data[len(data) // 2] ^= 0x01
    (corrupted / victim["path"]).write_bytes(bytes(data))
    refused = run(BIN / "clusterforge", "restore", "-i", INVENTORY, "--from", corrupted, "--ledger", LEDGER)

    # 4. The control node is lost, and a fresh one takes its place.
    removed = run("podman", "rm", "--force", f"cflab-{CONTROLLER}")
    assert removed.returncode == 0, explain(removed)
    up = lab_cli("up", "--name", LAB, timeout=600)
    assert up.returncode == 0, explain(up)
    # The set is read back from the bucket, not from the local staging copy.
    shutil.rmtree(set_dir)
    restored_ledger = tmp_path_factory.mktemp("ledger") / "runs"

    # 5. The restore: place, bring the fresh node up around the data, drill.
    clock = time.monotonic()
    restore = run(
        BIN / "clusterforge", "restore", "-i", INVENTORY, "--from", manifest["id"], "--fresh", CONTROLLER,
        "--ledger", restored_ledger, timeout=1800,
    )  # fmt: skip
    took_restore = time.monotonic() - clock
    TIMINGS.append(f"backup: {took_backup:.0f} s ({len(manifest['items'])} items); restore of a fresh "
                   f"{CONTROLLER} with the drill: {took_restore:.0f} s")  # fmt: skip
    yield {
        "job_id": job_id,
        "written": written,
        "before": before,
        "runs_before": runs_before,
        "manifest": manifest,
        "refused": refused,
        "victim": victim["path"],
        "restore": restore,
        "ledger": restored_ledger,
    }
    run("podman", "exec", f"cflab-{CONTROLLER}", "scancel", job_id)


def test_the_set_holds_every_component_of_the_lab_with_secrets_encrypted(restored):
    manifest = restored["manifest"]
    statuses = {name: entry["status"] for name, entry in manifest["components"].items()}
    assert statuses == {
        "ledger": "ok",
        "etcd": "not applicable",  # the lab deploys no Kubernetes (k8s_deploy: false)
        "slurm": "ok",
        "slurmdbd": "not applicable",
        "juicefs": "ok",
        "ceph": "ok",
        "monitoring": "ok",
    }
    names = {item["name"]: item for item in manifest["items"]}
    for secret in (
        "juicefs-jfs.json.gz.enc",
        "ceph-auth.txt.enc",
        "ceph-keyrings.tar.gz.enc",
        "prometheus-etc.tar.gz.enc",
    ):
        assert names[secret]["encrypted"], secret
    assert not any(item["name"] in ("ceph-auth.txt", "juicefs-jfs.json.gz") for item in manifest["items"])


def test_a_corrupted_item_is_refused_before_anything_runs(restored):
    refused = restored["refused"]
    assert refused.returncode == 2, explain(refused)
    assert "fails its checksums, so nothing is restored" in refused.stderr
    assert restored["victim"] in refused.stderr


def test_the_restore_and_its_drill_pass(restored):
    restore = restored["restore"]
    assert restore.returncode == 0, explain(restore)
    assert "the drill passed" in restore.stdout


def test_slurm_has_its_nodes_partitions_and_the_queued_job_back(restored):
    nodes, jobs = slurm_view()
    before_nodes, _ = restored["before"]
    assert nodes == before_nodes
    assert jobs.get(restored["job_id"]) == "queued-before-backup"
    reason = sh(CONTROLLER, f"squeue --noheader --job {restored['job_id']} --format=%r").strip()
    assert reason in ("JobHeldUser", "JobHeldAdmin")  # still held, as it was


def test_juicefs_files_written_before_the_backup_read_back_byte_identical(restored):
    for client in CLIENTS:
        digest = sh(client, f"sha256sum {JFS_FILE}", timeout=300).split()[0]
        assert digest == restored["written"], client


def test_the_ledger_shows_the_earlier_runs(restored):
    listed = run(BIN / "clusterforge", "runs", "list", "--ledger", restored["ledger"], "--format", "json")
    assert listed.returncode == 0, explain(listed)
    ids = {entry["id"] for entry in json.loads(listed.stdout)}
    assert set(restored["runs_before"]) <= ids
    # The restore's own bring-ups of the fresh node are recorded beside them.
    assert len(ids - set(restored["runs_before"])) == 2


def test_the_bucket_lists_the_set_and_its_downloaded_copy_verifies(restored):
    set_id = restored["manifest"]["id"]
    listed = run(BIN / "clusterforge", "backup", "list", "-i", INVENTORY, "--format", "json")
    assert listed.returncode == 0, explain(listed)
    assert set_id in {entry["id"] for entry in json.loads(listed.stdout)}
    # The restore downloaded the set from the bucket (its staging copy was removed first).
    downloaded = S3_CACHE / BUCKET / "_" / set_id
    verified = run(BIN / "clusterforge", "backup", "verify", downloaded)
    assert verified.returncode == 0, explain(verified)
