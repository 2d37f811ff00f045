"""Ceph rules shared by the ceph role's modules and filters, and by the ceph_client role.

Stdlib only, Python 3.8-safe (runs on the nodes):
- monitor addresses and the `mon_host` string (`cf_ceph_mon_host`, `cf_ceph_mon_addresses`);
- cephx key format (what `ceph-authtool --gen-print-key` prints);
- caps normalisation and comparison of `ceph auth get` output (keyring text or `-f json`);
- device inspection: is a device empty, an OSD of this cluster, another cluster's OSD, or in use.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import os
import re
import struct

from .inputs import InputError

MON_ADDRESS_VARIABLES = ("ceph_mon_address", "fabric_storage_address", "ansible_host")
MSGR2_PORT = 3300
MSGR1_PORT = 6789
CAP_TYPES = ("mon", "mgr", "osd", "mds")

# --------------------------------------------------------------------------- monitors


def _present(value) -> bool:
    return value is not None and str(value).strip() != ""


def mon_address(hostvars: dict) -> str:
    """The address a monitor listens on: ceph_mon_address, else fabric_storage_address, else ansible_host."""
    if not isinstance(hostvars, dict) and not hasattr(hostvars, "get"):
        raise InputError(
            f"a monitor's host variables must be a mapping, got {type(hostvars).__name__}",
            "pass groups['ceph_mon'] | map('extract', hostvars) | list",
        )
    name = str(hostvars.get("inventory_hostname") or "(unnamed host)")
    for variable in MON_ADDRESS_VARIABLES:
        value = hostvars.get(variable)
        if _present(value):
            address = str(value).strip()
            if address.startswith("[") and address.endswith("]"):
                address = address[1:-1]
            if "/" in address:
                raise InputError(
                    f"{variable} of monitor {name} is {address!r}: an address, not a network",
                    f"set {variable} to the monitor's IP address without the prefix length",
                )
            return address
    raise InputError(
        f"monitor {name} has no address: none of {', '.join(MON_ADDRESS_VARIABLES)} is set",
        f"set ceph_mon_address (or fabric_storage_address / ansible_host) for {name}",
    )


def _bracket(address: str) -> str:
    try:
        if isinstance(ipaddress.ip_address(address), ipaddress.IPv6Address):
            return f"[{address}]"
    except ValueError:
        pass  # a host name: used as is
    return address


def mon_addresses(monitors) -> list:
    """[{name, address}] for the monitors' host variables, in the order given; duplicates are errors."""
    if monitors is None:
        monitors = []
    if isinstance(monitors, dict) or not hasattr(monitors, "__iter__"):
        raise InputError(
            "the monitors must be a list of host variable mappings",
            "pass groups['ceph_mon'] | map('extract', hostvars) | list",
        )
    result = []
    seen = {}
    for hv in monitors:
        address = mon_address(hv)
        name = str(hv.get("inventory_hostname") or "")
        if not name:
            raise InputError(
                "a monitor's host variables carry no inventory_hostname",
                "pass the hostvars dicts themselves (map('extract', hostvars))",
            )
        if address in seen:
            raise InputError(
                f"monitors {seen[address]} and {name} have the same address {address}",
                "give each monitor its own ceph_mon_address",
            )
        seen[address] = name
        result.append({"name": name, "address": address})
    if not result:
        raise InputError("no monitors: the group ceph_mon is empty", "put at least one host in ceph_mon")
    return result


def mon_addrvec(address: str) -> str:
    """One monitor's address vector: `[v2:IP:3300,v1:IP:6789]` (IPv6 in brackets)."""
    addr = _bracket(address)
    return f"[v2:{addr}:{MSGR2_PORT},v1:{addr}:{MSGR1_PORT}]"


def mon_host(monitors) -> str:
    """`[v2:IP:3300,v1:IP:6789],...` for ceph.conf's mon_host."""
    return ",".join(mon_addrvec(mon["address"]) for mon in mon_addresses(monitors))


