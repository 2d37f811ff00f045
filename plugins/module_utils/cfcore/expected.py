"""What a node is expected to be: the `node_validate` parameters of one host.

Two steps, one module, so the playbook, the CLI and the node can never
disagree:

- `build_expected(host, hostvars)` (controller: lookup `validation_expected` of role
  node_expectation, the CLI's pre-flight and `--from-capture`; both read INPUT_VARIABLES)
  turns a host's inventory variables into

      {"node_sku": "hgx-h100-8gpu", "sku": {...catalog spec...}, "bom": {...},
       "required_mounts": ["/mnt/jfs"], "hccn_devices": [{id, address, netmask, ...}],
       "sysfs_root": "/", "skip_checks": ["gpu.mig"], "os_release": "debian 12",
       "root_min_free_gib": 10, "ipoib_interfaces": [{name, address, ...}],
       "roce": {interfaces, trust, pfc_priority, ...} or None, "peermem_required": None,
       "only_checks": None,
       "juicefs_mounts": [{path, meta_url, env_file, volume}], "ceph_health": {cluster, client,
       conf, keyring} or None, "metrics_textfile_dir": "/var/lib/prometheus/node-exporter" or None}

  `required_mounts` items are paths (presence only) or {path, fstype, writable}: the
  host's own `juicefs_mounts` and `ceph_cephfs_mounts` are added as {path, fstype,
  writable: true} whatever `validate_mount_groups` says (they are that host's plan).
  `metrics_textfile_dir` is the host's `monitoring_textfile_dir` (None when unset): where
  node_validate and the health check write the validation metrics (cfcore.validation_metrics).

  checking each input once (docs/design.md names the variables).
- `normalize(expected)` (node: `node_validate`, and `build_expected` itself)
  checks that shape again, as a module must check its parameters, and fills
  the defaults the checks read.

Bad input raises InvalidExpectation naming the host, the variable and the fix.
"""

from __future__ import annotations

import fnmatch
import json

from . import catalog
from .checks import CHECK_IDS
from .inputs import InputError, is_template
from .ipoib import VARIABLE as IPOIB_VARIABLE
from .ipoib import normalize_interfaces
from .roce import normalize_plan as normalize_roce_plan
from .versions import format_problem

BOM_VARIABLES = (
    "nvidia_driver_version",
    "cuda_version",
    "nccl_version",
    "dcgm_version",
    "ascend_driver_version",
    "cann_version",
    "ppu_sdk_version",
)
# Required mounts are for the nodes that run jobs: a site lists them once in
# group_vars/all and control or storage nodes are not held to them.
# `validate_mount_groups` changes the groups.
DEFAULT_MOUNT_GROUPS = ("gpu_nvidia", "npu_ascend", "npu_ppu", "slurm_workers", "k8s_workers")
# Below this much free space on / a node fails node.root_fs (twice this: warn).
DEFAULT_ROOT_MIN_FREE_GIB = 10.0
# The RoCE plan's parts: the inventory's fabric_roce_<key> variables (docs/design.md, High-speed
# fabric), passed raw as node_validate's `roce` and normalized once by cfcore.roce.normalize_plan.
ROCE_KEYS = ("interfaces", "trust", "pfc_priority", "dscp", "cnp_dscp", "ecn", "mtu", "gid_index")
# Every variable build_expected reads (besides `group_names`).
INPUT_VARIABLES = (
    "node_sku",
    catalog.OVERRIDE_VARIABLE,
    *BOM_VARIABLES,
    "os_release",
    "validate_required_mounts",
    "validate_mount_groups",
    "validate_root_min_free_gib",
    "hccn_devices",
    "sysfs_root",
    "validate_sysfs_root",
    "validate_skip_checks",
    "validate_only_checks",
    "validate_peermem_required",
    IPOIB_VARIABLE,
    *(f"fabric_roce_{key}" for key in ROCE_KEYS),
    # Shared storage (docs/design.md, Shared storage): the host's mounts and the site's volumes.
    "juicefs_mounts",
    "juicefs_volumes",
    # A volume's meta URL where it has none: juicefs_meta_url, else the first juicefs_meta host's
    # Redis (cfcore.juicefs.default_meta_url; lookup validation_expected and the CLI compute it,
    # since it needs another host's variables).
    "juicefs_default_meta_url",
    "ceph_cephfs_mounts",
    "ceph_cluster_name",
    "ceph_client_keyrings",
    "validate_ceph_health_client",
    # node_exporter's textfile directory (docs/design.md, Monitoring): validation metrics go there.
    "monitoring_textfile_dir",
)
JUICEFS_DEFAULT_META_URL = "juicefs_default_meta_url"
# The inputs that are the host's own variables (the rest is computed from other hosts').
HOST_VARIABLES = tuple(name for name in INPUT_VARIABLES if name != JUICEFS_DEFAULT_META_URL)
# Read only where the host mounts JuiceFS: site-wide values that are often templated or vaulted.
JUICEFS_SITE_VARIABLES = (
    "juicefs_volumes",
    "juicefs_default_meta_url",
)
JUICEFS_FSTYPE = "fuse.juicefs"
CEPH_FUSE_FSTYPE = "fuse.ceph-fuse"  # what ceph-fuse shows in /proc/mounts
CEPH_KERNEL_FSTYPE = "ceph"
MOUNT_FSTYPES = (JUICEFS_FSTYPE, CEPH_FUSE_FSTYPE, CEPH_KERNEL_FSTYPE)
SKU_FIX = (
    "fix the SKU in plugins/module_utils/cfcore/data/skus.yml or the inventory's clusterforge_sku_catalog"
)
HCCN_FIX = (
    "fix the host's hccn_devices in the inventory "
    "(one {id, address, netmask, gateway, netdetect} per NPU NIC)"
)


