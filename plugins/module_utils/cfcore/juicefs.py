"""JuiceFS rules of role juicefs and module juicefs_volume: one implementation.

    default_meta_url(meta_url, meta_host_vars) -> "redis://<first juicefs_meta host>:<port>/1"
    plan_volumes(volumes, default_meta_url, default_meta_password) -> [volume, ...]
    plan_mounts(mounts, volumes) -> [mount, ...]
    compare(volume, setting) -> {"differences": [...], "mutable": [...], "immutable": [...]}
    format_argv(binary, volume) / config_argv(binary, volume, mutable) / secret_env(volume)
    mount_argv(binary, mount, volume) / systemd_command(argv)
    scrub(text, secrets) / scrub_setting(setting) / is_not_formatted(text)

A volume entry (`juicefs_volumes[i]`) is normalized with every format option that is not
set left as None: juicefs's own default applies at format time and nothing is compared.
`juicefs status` prints the settings as JuiceFS stores them (1.x, omitting zero values):
BlockSize in KiB, Capacity in bytes (`--capacity` takes GiB), `SecretKey` as "removed",
a `file` bucket with a trailing slash. Secrets reach juicefs only through its environment
(META_PASSWORD, ACCESS_KEY, SECRET_KEY: what juicefs 1.4 reads); `juicefs config` takes
new object-store keys only as flags, so a key change is refused here rather than put on a
command line that any local user can read in /proc.

Stdlib only, Python 3.8-safe: it runs on the nodes inside the module.
"""

from __future__ import annotations

import re

from .inputs import InputError

VAR = "juicefs_volumes"
MOUNTS_VAR = "juicefs_mounts"
GIB = 1024**3
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
META_SCHEMES = (
    "redis",
    "rediss",
    "unix",
    "tikv",
    "postgres",
    "mysql",
    "sqlite3",
    "badger",
    "etcd",
    "fdb",
)
COMPRESS = ("none", "lz4", "zstd")
REDIS_PORT = 6379
# Where the Redis of a juicefs_meta host listens (role juicefs_redis's default chain).
REDIS_ADDRESS_VARIABLES = (
    "juicefs_redis_bind_address",
    "fabric_storage_address",
    "ansible_host",
    "inventory_hostname",
)
FORMAT_KEYS = ("block_size", "compress", "trash_days", "capacity", "inodes", "hash_prefix", "shards")
# Settings `juicefs config` changes in place; the rest are fixed when the volume is formatted
# (the block size, compression, hash prefix and shards decide the object layout).
MUTABLE = ("storage", "bucket", "trash_days", "capacity", "inodes")
IMMUTABLE = ("name", "block_size", "compress", "hash_prefix", "shards")
WHY_IMMUTABLE = {
    "name": "the name is the prefix of every object of the volume",
    "block_size": "the block size is the size of the objects already written",
    "compress": "the compression is how the objects already written are encoded",
    "hash_prefix": "the hash prefix is part of the names of the objects already written",
    "shards": "the shards are the buckets the objects already written are spread over",
}
# format option -> (status Setting key, value as printed when JuiceFS omits it)
SETTING_KEYS = {
    "name": ("Name", ""),
    "storage": ("Storage", ""),
    "bucket": ("Bucket", ""),
    "access_key": ("AccessKey", ""),
    "block_size": ("BlockSize", 4096),
    "compress": ("Compression", "none"),
    "trash_days": ("TrashDays", 0),
    "capacity": ("Capacity", 0),
    "inodes": ("Inodes", 0),
    "hash_prefix": ("HashPrefix", False),
    "shards": ("Shards", 0),
}
SECRET_SETTING_KEYS = ("AccessKey", "SecretKey", "SessionToken", "EncryptKey", "SecretKeyEncrypted")
MASK = "********"
MOUNT_DEFAULTS = {
    "cache_dir": "/var/cache/juicefs",
    "cache_size_mib": 102400,
    "free_space_ratio": 0.1,
    "buffer_size_mib": 1024,
    "prefetch": 3,
    "open_cache_s": 0,
    "writeback": False,
    "max_uploads": 20,
    "options": [],
}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)
_NOT_FORMATTED = re.compile(r"(database is )?not formatted", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"^([a-z0-9+]+://[^/@:]*):([^/@]+)@", re.IGNORECASE)


