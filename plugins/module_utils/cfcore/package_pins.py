"""Packages pinned at one version: what a repository offers, what it lacks, what is not yet held.

One implementation, used by the action plugin plugins/action/pinned_packages.py (the NVIDIA
stack roles install, refuse and hold their packages in one task with it), the filters
nvidia_stack_available_versions / nvidia_stack_unavailable and the unit tests
(tests/unit/nvidia_stack/test_package_pins.py).

Stdlib only.
"""

from __future__ import annotations

import fnmatch
import re


def available_versions(listing) -> dict[str, list[str]]:
    """Package name -> versions, from `apt-cache madison P...` or `dnf list --showduplicates P...`.

    madison:  " libnccl2 | 2.26.2-1+cuda12.8 | http://host/repo  Packages"
    dnf:      "libnccl.x86_64      2.26.2-1+cuda12.8      cuda-rhel9-x86_64"
    Headers ("Available Packages", "Last metadata expiration check: ...") are skipped.
    """
    found: dict[str, list[str]] = {}
    for line in str(listing or "").splitlines():
        if "|" in line:
            cells = [cell.strip() for cell in line.split("|")]
            if len(cells) < 3 or not cells[0] or not cells[1]:
                continue
            name, version = cells[0], cells[1]
        else:
            cells = line.split()
            if len(cells) != 3 or "." not in cells[0] or not cells[1][:1].isdigit():
                continue
            name, version = cells[0].rsplit(".", 1)[0], cells[1]
        versions_of = found.setdefault(name, [])
        if version not in versions_of:
            versions_of.append(version)
    return found


def _without_epoch(version: str) -> str:
    return version.split(":", 1)[1] if re.match(r"[0-9]+:", version) else version


def _matches(version: str, pattern: str) -> bool:
    compare = version if ":" in str(pattern) else _without_epoch(version)
    return fnmatch.fnmatchcase(compare, str(pattern))


def newest_offered(listing, wanted) -> dict[str, str]:
    """Package name -> the last (in sort order) listed version that matches its wanted pattern.

    A name whose pattern matches nothing is left out: unavailable() names it.
    """
    found = available_versions(listing)
    chosen = {}
    for name, pattern in wanted.items():
        matching = sorted(v for v in found.get(name, []) if _matches(v, pattern))
        if matching:
            chosen[name] = matching[-1]
    return chosen


def install_specs(chosen, manager: str) -> list[str]:
    """`name=version` for apt (epoch kept), `name-version` for dnf (without the epoch)."""
    if manager == "apt":
        return [f"{name}={version}" for name, version in chosen.items()]
    return [f"{name}-{_without_epoch(version)}" for name, version in chosen.items()]


def unavailable(listing, wanted, repository: str = "the CUDA repository") -> list[str]:
    """What of `wanted` ({package: version or fnmatch pattern}) the listing does not offer, one line each.

    An empty list: everything wanted is there. A pattern without an epoch matches versions with one.
    """
    if not isinstance(wanted, dict):
        raise TypeError(f"wanted must be a dict of package: version, got {wanted!r}")
    found = available_versions(listing)
    missing = []
    for name, pattern in wanted.items():
        offered = found.get(name, [])
        if not any(_matches(v, pattern) for v in offered):
            offers = ", ".join(offered) or "no version at all"
            missing.append(f"{name} {pattern} is not in {repository} (it offers: {offers})")
    return missing


def not_held(selections, names) -> list[str]:
    """Of `names`, those dpkg does not hold, from `dpkg-query -W -f='${Package} ${Status}\\n' NAMES`.

    The first word of the status is the selection ("hold ok installed"); a package dpkg does not
    know is not held either.
    """
    held = set()
    for line in str(selections or "").splitlines():
        cells = line.split()
        if len(cells) >= 2 and cells[1] == "hold":
            held.add(cells[0].split(":", 1)[0])
    return [name for name in names if name not in held]
