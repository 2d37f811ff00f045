#!/usr/bin/python3
"""Resolve package specs to the .deb files of their dependency closure (runs inside a build node).

`clusterforge bundle build` runs this script with the build node's own
python3 and python3-apt, after `apt-get update` against the OS repositories
and the vendor repositories of the needs: apt's own cache decides which
versions exist and what they depend on, so nothing is guessed on the
controller. Reads JSON `{"specs": ["slurmd", "nvlsm=2025.10.2-*", ...], "arch": "amd64"}`
on stdin, writes JSON `{"packages": {spec: [key...]}, "files": {key: {uri, sha256,
size, package, version}}, "unknown": {spec: why}}` on stdout.

The closure is deliberately generous: every alternative of an or-dependency
and every provider of a virtual package is taken, and Pre-Depends and Depends
are followed whatever is installed on the build node; Recommends are not (the
roles install with install_recommends false). A larger bundle costs disk; a
missing package costs an air-gapped site a failed bring-up.
"""

from __future__ import annotations

import fnmatch
import json
import sys

import apt_pkg

FOLLOWED = ("Depends", "PreDepends")


def main() -> int:
    request = json.load(sys.stdin)
    arch = request.get("arch") or "amd64"
    apt_pkg.init()
    cache = apt_pkg.Cache(None)
    depcache = apt_pkg.DepCache(cache)
    records = apt_pkg.PackageRecords(cache)
    sources = apt_pkg.SourceList()
    sources.read_main_list()
    resolver = Resolver(cache, depcache, records, sources, arch)
    packages: dict[str, list[str]] = {}
    unknown: dict[str, str] = {}
    for spec in request["specs"]:
        try:
            packages[spec] = sorted(resolver.closure(spec))
        except LookupError as err:
            unknown[spec] = str(err)
    json.dump({"packages": packages, "files": resolver.files, "unknown": unknown}, sys.stdout)
    return 0


class Resolver:
    def __init__(self, cache, depcache, records, sources, arch: str) -> None:
        self.cache, self.depcache, self.records, self.sources, self.arch = (
            cache,
            depcache,
            records,
            sources,
            arch,
        )
        self.files: dict[str, dict] = {}
        self._closures: dict[tuple[str, str], set[str]] = {}

    def closure(self, spec: str) -> set[str]:
        name, pattern = split_spec(spec)
        version = self.pick(name, pattern)
        keys: set[str] = set()
        self._walk(version, keys, set())
        return keys

    def pick(self, name: str, pattern: str | None):
        pkg = self._package(name)
        if pkg is None:
            raise LookupError(f"no package {name} in the build node's repositories")
        if pattern is None:
            candidate = self.depcache.get_candidate_ver(pkg)
            if candidate is None:
                providers = [p for p in pkg.provides_list]
                if providers:  # a virtual package asked for by name: its first provider
                    return providers[0][2]
                raise LookupError(f"{name} has no installable version (a virtual package nothing provides?)")
            return candidate
        matching = [v for v in pkg.version_list if fnmatch.fnmatchcase(v.ver_str, pattern) and v.downloadable]
        if not matching:
            known = ", ".join(sorted(v.ver_str for v in pkg.version_list)) or "none"
            raise LookupError(f"no version of {name} matches {pattern} (available: {known})")
        return max(matching, key=_version_key)

    def _package(self, name: str):
        for key in ((name, self.arch), (name, "all"), name):
            try:
                return self.cache[key]
            except KeyError:
                continue
        return None

    def _walk(self, version, keys: set[str], seen: set[tuple[str, str]]) -> None:
        ident = (version.parent_pkg.get_fullname(), version.ver_str)
        if ident in seen:
            return
        seen.add(ident)
        key = self._record(version)
        if key:
            keys.add(key)
        for kind in FOLLOWED:
            for group in version.depends_list.get(kind, []):
                for dep in group:  # every alternative of an or-group
                    for target in self._targets(dep):
                        self._walk(target, keys, seen)

    def _targets(self, dep) -> list:
        """Versions that can satisfy `dep`: the best real one, or each provider's."""
        found = [v for v in dep.all_targets() if v.downloadable or v.parent_pkg.current_ver == v]
        real = [v for v in found if v.parent_pkg.name == dep.target_pkg.name]
        if real:
            return [max(real, key=_version_key)]
        by_package: dict[str, object] = {}
        for v in found:  # providers of a virtual package: the best version of each
            best = by_package.get(v.parent_pkg.name)
            if best is None or apt_pkg.version_compare(v.ver_str, best.ver_str) > 0:
                by_package[v.parent_pkg.name] = v
        return list(by_package.values())

    def _record(self, version) -> str | None:
        """The version's download (uri, sha256, size) under a stable key; None if not downloadable."""
        if not version.downloadable:
            return None
        for pkgfile, index in version.file_list:
            if not self.records.lookup((pkgfile, index)):
                continue
            found = self.sources.find_index(pkgfile)
            if found is None:
                continue
            filename = self.records.filename
            key = filename.rsplit("/", 1)[-1]
            sha256 = _sha256(self.records)
            self.files[key] = {
                "uri": found.archive_uri(filename),
                "sha256": sha256,
                "size": version.size,
                "package": version.parent_pkg.name,
                "version": version.ver_str,
                "arch": version.arch,
            }
            return key
        return None


def _sha256(records) -> str:
    hashes = records.hashes
    for entry in hashes.hashes if hasattr(hashes, "hashes") else hashes:
        text = str(entry)
        if text.lower().startswith("sha256:"):
            return text.split(":", 1)[1]
    return ""


def _version_key(version):
    return _VersionOrder(version.ver_str)


class _VersionOrder:
    def __init__(self, text: str) -> None:
        self.text = text

    def __lt__(self, other: _VersionOrder) -> bool:
        return apt_pkg.version_compare(self.text, other.text) < 0


def split_spec(spec: str) -> tuple[str, str | None]:
    """`name`, `name=1.2-*` (apt's glob), `name:amd64` -> (name, version pattern or None)."""
    name, _, pattern = spec.strip().partition("=")
    name = name.split(":", 1)[0].strip()
    return name, (pattern.strip() or None)


if __name__ == "__main__":
    sys.exit(main())
