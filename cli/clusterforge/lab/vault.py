"""A lab's storage identity and secrets: generated once, kept in its state, given to Ansible as Vault.

  <state>/storage.json     {"ceph_fsid": UUID}: the Ceph cluster's identity (not a secret)
  <state>/vault-password   the lab's vault password (mode 0600)
  <state>/vault.yml        the secrets as inline `!vault` values encrypted with it (mode 0600);
                           the inventory's group_vars/all/vault.yml is a copy of it

A re-run (`lab up` on a running lab, `lab inventory`) reads them back, so the
cluster the nodes already run keeps its fsid and keys; a secret this code
learns to plan later is added without touching the others. Encryption is
Ansible's own (VaultLib/VaultSecret, in this process): no secret ever appears
on a command line or in the output. Playbook runs of the lab get the password
file as ANSIBLE_VAULT_PASSWORD_FILE (`vault_env`).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import string
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from cfcore.ceph import CEPHX_SECRET_LEN, make_cephx_key

from clusterforge.errors import EnvironmentNotReady

PASSWORD_FILE = "vault-password"
VAULT_FILE = "vault.yml"
STORAGE_FILE = "storage.json"
VAULT_ID = "default"
_ALNUM = string.ascii_letters + string.digits
_UPPER_ALNUM = string.ascii_uppercase + string.digits


def cephx_key(now: float | None = None) -> str:
    """A cephx secret as `ceph-authtool --gen-print-key` prints it (cfcore.ceph's format)."""
    secs = int(time.time() if now is None else now)
    return make_cephx_key(secs, 0, secrets.token_bytes(CEPHX_SECRET_LEN))


def _token(alphabet: str, length: int) -> Callable[[], str]:
    return lambda: "".join(secrets.choice(alphabet) for _ in range(length))


MUNGE_KEY_BYTES = 48  # docs/design.md: slurm_munge_key is base64 of at least 32 random bytes


def munge_key() -> str:
    """Slurm's munge key as the slurm role takes it (slurm_munge_key): base64 of random bytes."""
    return base64.b64encode(secrets.token_bytes(MUNGE_KEY_BYTES)).decode()


# Every secret of the lab's storage plan and schedulers (sitevars.storage_vars and
# sitevars.scheduler_vars reference them): name -> generator.
SECRETS: dict[str, Callable[[], str]] = {
    "vault_ceph_mon_secret": cephx_key,
    "vault_ceph_admin_secret": cephx_key,
    "vault_ceph_fsuser_key": cephx_key,
    # An S3 access key as RGW makes them (20 upper-case letters and digits), a 40-character secret.
    "vault_rgw_juicefs_access_key": _token(_UPPER_ALNUM, 20),
    "vault_rgw_juicefs_secret_key": _token(_ALNUM, 40),
    "vault_rgw_backup_access_key": _token(_UPPER_ALNUM, 20),
    "vault_rgw_backup_secret_key": _token(_ALNUM, 40),
    # Encrypts the secret items of the lab's backup sets (role backup).
    "vault_backup_encryption_key": _token(_ALNUM, 48),
    # Letters and digits only: the password also sits in redis:// URLs and Redis's config file.
    "vault_juicefs_meta_password": _token(_ALNUM, 32),
    "vault_slurm_munge_key": munge_key,
}

VAULT_HEADER = (
    "# The lab's secrets (clusterforge/lab/vault.py), generated once per lab, encrypted with the\n"
    "# lab's vault password file: ANSIBLE_VAULT_PASSWORD_FILE={password_file}\n"
    "# (`clusterforge lab inventory` prints it). Referenced by group_vars/all/storage.yml\n"
    "# and group_vars/all/scheduler.yml.\n"
)


@dataclass(frozen=True)
class LabStorage:
    """What the inventory needs of a lab's storage state."""

    fsid: str
    password_file: Path
    vault_text: str  # the vault.yml to write into the inventory


class _VaultLoader(yaml.SafeLoader):
    """Reads `!vault` values as their ciphertext (plain strings)."""


_VaultLoader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))


