"""The etcd snapshot of a kubeadm control plane and its restore: the commands, rendered once.

kubeadm runs a stacked etcd as a static pod on each control-plane node: its client listens on
https://127.0.0.1:2379 with the PKI under /etc/kubernetes/pki/etcd, its data in /var/lib/etcd,
its manifest (and the API server's) in /etc/kubernetes/manifests. The backup takes a snapshot
with `etcdctl snapshot save` on the first control-plane node; the restore stops the static pods
by moving their manifests aside, restores the snapshot on every member into a new data folder
with `etcdutl snapshot restore` (a new cluster of the same members: name, peer URL), swaps the
data folders and puts the manifests back (etcd's "Restoring a cluster" procedure).

No Kubernetes server runs in ClusterForge's tests, so these commands are tested on paper: what
the role runs is what these functions return. Stdlib only.
"""

from __future__ import annotations

import posixpath
import re

from .inputs import InputError

ETCD_PEER_PORT = 2380
DEFAULTS = {
    "endpoint": "https://127.0.0.1:2379",
    "pki_dir": "/etc/kubernetes/pki/etcd",
    "data_dir": "/var/lib/etcd",
    "manifests_dir": "/etc/kubernetes/manifests",
    "bin_dir": "/usr/local/bin",
}
STATIC_PODS = ("kube-apiserver.yaml", "etcd.yaml")  # the API server first: it stops using etcd
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _settings(overrides: dict | None) -> dict:
    settings = dict(DEFAULTS)
    settings.update({k: v for k, v in (overrides or {}).items() if v not in (None, "")})
    for key in ("pki_dir", "data_dir", "manifests_dir", "bin_dir"):
        if not posixpath.isabs(str(settings[key])):
            raise InputError(f"backup_etcd.{key} is {settings[key]!r}", "give an absolute path")
    return settings


def snapshot_save_argv(snapshot: str, overrides: dict | None = None) -> list[str]:
    """`etcdctl snapshot save` against the node's local member, as kubeadm's health check client."""
    s = _settings(overrides)
    pki = s["pki_dir"]
    return [
        posixpath.join(s["bin_dir"], "etcdctl"),
        f"--endpoints={s['endpoint']}",
        f"--cacert={pki}/ca.crt",
        f"--cert={pki}/healthcheck-client.crt",
        f"--key={pki}/healthcheck-client.key",
        "snapshot",
        "save",
        snapshot,
    ]


def snapshot_status_argv(snapshot: str, overrides: dict | None = None) -> list[str]:
    """`etcdutl snapshot status`: the snapshot is whole (hash, revision, keys) before it leaves the node."""
    s = _settings(overrides)
    return [posixpath.join(s["bin_dir"], "etcdutl"), "snapshot", "status", snapshot, "--write-out=json"]


def members(control_plane: list[str], addresses: dict[str, str]) -> list[dict]:
    """The etcd members: each control-plane host's name and peer URL (its address in the inventory)."""
    if not control_plane:
        raise InputError("k8s_control_plane has no host", "add the control-plane nodes to k8s_control_plane")
    result = []
    for host in control_plane:
        name = host.split(".")[0]
        address = addresses.get(host)
        if not address:
            raise InputError(
                f"{host}: no address", "set ansible_host (or k8s_node_ip) for the control-plane node"
            )
        if not _NAME.match(name):
            raise InputError(f"{host}: {name!r} is not a valid etcd member name", "use a DNS-style host name")
        host_part = f"[{address}]" if ":" in address else address
        result.append({"host": host, "name": name, "peer_url": f"https://{host_part}:{ETCD_PEER_PORT}"})
    return result


def restore_steps(
    snapshot: str, member: dict, all_members: list[dict], set_id: str, overrides: dict | None = None
) -> list[dict]:
    """The restore on one member, in order: each step `{what, argv}`.

    Every member restores the same snapshot with the same initial cluster and token, so they form
    one new cluster; the old data folder is kept (`<data_dir>.before-<set id>`) for a way back.
    """
    s = _settings(overrides)
    data, manifests = s["data_dir"], s["manifests_dir"]
    held = f"{manifests}.held-by-restore-{set_id}"
    fresh = f"{data}.restore-{set_id}"
    initial_cluster = ",".join(f"{m['name']}={m['peer_url']}" for m in all_members)
    steps = [{"what": "make the folder the static pods' manifests wait in", "argv": ["mkdir", "-p", held]}]
    steps += [
        {"what": f"stop {pod.split('.')[0]} (kubelet removes a static pod whose manifest goes)",
         "argv": ["mv", f"{manifests}/{pod}", f"{held}/{pod}"]}
        for pod in STATIC_PODS
    ]  # fmt: skip
    steps += [
        {
            "what": "restore the snapshot into a new data folder, as this member of a new cluster",
            "argv": [
                posixpath.join(s["bin_dir"], "etcdutl"),
                "snapshot",
                "restore",
                snapshot,
                f"--name={member['name']}",
                f"--data-dir={fresh}",
                f"--initial-cluster={initial_cluster}",
                f"--initial-cluster-token=clusterforge-restore-{set_id}",
                f"--initial-advertise-peer-urls={member['peer_url']}",
            ],
        },
        {"what": "keep the old data folder", "argv": ["mv", data, f"{data}.before-{set_id}"]},
        {"what": "put the restored data in place", "argv": ["mv", fresh, data]},
    ]
    steps += [
        {"what": f"start {pod.split('.')[0]} again", "argv": ["mv", f"{held}/{pod}", f"{manifests}/{pod}"]}
        for pod in reversed(STATIC_PODS)
    ]
    steps.append({"what": "remove the empty holding folder", "argv": ["rmdir", held]})
    return steps