class InvalidExpectation(InputError):
    """The expected state of a node is malformed; the message says where and how to fix it."""


def inputs_of(hostvars: dict) -> dict:
    """The variables build_expected reads, from all of a host's variables.

    The JuiceFS site variables only where the host mounts JuiceFS, and of `juicefs_volumes`
    only each volume's name and meta_url: their keys and passwords are no input of validation.
    """
    return _storage_view({name: hostvars[name] for name in INPUT_VARIABLES if name in hostvars})


def with_run_skips(inputs: dict, skip_checks) -> dict:
    """The inputs with the run's skips added to the host's validate_skip_checks (a malformed
    one is left as it is, for build_expected to refuse with the variable's name)."""
    if not skip_checks:
        return inputs
    existing = inputs.get("validate_skip_checks")
    if existing is None:
        return {**inputs, "validate_skip_checks": list(skip_checks)}
    if isinstance(existing, list):
        added = [check for check in skip_checks if check not in existing]
        return {**inputs, "validate_skip_checks": [*existing, *added]}
    return inputs


def _storage_view(hostvars: dict) -> dict:
    """`hostvars` without the JuiceFS site variables where the host mounts no JuiceFS, and with
    only the name and meta_url of each volume (secrets stay out of validation)."""
    view = dict(hostvars)
    if not view.get("juicefs_mounts"):
        for name in JUICEFS_SITE_VARIABLES:
            view.pop(name, None)
    elif isinstance(view.get("juicefs_volumes"), list):
        view["juicefs_volumes"] = [_volume_view(v) for v in view["juicefs_volumes"]]
    return view


def _volume_view(volume):
    if not isinstance(volume, dict):
        return volume
    return {key: volume[key] for key in ("name", "meta_url") if key in volume}


class SkuResolver:
    """Looks SKUs up in the catalog; merges the catalog once per distinct override set."""

    def __init__(self) -> None:
        self._catalogs: dict = {}

    def spec(self, name: str, overrides) -> dict:
        key = json.dumps(overrides or {}, sort_keys=True, default=str)
        if key not in self._catalogs:
            self._catalogs[key] = catalog.load_catalog(overrides or None)
        known = self._catalogs[key]
        if name not in known:
            raise InputError(catalog.unknown_sku_message(name, known), catalog.unknown_sku_fix(known))
        return known[name]


# ---------------------------------------------------------------- controller ----