def _vault_lib(password: bytes):
    from ansible.parsing.vault import VaultLib, VaultSecret

    return VaultLib([(VAULT_ID, VaultSecret(password))])


def _write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only, replacing any previous one atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)  # O_CREAT's mode is masked by the umask; an old tmp file kept its own
    tmp.replace(path)


def render_vault(values: Mapping[str, str], password: bytes, password_file: Path) -> str:
    """The YAML text of `values`, each an inline `!vault` value encrypted with `password`."""
    vault = _vault_lib(password)
    lines = [VAULT_HEADER.format(password_file=password_file), "---\n"]
    for name, value in values.items():
        envelope = vault.encrypt(value).decode().strip()
        lines.append(f"{name}: !vault |\n" + "".join(f"  {line}\n" for line in envelope.splitlines()))
    return "".join(lines)


def read_vault(path: Path, password: bytes) -> dict[str, str]:
    """The decrypted values of a vault.yml written by render_vault."""
    from ansible.errors import AnsibleError

    try:
        data = yaml.load(path.read_text(), Loader=_VaultLoader) or {}  # a SafeLoader that reads !vault
    except (OSError, yaml.YAMLError) as err:
        raise EnvironmentNotReady(
            f"{path} is unreadable: {err}",
            "remove the lab (clusterforge lab down) and bring it up again",
        ) from None
    vault = _vault_lib(password)
    values = {}
    for name, ciphertext in data.items():
        try:
            values[name] = vault.decrypt(ciphertext).decode()
        except AnsibleError:
            raise EnvironmentNotReady(
                f"{path}: {name} does not decrypt with the lab's password file {path.parent / PASSWORD_FILE}",
                "the two files belong together: remove the lab (clusterforge lab down) and bring it up again",
            ) from None
    return values


def password_file(state_dir: Path) -> Path:
    return state_dir / PASSWORD_FILE


def password_note(path: Path) -> str:
    """The line that tells the user how Ansible gets at the lab's secrets."""
    return f"vault password file: {path}\n  playbooks need: export ANSIBLE_VAULT_PASSWORD_FILE={path}"


def vault_env(env: Mapping[str, str], state_dir: Path) -> dict[str, str]:
    """`env` with the lab's vault password file for Ansible (when the lab has one)."""
    result = dict(env)
    path = password_file(state_dir)
    if path.is_file():
        result["ANSIBLE_VAULT_PASSWORD_FILE"] = str(path)
    return result


def ensure_storage(state_dir: Path) -> LabStorage:
    """The lab's fsid and secrets: read from its state, generating what is missing (once)."""
    state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    pw_path, vault_path, storage_path = (
        state_dir / PASSWORD_FILE,
        state_dir / VAULT_FILE,
        state_dir / STORAGE_FILE,
    )
    if not pw_path.is_file():
        if vault_path.is_file():
            raise EnvironmentNotReady(
                f"{vault_path} exists but its password file {pw_path} is gone: its secrets cannot be read",
                "remove the lab (clusterforge lab down) and bring it up again",
            )
        _write_private(pw_path, secrets.token_urlsafe(32) + "\n")
    password = pw_path.read_bytes().strip()

    try:
        fsid = str(uuid.UUID(json.loads(storage_path.read_text())["ceph_fsid"]))
    except FileNotFoundError:
        fsid = str(uuid.uuid4())
        _write_private(storage_path, json.dumps({"ceph_fsid": fsid}, indent=2) + "\n")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise EnvironmentNotReady(
            f"{storage_path} is unreadable ({type(err).__name__}: {err})",
            "remove the lab (clusterforge lab down) and bring it up again",
        ) from None

    values = read_vault(vault_path, password) if vault_path.is_file() else {}
    missing = [name for name in SECRETS if name not in values]
    if missing:
        values.update({name: SECRETS[name]() for name in missing})
        _write_private(vault_path, render_vault(values, password, pw_path))
    return LabStorage(fsid, pw_path, vault_path.read_text())