def monmaptool_add_args(monitors) -> list:
    """`--addv NAME ADDRVEC` for each monitor, for `monmaptool --create`."""
    args = []
    for mon in mon_addresses(monitors):
        args.extend(["--addv", mon["name"], mon_addrvec(mon["address"])])
    return args


# --------------------------------------------------------------------------- cephx keys

CEPHX_KEY_TYPE_AES = 1
CEPHX_SECRET_LEN = 16
_KEY_HEADER = struct.Struct("<hiih")  # type, created secs, created nsecs, secret length


def check_cephx_key(value, variable: str) -> str:
    """The key stripped, or an InputError naming the variable: base64 of ceph-authtool's 28 bytes."""
    fix = f"set {variable} to the output of `ceph-authtool --gen-print-key` (kept in Vault)"
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{variable} is empty or not a string", fix)
    key = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", key):
        raise InputError(f"{variable} is not base64 (a cephx key is 40 base64 characters)", fix)
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{variable} is not valid base64 (wrong length or padding)", fix) from None
    if len(raw) != _KEY_HEADER.size + CEPHX_SECRET_LEN:
        raise InputError(
            f"{variable} decodes to {len(raw)} bytes, a cephx key has {_KEY_HEADER.size + CEPHX_SECRET_LEN}",
            fix,
        )
    key_type, _secs, _nsecs, length = _KEY_HEADER.unpack(raw[: _KEY_HEADER.size])
    if key_type != CEPHX_KEY_TYPE_AES or length != CEPHX_SECRET_LEN:
        raise InputError(f"{variable} is not a cephx AES key (type {key_type}, secret length {length})", fix)
    return key


def make_cephx_key(secs: int, nsecs: int, secret: bytes) -> str:
    """A key in ceph-authtool's format (tests and the lab's key generation)."""
    if len(secret) != CEPHX_SECRET_LEN:
        raise ValueError("a cephx secret is 16 bytes")
    return base64.b64encode(
        _KEY_HEADER.pack(CEPHX_KEY_TYPE_AES, secs, nsecs, CEPHX_SECRET_LEN) + secret
    ).decode()


# --------------------------------------------------------------------------- entities, caps


def check_entity(name: str, variable: str = "name") -> str:
    """An entity name `type.id` (client.fsuser, mgr.host, osd.3, mon.)."""
    if not isinstance(name, str) or not re.fullmatch(r"(client|mgr|mds|osd|mon)\.[A-Za-z0-9_.:@-]*", name):
        raise InputError(
            f"{variable} {name!r} is not a Ceph entity name (type.id)",
            f"set {variable} to e.g. client.fsuser",
        )
    if name != "mon." and name.endswith("."):
        raise InputError(
            f"{variable} {name!r} has no id after the type", f"set {variable} to e.g. client.fsuser"
        )
    return name


def normalise_cap(value) -> str:
    """One cap string as Ceph compares it for us: whitespace collapsed, none around ',' or ';'."""
    text = " ".join(str(value).split())
    text = re.sub(r"\s*([,;])\s*", r"\1", text)
    return text


def normalise_caps(caps, variable: str = "caps") -> dict:
    """{type: cap} with empty entries dropped; unknown types are errors naming the variable."""
    if caps in (None, ""):
        return {}
    if not isinstance(caps, dict):
        raise InputError(
            f"{variable} must be a mapping of mon/mgr/osd/mds to a cap string",
            f"write {variable} as {{mon: 'allow r', osd: 'allow rw pool=x'}}",
        )
    result = {}
    for kind, cap in caps.items():
        kind = str(kind).strip()
        if kind not in CAP_TYPES:
            raise InputError(
                f"{variable} has an unknown cap type {kind!r}",
                f"use only {', '.join(CAP_TYPES)} as keys of {variable}",
            )
        if cap is None or str(cap).strip() == "":
            continue
        result[kind] = normalise_cap(cap)
    return result