def build_expected(host: str, hostvars: dict, resolver: SkuResolver | None = None) -> dict:
    """The node_validate parameters (all but `level`) of `host`; errors name the host and variable."""
    hostvars = _storage_view(hostvars)
    templated = sorted(name for name in INPUT_VARIABLES if is_template(hostvars.get(name)))
    if templated:
        raise InvalidExpectation(
            f"host {host}: {', '.join(templated)} still hold Jinja templates",
            "let Ansible resolve them (the validate playbook does), or give plain values",
        )
    node_sku = hostvars.get("node_sku")
    if not isinstance(node_sku, str) or not node_sku.strip():
        raise InvalidExpectation(
            f"host {host}: variable node_sku is {'not set' if node_sku is None else repr(node_sku)}",
            "set node_sku to a SKU of the catalog (`clusterforge inventory skus` lists them) in the "
            "host's inventory entry or its group_vars",
        )
    overrides = hostvars.get(catalog.OVERRIDE_VARIABLE) or {}
    try:
        sku = (resolver or SkuResolver()).spec(node_sku, overrides)
    except InputError as err:
        raise InvalidExpectation(f"host {host}: variable node_sku: {err.message}", err.fix) from None
    expected = {
        "node_sku": node_sku,
        "sku": sku,
        "bom": _bom(host, hostvars),
        "required_mounts": _required_mounts(host, hostvars),
        "hccn_devices": hostvars.get("hccn_devices") or [],
        "sysfs_root": hostvars.get("validate_sysfs_root", hostvars.get("sysfs_root")) or "/",
        "skip_checks": _string_list(host, hostvars, "validate_skip_checks"),
        "os_release": hostvars.get("os_release"),
        "root_min_free_gib": hostvars.get("validate_root_min_free_gib", DEFAULT_ROOT_MIN_FREE_GIB),
        "ipoib_interfaces": hostvars.get(IPOIB_VARIABLE) or [],
        "roce": roce_values(hostvars),
        "peermem_required": hostvars.get("validate_peermem_required"),
        "only_checks": hostvars.get("validate_only_checks"),
        "juicefs_mounts": _juicefs_sessions(host, hostvars),
        "ceph_health": _ceph_health_plan(host, hostvars),
        "metrics_textfile_dir": hostvars.get("monitoring_textfile_dir"),
    }
    try:
        normalize(expected)
    except InvalidExpectation as err:
        raise InvalidExpectation(f"host {host}: {err.message}", err.fix) from None
    return expected


def roce_values(hostvars: dict):
    """node_validate's `roce`: the raw fabric_roce_* values; None where the host plans no RoCE interface."""
    if not hostvars.get("fabric_roce_interfaces"):
        return None
    values = {key: hostvars.get(f"fabric_roce_{key}") for key in ROCE_KEYS}
    return {key: value for key, value in values.items() if value is not None}


def _bom(host: str, hostvars: dict) -> dict:
    bom = {}
    for name in BOM_VARIABLES:
        value = hostvars.get(name)
        if value is None or value == "":
            continue
        problem = format_problem(name, value)
        if problem:
            raise InvalidExpectation(
                f"host {host}: variable {name} {problem}",
                f"set {name} in group_vars/all/versions.yml (or the --bom file) to the version string",
            )
        bom[name] = str(value)
    return bom


def _runs_jobs(host: str, hostvars: dict) -> bool:
    groups = hostvars.get("validate_mount_groups")
    groups = DEFAULT_MOUNT_GROUPS if groups is None else groups
    if not isinstance(groups, (list, tuple)):
        raise InvalidExpectation(
            f"host {host}: variable validate_mount_groups must be a list of group names, got {groups!r}",
            "e.g. validate_mount_groups: [gpu_nvidia, npu_ascend]",
        )
    member_of = hostvars.get("group_names")
    if member_of is None:  # no group information (a capture): the mounts apply
        return True
    return bool(set(member_of) & set(groups))


# ------------------------------------------------------------ shared storage ----

JUICEFS_MOUNTS_FIX = (
    "write juicefs_mounts as a list of {volume, path, ...}, e.g. [{volume: jfs, path: /mnt/jfs}]"
)
CEPHFS_MOUNTS_FIX = (
    "write ceph_cephfs_mounts as a list of {path, client, type: fuse|kernel, ...}, "
    "e.g. [{path: /mnt/cephfs, client: fsuser}]"
)


def _mount_list(host: str, hostvars: dict, name: str, fix: str) -> list:
    value = hostvars.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidExpectation(f"host {host}: variable {name} must be a list, got {value!r}", fix)
    for index, item in enumerate(value):
        path = item.get("path") if isinstance(item, dict) else None
        if not isinstance(path, str) or not path.startswith("/"):
            raise InvalidExpectation(
                f"host {host}: variable {name}[{index}] needs an absolute path, got {item!r}", fix
            )
    return value