def _err(where: str, what: str, fix: str) -> InputError:
    return InputError(f"{where} {what}", fix)


def _int(value, where: str, fix: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or value in (None, ""):
        raise _err(where, f"must be a whole number, got {value!r}", fix)
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _err(where, f"must be a whole number, got {value!r}", fix) from None
    if number < minimum:
        raise _err(where, f"must be {minimum} or more, got {number}", fix)
    return number


def _bool(value, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise _err(where, f"must be true or false, got {value!r}", "write true or false")


def block_size_kib(value, where: str) -> int:
    """A block size as juicefs takes it: KiB as a number, or with a unit ("4M", "1024K", "4MiB")."""
    fix = 'give the block size in KiB (4096) or with a unit ("4M"), between 64K and 16M'
    if isinstance(value, bool):
        raise _err(where, f"must be a size, got {value!r}", fix)
    match = _SIZE_RE.match(str(value))
    if not match:
        raise _err(where, f"must be a size, got {value!r}", fix)
    kib = int(match.group(1)) * {"": 1, "K": 1, "M": 1024, "G": 1024 * 1024}[match.group(2).upper()]
    if kib < 64 or kib > 16384:
        raise _err(where, f"is {kib} KiB, outside JuiceFS's 64 KiB to 16 MiB", fix)
    return kib


def _str(entry: dict, key: str, where: str, fix: str, required: bool = False) -> str:
    value = entry.get(key)
    if value in (None, ""):
        if required:
            raise _err(f"{where}.{key}", "is not set", fix)
        return ""
    if not isinstance(value, str):
        raise _err(f"{where}.{key}", f"must be a string, got {type(value).__name__}", fix)
    return value


def url_has_password(url: str) -> bool:
    return bool(_URL_PASSWORD.match(url or ""))


def _plan_format(raw, where: str) -> dict:
    if raw in (None, ""):
        raw = {}
    if not isinstance(raw, dict):
        raise _err(
            where, f"must be a mapping, got {type(raw).__name__}", f"write {{{', '.join(FORMAT_KEYS)}}}"
        )
    unknown = sorted(str(k) for k in raw if k not in FORMAT_KEYS)
    if unknown:
        raise _err(where, f"has unknown keys {unknown}", f"use only {', '.join(FORMAT_KEYS)}")
    fmt = dict.fromkeys(FORMAT_KEYS)
    if raw.get("block_size") is not None:
        fmt["block_size"] = block_size_kib(raw["block_size"], f"{where}.block_size")
    if raw.get("compress") is not None:
        compress = str(raw["compress"]).lower()
        if compress not in COMPRESS:
            raise _err(f"{where}.compress", f"is {raw['compress']!r}", f"use one of {', '.join(COMPRESS)}")
        fmt["compress"] = compress
    for key, fix in (
        ("trash_days", "days to keep removed files (0: no trash)"),
        ("capacity", "the hard quota in GiB (0: none)"),
        ("inodes", "the hard quota of inodes (0: none)"),
        ("shards", "the number of buckets to spread blocks over (0: one bucket)"),
    ):
        if raw.get(key) is not None:
            fmt[key] = _int(raw[key], f"{where}.{key}", f"set {key} to {fix}")
    if raw.get("hash_prefix") is not None:
        fmt["hash_prefix"] = _bool(raw["hash_prefix"], f"{where}.hash_prefix")
    return fmt


def default_meta_url(meta_url, meta_host_vars) -> str:
    """The meta URL of a volume without its own: the site's `juicefs_meta_url`, else the Redis
    of the first juicefs_meta host (role juicefs_redis: its bind address, `juicefs_redis_port`),
    database 1; "" when there is neither. One implementation for role juicefs, validation
    (playbooks/validate.yml) and the CLI: a filter sees one host's variables, so the meta
    host's are passed in."""
    if isinstance(meta_url, str) and meta_url.strip():
        return meta_url.strip()
    if not meta_host_vars:
        return ""
    address = next(
        (str(meta_host_vars.get(n)).strip() for n in REDIS_ADDRESS_VARIABLES if meta_host_vars.get(n)), ""
    )
    if not address:
        return ""
    port = meta_host_vars.get("juicefs_redis_port") or REDIS_PORT
    return f"redis://{address}:{port}/1"


def plan_volume(entry, index: int = 0, default_meta_url: str = "", default_meta_password: str = "") -> dict:
    """One `juicefs_volumes` entry, checked and with its defaults filled in."""
    where = f"{VAR}[{index}]"
    if not isinstance(entry, dict):
        raise _err(
            where, f"must be a mapping, got {type(entry).__name__}", "write {name, storage, bucket, ...}"
        )
    name = _str(entry, "name", where, "set name: the volume name, e.g. jfs", required=True)
    if not NAME_RE.match(name):
        raise _err(
            f"{where}.name",
            f"is {name!r}",
            "use 3 to 63 lowercase letters, digits and hyphens, starting and ending with a letter or digit",
        )
    meta_url = _str(entry, "meta_url", where, "set meta_url, e.g. redis://meta1:6379/1") or default_meta_url
    if not meta_url:
        raise _err(
            f"{where}.meta_url",
            "is not set and there is no juicefs_meta host to default to",
            "set meta_url (e.g. redis://meta1:6379/1) or put a host in group juicefs_meta",
        )
    scheme = meta_url.split("://", 1)[0].lower() if "://" in meta_url else ""
    if scheme not in META_SCHEMES:
        raise _err(
            f"{where}.meta_url", f"is {scrub_url(meta_url)!r}", f"use a URL of {', '.join(META_SCHEMES)}"
        )
    if url_has_password(meta_url):
        raise _err(
            f"{where}.meta_url",
            "holds a password (it would show in `ps` and the unit file)",
            "remove it from the URL and set meta_password (from Vault) instead",
        )
    meta_password = entry.get("meta_password")
    if meta_password in (None, ""):
        meta_password = default_meta_password or ""
    if not isinstance(meta_password, str):
        raise _err(f"{where}.meta_password", "must be a string", "quote it (from Vault)")
    storage = _str(
        entry, "storage", where, "set storage as juicefs format --storage takes it: s3, file, ...", True
    )
    bucket = _str(entry, "bucket", where, "set bucket: the bucket URL (a directory for storage file)", True)
    if url_has_password(bucket):
        raise _err(
            f"{where}.bucket",
            "holds credentials (they would be stored and printed by juicefs status)",
            "remove them from the URL and set access_key and secret_key (from Vault) instead",
        )
    access_key = _str(entry, "access_key", where, "set access_key from Vault")
    secret_key = _str(entry, "secret_key", where, "set secret_key from Vault")
    if bool(access_key) != bool(secret_key):
        missing = "secret_key" if access_key else "access_key"
        raise _err(
            f"{where}.{missing}",
            "is not set but its pair is",
            "set both access_key and secret_key, or neither",
        )
    region = _str(entry, "region", where, 'set region, e.g. "default" for Ceph RGW')
    unknown = sorted(
        str(k)
        for k in entry
        if k
        not in (
            "name",
            "meta_url",
            "meta_password",
            "storage",
            "bucket",
            "access_key",
            "secret_key",
            "region",
            "format",
        )
    )
    if unknown:
        raise _err(
            where,
            f"has unknown keys {unknown}",
            "use name, meta_url, meta_password, storage, bucket, access_key, secret_key, region, format",
        )
    return {
        "name": name,
        "meta_url": meta_url,
        "meta_password": meta_password,
        "storage": storage,
        "bucket": bucket,
        "access_key": access_key,
        "secret_key": secret_key,
        "region": region,
        "format": _plan_format(entry.get("format"), f"{where}.format"),
    }


def plan_volumes(volumes, default_meta_url: str = "", default_meta_password: str = "") -> list:
    """Every `juicefs_volumes` entry checked; names unique."""
    if volumes in (None, ""):
        return []
    if not isinstance(volumes, list):
        raise _err(
            VAR,
            f"must be a list, got {type(volumes).__name__}",
            "write a list of {name, storage, bucket, ...}",
        )
    planned = []
    seen = {}
    for index, entry in enumerate(volumes):
        volume = plan_volume(entry, index, default_meta_url, default_meta_password)
        if volume["name"] in seen:
            raise _err(
                f"{VAR}[{index}].name",
                f"{volume['name']!r} is also {VAR}[{seen[volume['name']]}]",
                "give each volume its own name",
            )
        seen[volume["name"]] = index
        planned.append(volume)
    return planned


def _number(value, where: str, fix: str, minimum: float = 0.0, maximum: float | None = None) -> float:
    if isinstance(value, bool):
        raise _err(where, f"must be a number, got {value!r}", fix)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _err(where, f"must be a number, got {value!r}", fix) from None
    if number < minimum or (maximum is not None and number > maximum):
        raise _err(where, f"is {value!r}", fix)
    return number


def plan_mount(entry, index: int, volume_names) -> dict:
    """One `juicefs_mounts` entry of a host, with design.md's defaults."""
    where = f"{MOUNTS_VAR}[{index}]"
    if not isinstance(entry, dict):
        raise _err(where, f"must be a mapping, got {type(entry).__name__}", "write {volume, path, ...}")
    unknown = sorted(str(k) for k in entry if k not in ("volume", "path") and k not in MOUNT_DEFAULTS)
    if unknown:
        raise _err(where, f"has unknown keys {unknown}", f"use volume, path, {', '.join(MOUNT_DEFAULTS)}")
    volume = _str(entry, "volume", where, f"set volume to the name of one of {VAR}", required=True)
    if volume not in volume_names:
        raise _err(
            f"{where}.volume",
            f"{volume!r} is not in {VAR} ({', '.join(volume_names) or 'none defined'})",
            f"add the volume to {VAR} (group_vars/all/storage.yml) or fix the name",
        )
    path = _str(entry, "path", where, "set path: the mount point, e.g. /mnt/jfs", required=True)
    if not path.startswith("/") or path.rstrip("/") == "" or any(c.isspace() for c in path):
        raise _err(f"{where}.path", f"is {path!r}", "use an absolute path without spaces other than /")
    mount = {"volume": volume, "path": path.rstrip("/")}
    for key, default in MOUNT_DEFAULTS.items():
        value = entry.get(key, default)
        mount[key] = default if value is None else value
    cache_dir = mount["cache_dir"]
    if not isinstance(cache_dir, str) or not cache_dir.startswith("/") or any(c.isspace() for c in cache_dir):
        raise _err(f"{where}.cache_dir", f"is {cache_dir!r}", "use an absolute path without spaces")
    for key, minimum in (
        ("cache_size_mib", 0),
        ("buffer_size_mib", 32),
        ("prefetch", 0),
        ("open_cache_s", 0),
    ):
        mount[key] = _int(
            mount[key], f"{where}.{key}", f"set {key} to a whole number of {minimum} or more", minimum
        )
    mount["max_uploads"] = _int(
        mount["max_uploads"], f"{where}.max_uploads", "set max_uploads to 1 or more", 1
    )
    mount["free_space_ratio"] = _number(
        mount["free_space_ratio"],
        f"{where}.free_space_ratio",
        "set free_space_ratio between 0 and 0.9",
        0.0,
        0.9,
    )
    mount["writeback"] = _bool(mount["writeback"], f"{where}.writeback")
    options = mount["options"]
    if not isinstance(options, list) or not all(isinstance(o, str) and o for o in options):
        raise _err(
            f"{where}.options", f"is {options!r}", 'write a list of juicefs mount flags, e.g. ["--writeback"]'
        )
    mount["options"] = list(options)
    return mount


def plan_mounts(mounts, volumes) -> list:
    """A host's `juicefs_mounts`: each volume once (its unit is juicefs-<volume>), each path once."""
    if mounts in (None, ""):
        return []
    if not isinstance(mounts, list):
        raise _err(
            MOUNTS_VAR, f"must be a list, got {type(mounts).__name__}", "write a list of {volume, path}"
        )
    names = [v["name"] for v in volumes]
    planned = []
    by_volume = {}
    by_path = {}
    for index, entry in enumerate(mounts):
        mount = plan_mount(entry, index, names)
        for key, seen in (("volume", by_volume), ("path", by_path)):
            if mount[key] in seen:
                raise _err(
                    f"{MOUNTS_VAR}[{index}].{key}",
                    f"{mount[key]!r} is also {MOUNTS_VAR}[{seen[mount[key]]}]",
                    "mount each volume once per host (one service juicefs-<volume>), at its own path",
                )
            seen[mount[key]] = index
        planned.append(mount)
    return planned


def _current(setting: dict, key: str):
    status_key, absent = SETTING_KEYS[key]
    value = setting.get(status_key)
    return absent if value in (None, "") else value


def _desired(volume: dict, key: str):
    if key in ("name", "storage", "bucket"):
        return volume[key]
    return volume["format"][key]


def _same(key: str, desired, current, storage: str) -> bool:
    if key == "bucket":
        return str(desired).rstrip("/") == str(current).rstrip("/")
    if key == "capacity":
        return int(desired) * GIB == int(current)
    if key == "hash_prefix":
        return bool(desired) == bool(current)
    if key in ("block_size", "trash_days", "inodes", "shards"):
        return int(desired) == int(current)
    return (
        str(desired).lower() == str(current).lower() if key in ("storage", "compress") else desired == current
    )


def _shown(key: str, value, as_status: bool):
    if key == "capacity":
        return f"{value} bytes ({int(value) / GIB:g} GiB)" if as_status else f"{value} GiB"
    if key == "block_size":
        return f"{value} KiB"
    return value


def compare(volume: dict, setting: dict) -> dict:
    """The desired volume against `juicefs status`'s Setting: what differs, and if config can change it."""
    differences = []
    for key in IMMUTABLE + MUTABLE:
        desired = _desired(volume, key)
        if desired is None:
            continue
        current = _current(setting, key)
        if _same(key, desired, current, volume["storage"]):
            continue
        differences.append(
            {
                "setting": key,
                "status_key": SETTING_KEYS[key][0],
                "desired": _shown(key, desired, False),
                "current": _shown(key, current, True),
                "mutable": key in MUTABLE,
            }
        )
    access = volume.get("access_key") or ""
    if access != (setting.get("AccessKey") or ""):
        # Values of keys are never shown; the difference is refused (see the module docstring).
        differences.append(
            {
                "setting": "access_key",
                "status_key": "AccessKey",
                "desired": MASK if access else "",
                "current": MASK if setting.get("AccessKey") else "",
                "mutable": False,
            }
        )
    return {
        "differences": differences,
        "mutable": [d for d in differences if d["mutable"]],
        "immutable": [d for d in differences if not d["mutable"]],
    }


def refusal(volume: dict, immutable: list) -> str:
    """Why the module stops: each setting, both values and why it cannot change."""
    parts = []
    for diff in immutable:
        if diff["setting"] == "access_key":
            parts.append(
                "access_key/secret_key differ from the volume's AccessKey: juicefs config takes new "
                "object-store keys only on its command line, readable by any local user in /proc, so "
                "ClusterForge does not change them (fix: run `juicefs config META-URL --access-key ... "
                "--secret-key ...` once by hand from a root shell, or set the volume's current keys)"
            )
            continue
        parts.append(
            f"{diff['setting']} is {diff['current']!r} in the volume (status {diff['status_key']}) but "
            f"{VAR} wants {diff['desired']!r}: {WHY_IMMUTABLE[diff['setting']]}, so it is fixed at "
            f"format time and ClusterForge never re-formats (fix: set {VAR}[].format.{diff['setting']} "
            f"back to {diff['current']!r}, or create a new volume under another name and copy the data)"
            if diff["setting"] != "name"
            else f"the meta URL holds volume {diff['current']!r}, not {diff['desired']!r}: "
            f"{WHY_IMMUTABLE['name']} (fix: point meta_url at the volume's own metadata, or rename the "
            "entry to the existing volume)"
        )
    return f"juicefs volume {volume['name']}: " + "; ".join(parts)


def secret_env(volume: dict) -> dict:
    """The environment that carries the secrets (juicefs 1.4 reads these names)."""
    env = {}
    if volume.get("meta_password"):
        env["META_PASSWORD"] = volume["meta_password"]
    if volume.get("access_key"):
        env["ACCESS_KEY"] = volume["access_key"]
    if volume.get("secret_key"):
        env["SECRET_KEY"] = volume["secret_key"]
    if volume.get("region"):
        env["AWS_REGION"] = volume["region"]
    return env


def format_argv(binary: str, volume: dict) -> list:
    """`juicefs format` of a new volume; keys and password come from secret_env()."""
    fmt = volume["format"]
    argv = [binary, "format", "--storage", volume["storage"], "--bucket", volume["bucket"]]
    if fmt["block_size"] is not None:
        argv += ["--block-size", str(fmt["block_size"])]
    if fmt["compress"] is not None:
        argv += ["--compress", fmt["compress"]]
    for key in ("trash_days", "capacity", "inodes", "shards"):
        if fmt[key] is not None:
            argv += ["--" + key.replace("_", "-"), str(fmt[key])]
    if fmt["hash_prefix"]:
        argv.append("--hash-prefix")
    return [*argv, "--no-update", volume["meta_url"], volume["name"]]


def config_argv(binary: str, volume: dict, mutable: list) -> list:
    """`juicefs config --yes` setting the mutable differences. Never --force: that skips juicefs's
    check that the new storage/bucket is reachable with the volume's keys, which would accept a
    volume that no client can mount."""
    argv = [binary, "config", "--yes"]
    for diff in mutable:
        key = diff["setting"]
        value = _desired(volume, key)
        argv += ["--" + key.replace("_", "-"), str(value)]
    return [*argv, volume["meta_url"]]


def is_not_formatted(text: str) -> bool:
    """`juicefs status` on a meta engine that holds no volume (1.x: "database is not formatted")."""
    return bool(_NOT_FORMATTED.search(text or ""))


def scrub_url(url: str) -> str:
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{MASK}@", url or "")


def scrub(text: str, secrets) -> str:
    """Text with every secret (and any password inside a URL) replaced by asterisks."""
    text = text or ""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return re.sub(
        r"([a-z0-9+]+://[^/@:\s]*):([^/@\s]+)@", lambda m: f"{m.group(1)}:{MASK}@", text, flags=re.I
    )


def scrub_setting(setting: dict) -> dict:
    """The Setting as printed, with keys and tokens masked (SecretKey already reads "removed")."""
    clean = {}
    for key, value in (setting or {}).items():
        clean[key] = MASK if key in SECRET_SETTING_KEYS and value not in (None, "", "removed") else value
    return clean


def mount_argv(binary: str, mount: dict, volume: dict, common_options=()) -> list:
    """`juicefs mount` in the foreground (systemd supervises it) from a planned mount."""
    argv = [
        binary,
        "mount",
        "--cache-dir",
        mount["cache_dir"],
        "--cache-size",
        str(mount["cache_size_mib"]),
        "--free-space-ratio",
        f"{float(mount['free_space_ratio']):g}",
        "--buffer-size",
        str(mount["buffer_size_mib"]),
        "--prefetch",
        str(mount["prefetch"]),
        "--open-cache",
        f"{mount['open_cache_s']}s",
        "--max-uploads",
        str(mount["max_uploads"]),
    ]
    if mount["writeback"]:
        argv.append("--writeback")
    argv += list(common_options) + list(mount["options"])
    return [*argv, volume["meta_url"], mount["path"]]


def systemd_command(argv) -> str:
    """A command line for ExecStart=: words with spaces or quotes double-quoted, % doubled."""
    words = []
    for word in argv:
        word = str(word).replace("%", "%%")
        if not word or re.search(r'[\s"\'\\;$]', word):
            word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
        words.append(word)
    return " ".join(words)