_SECTION = re.compile(r"^\s*\[(?P<name>[^\]]+)\]\s*$")
_SETTING = re.compile(r"^\s*(?P<key>[A-Za-z_ ]+?)\s*=\s*(?P<value>.*?)\s*$")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def parse_keyring(text: str) -> dict:
    """{entity: {key, caps}} from keyring text (`ceph auth get`, ceph-authtool, a keyring file)."""
    entities: dict = {}
    current = None
    for line in (text or "").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        section = _SECTION.match(line)
        if section:
            current = section.group("name").strip()
            entities[current] = {"key": None, "caps": {}}
            continue
        setting = _SETTING.match(line)
        if not setting or current is None:
            continue  # "exported keyring for client.x" and other chatter
        key = " ".join(setting.group("key").split())
        value = _unquote(setting.group("value"))
        if key == "key":
            entities[current]["key"] = value
        elif key.startswith("caps "):
            kind = key[5:].strip()
            entities[current]["caps"][kind] = normalise_cap(value)
    return entities


def parse_auth_get(text: str, entity: str) -> dict | None:
    """The entity's {key, caps} from `ceph auth get` (keyring text or `-f json`), None when absent."""
    stripped = (text or "").strip()
    if not stripped:
        return None
    try:
        data = json.loads(stripped)  # `-f json`; a keyring's "[client.x]" is not JSON
    except ValueError:
        data = None
    if isinstance(data, (list, dict)):
        items = data if isinstance(data, list) else data.get("auth_dump", [data])
        for item in items:
            if isinstance(item, dict) and item.get("entity") == entity:
                caps = {str(k): normalise_cap(v) for k, v in (item.get("caps") or {}).items() if v}
                return {"key": item.get("key"), "caps": caps}
        return None
    found = parse_keyring(stripped).get(entity)
    if found is None:
        return None
    found["caps"] = {k: v for k, v in found["caps"].items() if v}
    return found


def compare_auth(current: dict | None, key: str, caps: dict) -> list:
    """What differs between the cluster's entity and the wanted key/caps (secret-free wording)."""
    if current is None:
        return ["entity missing"]
    differences = []
    if current.get("key") != key:
        differences.append("key differs")
    have = current.get("caps") or {}
    for kind in sorted(set(have) | set(caps)):
        if have.get(kind) != caps.get(kind):
            differences.append(f"caps {kind}: {have.get(kind)!r} -> {caps.get(kind)!r}")
    return differences


def render_keyring(entity: str, key: str, caps: dict | None = None) -> str:
    """Keyring text as ceph-authtool writes it (caps sorted: stable for read-compare-write)."""
    lines = [f"[{entity}]", f"\tkey = {key}"]
    for kind in sorted(caps or {}):
        lines.append(f'\tcaps {kind} = "{caps[kind]}"')
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- OSD devices

DEVICE_STATES = ("empty", "osd", "foreign_osd", "in_use")


def sysfs_block_name(
    rdev_major: int, rdev_minor: int, sysfs_class_block: str = "/sys/class/block"
) -> str | None:
    """The kernel name of a device by major:minor (podman hides /sys/dev/block, not /sys/class/block)."""

    wanted = f"{rdev_major}:{rdev_minor}"
    try:
        names = sorted(os.listdir(sysfs_class_block))
    except OSError:
        return None
    for name in names:
        try:
            with open(os.path.join(sysfs_class_block, name, "dev")) as handle:
                if handle.read().strip() == wanted:
                    return name
        except OSError:
            continue
    return None


def sysfs_partitions_and_holders(name: str, sysfs_class_block: str = "/sys/class/block") -> tuple:
    """([partition names], [holder names]) of a disk, holders of its partitions included."""

    base = os.path.join(sysfs_class_block, name)
    partitions = []
    holders = []
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return [], []
    for entry in entries:
        if os.path.isfile(os.path.join(base, entry, "partition")):
            partitions.append(entry)
    for owner in [base] + [os.path.join(base, p) for p in partitions]:
        try:
            holders.extend(sorted(os.listdir(os.path.join(owner, "holders"))))
        except OSError:
            continue
    return partitions, holders