def _required_mounts(host: str, hostvars: dict) -> list:
    """validate_required_mounts on the job groups, plus the host's own JuiceFS and CephFS mounts."""
    planned = _string_list(host, hostvars, "validate_required_mounts") if _runs_jobs(host, hostvars) else []
    mounts: list = list(planned)
    for item in _mount_list(host, hostvars, "juicefs_mounts", JUICEFS_MOUNTS_FIX):
        volume = item.get("volume")
        if not isinstance(volume, str) or not volume:
            raise InvalidExpectation(
                f"host {host}: variable juicefs_mounts entry {item['path']} names no volume",
                JUICEFS_MOUNTS_FIX,
            )
        mounts.append(
            {
                "path": item["path"],
                "fstype": JUICEFS_FSTYPE,
                "writable": True,
                "unit": f"juicefs-{volume}.service",
            }
        )
    for index, item in enumerate(_mount_list(host, hostvars, "ceph_cephfs_mounts", CEPHFS_MOUNTS_FIX)):
        kind = item.get("type") or "fuse"
        if kind not in ("fuse", "kernel"):
            raise InvalidExpectation(
                f"host {host}: variable ceph_cephfs_mounts[{index}].type must be fuse or kernel, "
                f"got {kind!r}",
                CEPHFS_MOUNTS_FIX,
            )
        fstype = CEPH_FUSE_FSTYPE if kind == "fuse" else CEPH_KERNEL_FSTYPE
        mounts.append({"path": item["path"], "fstype": fstype, "writable": True})
    # One entry per path: the storage plan's (with its type) wins over a plain path.
    by_path: dict = {}
    for item in mounts:
        path = (item if isinstance(item, str) else item["path"]).rstrip("/") or "/"
        if path not in by_path or not isinstance(item, str):
            by_path[path] = item
    return list(by_path.values())


def _juicefs_sessions(host: str, hostvars: dict) -> list:
    """One {path, meta_url, env_file, volume} per JuiceFS mount of the host (storage.juicefs_session)."""
    mounts = _mount_list(host, hostvars, "juicefs_mounts", JUICEFS_MOUNTS_FIX)
    if not mounts:
        return []
    volumes = hostvars.get("juicefs_volumes") or []
    if not isinstance(volumes, list):
        raise InvalidExpectation(
            f"host {host}: variable juicefs_volumes must be a list of {{name, meta_url, ...}}, "
            f"got {volumes!r}",
            "define the volumes once in group_vars/all/storage.yml",
        )
    by_name = {v.get("name"): v for v in volumes if isinstance(v, dict)}
    sessions = []
    for item in mounts:
        volume = item.get("volume")
        if volume not in by_name:
            raise InvalidExpectation(
                f"host {host}: juicefs_mounts entry {item['path']} names volume {volume!r}, "
                f"which juicefs_volumes does not define (it has: {', '.join(map(str, by_name)) or 'none'})",
                "add the volume to juicefs_volumes (group_vars/all/storage.yml) or fix the mount's volume",
            )
        sessions.append(
            {
                "path": item["path"],
                "meta_url": _meta_url(host, hostvars, by_name[volume]),
                "env_file": f"/etc/juicefs/{volume}.env",
                "volume": volume,
            }
        )
    return sessions


def _meta_url(host: str, hostvars: dict, volume: dict) -> str:
    """The volume's meta_url, else juicefs_default_meta_url (juicefs_meta_url, else the first
    juicefs_meta host's Redis)."""
    for value in (volume.get("meta_url"), hostvars.get("juicefs_default_meta_url")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    raise InvalidExpectation(
        f"host {host}: JuiceFS volume {volume.get('name')} has no meta_url, juicefs_meta_url is unset "
        "and the juicefs_meta group has no host",
        "set meta_url on the volume or juicefs_meta_url, or put the Redis host in the juicefs_meta group",
    )


def _ceph_health_plan(host: str, hostvars: dict):
    """{cluster, client, conf, keyring} of storage.ceph_health, or None (the host reads no cluster)."""
    client = hostvars.get("validate_ceph_health_client")
    if client is False or client == "":
        return None
    cluster = hostvars.get("ceph_cluster_name") or "ceph"
    if not isinstance(cluster, str) or not cluster.replace("-", "").replace("_", "").isalnum():
        raise InvalidExpectation(
            f"host {host}: variable ceph_cluster_name must be a plain name, got {cluster!r}",
            'leave it unset ("ceph") or give the cluster name',
        )
    if client is None:
        keyrings = hostvars.get("ceph_client_keyrings") or []
        if not isinstance(keyrings, list):
            raise InvalidExpectation(
                f"host {host}: variable ceph_client_keyrings must be a list of client names, "
                f"got {keyrings!r}",
                "e.g. ceph_client_keyrings: [fsuser]",
            )
        if "ceph_mon" in (hostvars.get("group_names") or []):
            client = "admin"
        elif keyrings:
            client = keyrings[0]
        else:
            return None
    if not isinstance(client, str) or not client.strip() or client.startswith("client."):
        raise InvalidExpectation(
            f"host {host}: variable validate_ceph_health_client must be a client name without "
            f"'client.', got {client!r}",
            "e.g. validate_ceph_health_client: admin (false: no storage.ceph_health on this host)",
        )
    client = client.strip()
    return {
        "cluster": cluster,
        "client": client,
        "conf": f"/etc/ceph/{cluster}.conf",
        "keyring": f"/etc/ceph/{cluster}.client.{client}.keyring",
    }


def _string_list(host: str, hostvars: dict, name: str) -> list:
    value = hostvars.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        example = "[/mnt/jfs]" if name.endswith("mounts") else "[gpu.mig]"
        raise InvalidExpectation(
            f"host {host}: variable {name} must be a list of strings, got {value!r}",
            f"write it as a YAML list, e.g. {name}: {example}",
        )
    return list(value)


# ---------------------------------------------------------------------- node ----


def normalize(expected: dict) -> dict:
    """The checked expectation with defaults filled in, as the checks read it."""
    if not isinstance(expected, dict):
        raise InvalidExpectation("expected must be a mapping with node_sku, sku, bom, ...")
    node_sku = expected.get("node_sku")
    if not isinstance(node_sku, str) or not node_sku.strip():
        raise InvalidExpectation("node_sku is missing", "set node_sku for the host in the inventory")
    sku = expected.get("sku")
    issues = catalog.validate_catalog({node_sku: sku})
    if issues:
        raise InvalidExpectation(
            f"the spec of SKU {node_sku} is invalid: "
            + "; ".join(f"{path}: {what}" for path, what in issues),
            SKU_FIX,
        )
    bom = expected.get("bom") or {}
    if not isinstance(bom, dict):
        raise InvalidExpectation(
            "bom must be a mapping of the version variables", "see group_vars/all/versions.yml"
        )
    mounts = _normal_mounts(expected.get("required_mounts") or [])
    skip = expected.get("skip_checks") or []
    unknown = [c for c in skip if c not in CHECK_IDS] if isinstance(skip, list) else [skip]
    if unknown:
        raise InvalidExpectation(
            f"validate_skip_checks names unknown check ids {', '.join(map(str, unknown))}",
            f"use ids of: {', '.join(CHECK_IDS)}",
        )
    sysfs_root = expected.get("sysfs_root") or "/"
    if not isinstance(sysfs_root, str) or not sysfs_root.startswith("/"):
        raise InvalidExpectation(
            f"sysfs_root must be an absolute path, got {sysfs_root!r}",
            "leave it unset (the node's /) unless the node's sysfs is mounted elsewhere",
        )
    accel = sku["accelerator"]
    try:
        ipoib = normalize_interfaces(expected.get("ipoib_interfaces"))
    except InputError as err:
        raise InvalidExpectation(err.message, err.fix) from None
    return {
        "node_sku": node_sku,
        "sku": sku,
        "accelerator": None
        if accel is None
        else {"kernel_module_flavour": "any", "mig_mode": "disabled", **accel},
        "hca": sku["hca"],
        "npu_nics": sku["npu_nics"],
        "bom": {k: str(v) for k, v in bom.items() if v is not None},
        "required_mounts": mounts,
        "hccn_devices": _hccn_devices(expected.get("hccn_devices")),
        "sysfs_root": sysfs_root,
        "skip_checks": list(skip),
        "os_release": _os_release(expected.get("os_release")),
        "root_min_free_gib": _root_min_free(expected.get("root_min_free_gib", DEFAULT_ROOT_MIN_FREE_GIB)),
        "ipoib_interfaces": ipoib,
        "roce": _roce(expected.get("roce")),
        "peermem_required": _peermem_required(expected.get("peermem_required"), accel, sku["hca"]),
        "only_checks": only_checks(expected.get("only_checks")),
        "juicefs_mounts": _normal_juicefs(expected.get("juicefs_mounts")),
        "ceph_health": _normal_ceph_health(expected.get("ceph_health")),
        "metrics_textfile_dir": _metrics_textfile_dir(expected.get("metrics_textfile_dir")),
    }


def _metrics_textfile_dir(value):
    """None (no metrics file), or the absolute path of node_exporter's textfile directory."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.startswith("/"):
        raise InvalidExpectation(
            f"monitoring_textfile_dir must be an absolute path or null, got {value!r}",
            "leave it unset (Debian's /var/lib/prometheus/node-exporter) or give node_exporter's "
            "--collector.textfile.directory",
        )
    return value.rstrip("/") or "/"


MOUNTS_FIX = (
    "list absolute mount points in group_vars/all/storage.yml, e.g. [/mnt/jfs], or "
    "{path, fstype, writable} items, e.g. {path: /mnt/jfs, fstype: fuse.juicefs, writable: true}"
)


def normalize_mounts(mounts) -> list:
    """Required mounts (paths or {path, fstype, writable, unit}) as [{path, fstype (or None), writable,
    unit (or None)}]: one rule for node.mounts and the expected-mount metrics (cfcore.validation_metrics)."""
    return _normal_mounts(mounts)


def _normal_mounts(mounts) -> list:
    """Required mounts as [{path, fstype (or None), writable, unit (or None)}]."""
    if not isinstance(mounts, list):
        raise InvalidExpectation(f"validate_required_mounts must be a list, got {mounts!r}", MOUNTS_FIX)
    out = []
    for item in mounts:
        if isinstance(item, str):
            item = {"path": item}
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("path"), str)
            or not item["path"].startswith("/")
        ):
            raise InvalidExpectation(
                f"validate_required_mounts must be a list of absolute paths or {{path, fstype, writable}}, "
                f"got {item!r}",
                MOUNTS_FIX,
            )
        unknown = sorted(set(item) - {"path", "fstype", "writable", "unit"})
        fstype = item.get("fstype")
        writable = item.get("writable", False)
        if unknown or (fstype is not None and not isinstance(fstype, str)) or not isinstance(writable, bool):
            raise InvalidExpectation(
                f"validate_required_mounts entry {item['path']}: "
                + (
                    f"unknown keys {', '.join(unknown)}"
                    if unknown
                    else f"bad fstype {fstype!r} or writable {writable!r}"
                ),
                MOUNTS_FIX,
            )
        out.append(
            {
                "path": item["path"].rstrip("/") or "/",
                "fstype": fstype or None,
                "writable": writable,
                "unit": item.get("unit") or None,
            }
        )
    return out


def _normal_juicefs(mounts) -> list:
    if mounts is None:
        return []
    fix = (
        "give juicefs_mounts as [{path, meta_url, env_file}] "
        "(lookup validation_expected builds it from the inventory)"
    )
    if not isinstance(mounts, list):
        raise InvalidExpectation(f"juicefs_mounts must be a list, got {mounts!r}", fix)
    out = []
    for index, item in enumerate(mounts):
        if not isinstance(item, dict):
            raise InvalidExpectation(f"juicefs_mounts[{index}] must be a mapping, got {item!r}", fix)
        path, meta_url, env_file = item.get("path"), item.get("meta_url"), item.get("env_file")
        if not isinstance(path, str) or not path.startswith("/"):
            raise InvalidExpectation(
                f"juicefs_mounts[{index}].path must be an absolute path, got {path!r}", fix
            )
        if not isinstance(meta_url, str) or "://" not in meta_url:
            raise InvalidExpectation(
                f"juicefs_mounts[{index}].meta_url must be a metadata engine URL, got {meta_url!r}", fix
            )
        if env_file is not None and (not isinstance(env_file, str) or not env_file.startswith("/")):
            raise InvalidExpectation(
                f"juicefs_mounts[{index}].env_file must be an absolute path, got {env_file!r}", fix
            )
        out.append(
            {
                "path": path.rstrip("/") or "/",
                "meta_url": meta_url,
                "env_file": env_file,
                "volume": item.get("volume"),
            }
        )
    return out


def _normal_ceph_health(plan):
    if plan is None or plan == {}:
        return None
    fix = "give ceph_health as {cluster, client, conf, keyring} or null (set validate_ceph_health_client)"
    if not isinstance(plan, dict):
        raise InvalidExpectation(f"ceph_health must be a mapping or null, got {plan!r}", fix)
    client = plan.get("client")
    if not isinstance(client, str) or not client:
        raise InvalidExpectation(f"ceph_health.client must be a client name, got {client!r}", fix)
    cluster = plan.get("cluster") or "ceph"
    return {
        "cluster": cluster,
        "client": client,
        "conf": plan.get("conf") or f"/etc/ceph/{cluster}.conf",
        "keyring": plan.get("keyring") or f"/etc/ceph/{cluster}.client.{client}.keyring",
    }


def _roce(values):
    """The RoCE plan normalized by cfcore.roce (one implementation), or None when nothing is planned."""
    if values is None or values == {}:
        return None
    if not isinstance(values, dict):
        raise InvalidExpectation(
            f"roce must be a mapping of the fabric_roce_* values or null, got {type(values).__name__}",
            "set fabric_roce_interfaces (and the other fabric_roce_* variables) in the inventory",
        )
    try:
        return normalize_roce_plan(values)
    except InputError as err:
        raise InvalidExpectation(err.message, err.fix) from None


def _peermem_required(value, accel, hca) -> bool:
    """Explicit, else: NVIDIA GPUs and compute HCAs on the node (GPUDirect RDMA)."""
    if value is None:
        return bool(accel and accel.get("vendor") == "nvidia" and hca)
    if not isinstance(value, bool):
        raise InvalidExpectation(
            f"validate_peermem_required must be true, false or unset, got {value!r}",
            "leave it unset (required on NVIDIA SKUs with compute HCAs) or write true/false",
        )
    return value


def only_checks(value):
    """None (every check), or the check ids named, in CHECK_IDS order; `area.*` names every id of an area."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(c, str) and c for c in value):
        raise InvalidExpectation(
            f"validate_only_checks must be a non-empty list of check ids or null, got {value!r}",
            "e.g. validate_only_checks: [ib.port_state, 'roce.*'], or leave it unset to run every check",
        )
    chosen = set()
    unknown = []
    for name in value:
        matches = [
            c for c in CHECK_IDS if c == name or (name.endswith(".*") and fnmatch.fnmatchcase(c, name))
        ]
        if not matches:
            unknown.append(name)
        chosen.update(matches)
    if unknown:
        raise InvalidExpectation(
            f"validate_only_checks names unknown check ids {', '.join(unknown)}",
            f"use ids (or 'area.*') of: {', '.join(CHECK_IDS)}",
        )
    return [c for c in CHECK_IDS if c in chosen]


def _hccn_devices(plan) -> list:
    if plan is None:
        return []
    if not isinstance(plan, list):
        raise InvalidExpectation(f"hccn_devices must be a list, got {type(plan).__name__}", HCCN_FIX)
    entries = []
    seen = set()
    for index, entry in enumerate(plan):
        if not isinstance(entry, dict):
            raise InvalidExpectation(f"hccn_devices[{index}] must be a mapping, got {entry!r}", HCCN_FIX)
        for key in ("id", "address", "netmask"):
            if entry.get(key) in (None, ""):
                raise InvalidExpectation(f"hccn_devices[{index}] lacks {key!r}", HCCN_FIX)
        device = entry["id"]
        if isinstance(device, bool) or not str(device).isascii() or not str(device).isdigit():
            raise InvalidExpectation(
                f"hccn_devices[{index}].id must be a device number, got {device!r}", HCCN_FIX
            )
        if int(device) in seen:
            raise InvalidExpectation(f"hccn_devices[{index}].id {device} appears twice", HCCN_FIX)
        seen.add(int(device))
        entries.append({**entry, "id": int(device)})
    return entries


def _os_release(plan):
    """ "debian 12" -> {"id": "debian", "version_id": "12", "text": "debian 12"}; None when unplanned."""
    if plan is None or plan == "":
        return None
    words = plan.split() if isinstance(plan, str) else []
    if len(words) != 2 or not all(word.isascii() for word in words):
        raise InvalidExpectation(
            f"os_release must be the OS ID and VERSION_ID of /etc/os-release, got {plan!r}",
            'e.g. os_release: "debian 12" or "ubuntu 22.04" or "rhel 9.4"',
        )
    return {"id": words[0].lower(), "version_id": words[1], "text": f"{words[0].lower()} {words[1]}"}


def _root_min_free(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        value = None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if not number >= 0:  # also rejects NaN
        raise InvalidExpectation(
            f"validate_root_min_free_gib must be a number of GiB, got {value!r}",
            "e.g. validate_root_min_free_gib: 10",
        )
    return number