def parse_blkid_export(text: str) -> dict:
    """KEY=value lines of `blkid -p -o export DEV` (empty output: nothing found)."""
    result = {}
    for line in (text or "").splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            result[key.strip()] = value.strip()
    return result


def _unescape_mount(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts_of(mounts_text: str, paths) -> list:
    """['SOURCE on TARGET'] for /proc/self/mounts lines whose source is one of the paths."""
    wanted = set(paths)
    found = []
    for line in (mounts_text or "").splitlines():
        fields = line.split()
        if len(fields) >= 2 and _unescape_mount(fields[0]) in wanted:
            found.append(f"{_unescape_mount(fields[0])} mounted on {_unescape_mount(fields[1])}")
    return found


def pvs_of(pvs_text: str, paths) -> list:
    """LVM PVs among the paths from `pvs --noheadings -o pv_name,vg_name` (VG may be empty)."""
    wanted = set(paths)
    found = []
    for line in (pvs_text or "").splitlines():
        fields = line.split()
        if fields and fields[0] in wanted:
            vg = fields[1] if len(fields) > 1 else ""
            found.append(f"LVM physical volume {fields[0]}" + (f" of volume group {vg}" if vg else ""))
    return found


def parse_bluestore_label(text: str) -> dict | None:
    """The first label of `ceph-bluestore-tool show-label --dev DEV` JSON, without osd_key; None if none."""
    stripped = (text or "").strip()
    if not stripped:
        return None
    start = stripped.find("{")
    if start < 0:
        return None
    try:
        data = json.loads(stripped[start:])
    except ValueError:
        return None
    if not isinstance(data, dict) or not data:
        return None
    label = next(iter(data.values()))
    if not isinstance(label, dict):
        return None
    return {k: v for k, v in label.items() if k != "osd_key"}


def _lvm_osds(lvm_list_json: str, paths) -> list:
    """[(osd_id, osd_fsid, cluster_fsid)] of `ceph-volume lvm list --format json` on these devices."""
    try:
        data = json.loads(lvm_list_json or "{}")
    except ValueError:
        return []
    wanted = set(paths)
    found = []
    for osd_id, volumes in data.items() if isinstance(data, dict) else []:
        for volume in volumes or []:
            if not isinstance(volume, dict):
                continue
            devices = set(volume.get("devices") or [])
            if (devices & wanted) and volume.get("type", "block") == "block":
                tags = volume.get("tags") or {}
                found.append((str(osd_id), tags.get("ceph.osd_fsid"), tags.get("ceph.cluster_fsid")))
    return found


def inspect_device(
    device: str,
    fsid: str,
    paths=None,
    blkid_text: str = "",
    partitions=None,
    holders=None,
    mounts_text: str = "",
    pvs_text: str = "",
    label_text: str = "",
    lvm_list_json: str = "",
) -> dict:
    """{state, osd_id, osd_uuid, ceph_fsid, evidence}: what is on a device (never its osd_key).

    `paths` are every name of the device (the given path, its real path, /dev/<kernel name>), used to
    match mounts and PVs; `partitions`/`holders` come from sysfs.
    """
    names = set(paths or []) | {device}
    result = {"state": "empty", "osd_id": None, "osd_uuid": None, "ceph_fsid": None, "evidence": []}
    evidence = result["evidence"]
    wanted_fsid = (fsid or "").lower()

    label = parse_bluestore_label(label_text)
    if label is not None:
        result["ceph_fsid"] = label.get("ceph_fsid")
        result["osd_uuid"] = label.get("osd_uuid")
        whoami = label.get("whoami")
        evidence.append(
            f"BlueStore label: cluster {label.get('ceph_fsid')}, osd {whoami}, "
            f"osd_uuid {label.get('osd_uuid')}"
        )
        if str(label.get("ceph_fsid", "")).lower() != wanted_fsid:
            result["state"] = "foreign_osd"
            result["osd_id"] = int(whoami) if str(whoami or "").isdigit() else None
            return result
        if not str(whoami or "").isdigit() or label.get("mkfs_done") != "yes":
            evidence.append(
                "the BlueStore mkfs of this cluster did not finish (no whoami or mkfs_done != yes)"
            )
            result["state"] = "in_use"
            return result
        result["state"] = "osd"
        result["osd_id"] = int(whoami)
        return result

    lvm = _lvm_osds(lvm_list_json, names)
    for osd_id, osd_fsid, cluster_fsid in lvm:
        evidence.append(f"ceph-volume LVM OSD {osd_id} (osd_fsid {osd_fsid}) of cluster {cluster_fsid}")
        result.update(
            osd_uuid=osd_fsid, ceph_fsid=cluster_fsid, osd_id=int(osd_id) if osd_id.isdigit() else None
        )
        result["state"] = "osd" if str(cluster_fsid or "").lower() == wanted_fsid else "foreign_osd"
        return result

    blkid = parse_blkid_export(blkid_text)
    for key in ("PTTYPE", "TYPE"):
        if blkid.get(key):
            what = "partition table" if key == "PTTYPE" else "signature"
            extra = f" label {blkid['LABEL']}" if key == "TYPE" and blkid.get("LABEL") else ""
            evidence.append(f"blkid: {what} {blkid[key]}{extra}")
    for part in partitions or []:
        evidence.append(f"partition {part}")
    for holder in holders or []:
        evidence.append(f"held by {holder} (device mapper: LVM, crypt or multipath)")
    evidence.extend(mounts_of(mounts_text, names | {f"/dev/{p}" for p in partitions or []}))
    evidence.extend(pvs_of(pvs_text, names | {f"/dev/{p}" for p in partitions or []}))
    if evidence:
        result["state"] = "in_use"
    return result


# --------------------------------------------------------------------------- ceph.conf


def conf_key(key) -> str:
    """Ceph treats `osd pool default size` and `osd_pool_default_size` alike: one spelling (underscores)."""
    return "_".join(str(key).replace("-", "_").split()).replace(" ", "_")


def conf_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def merge_conf(base, overrides, variable: str = "ceph_conf_overrides") -> list:
    """[(section, [(key, value)])]: the role's settings with the overrides' last word, keys normalised.

    None values in base are omitted (an unset option); an override of None removes the key.
    """
    if overrides in (None, ""):
        overrides = {}
    if not isinstance(overrides, dict) or any(
        not isinstance(v, dict) for v in overrides.values() if v is not None
    ):
        raise InputError(
            f"{variable} must be a mapping of section to a mapping of option to value",
            f"write {variable} as {{global: {{osd_max_backfills: 2}}}}",
        )
    sections: dict = {}
    for source in (base or {}, overrides):
        for section, options in source.items():
            target = sections.setdefault(str(section), {})
            for key, value in (options or {}).items():
                name = conf_key(key)
                target.pop(name, None)
                if value is not None:
                    target[name] = conf_value(value)
    return [(section, list(options.items())) for section, options in sections.items() if options]


def clients_problems(clients, variable: str = "ceph_clients") -> list:
    """Secret-free sentences for what is wrong in ceph_clients ([{name, key, caps}])."""
    if clients in (None, ""):
        return []
    if not isinstance(clients, list):
        return [f"{variable} must be a list of {{name, key, caps}} (fix: write it as a YAML list)"]
    problems = []
    seen = set()
    for index, client in enumerate(clients):
        where = f"{variable}[{index}]"
        if not isinstance(client, dict):
            problems.append(f"{where} must be a mapping {{name, key, caps}}")
            continue
        name = str(client.get("name") or "")
        if name.startswith("client."):
            problems.append(f"{where}.name {name!r}: give the name without 'client.' (fix: {name[7:]})")
            continue
        try:
            check_entity(f"client.{name}", f"{where}.name")
            if name in seen:
                raise InputError(f"{where}.name {name!r} is listed twice", "keep one entry per client")
            seen.add(name)
            check_cephx_key(client.get("key"), f"{where}.key (client {name})")
            normalise_caps(client.get("caps"), f"{where}.caps (client {name})")
        except InputError as err:
            problems.append(str(err))
    return problems
