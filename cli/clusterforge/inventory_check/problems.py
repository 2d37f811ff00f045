"""Problems found in an inventory, and the report that collects them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

ERROR = "error"
WARNING = "warning"

# Hosts named in a merged problem's location before "+N more".
_HOSTS_SHOWN = 5


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the inventory: where, what, and how to fix it."""

    rule: str  # stable id, e.g. "sku.unknown", "bom.cuda_driver"
    message: str
    fix: str
    severity: str = ERROR
    file: str | None = None  # absolute path; rendered relative to the working directory
    line: int | None = None
    host: str | None = None
    variable: str | None = None
    hosts: tuple[str, ...] = ()  # every affected host when the same problem hits several
    source: str | None = None  # the vendor document a compatibility rule comes from

    @property
    def location(self) -> str:
        parts = []
        if self.file:
            parts.append(display_path(self.file) + (f":{self.line}" if self.line else ""))
        if self.host:
            parts.append(f"[host {self.host}]")
        elif self.hosts:
            shown = ", ".join(self.hosts[:_HOSTS_SHOWN])
            more = len(self.hosts) - _HOSTS_SHOWN
            parts.append(f"[hosts {shown}{f', +{more} more' if more > 0 else ''}]")
        if self.variable:
            parts.append(self.variable)
        return " ".join(parts) or "(inventory)"

    def sort_key(self) -> tuple:
        return (self.severity != ERROR, self.file or "", self.line or 0, self.host or "", self.variable or "")

    def as_dict(self) -> dict:
        return {
            "location": self.location,
            "severity": self.severity,
            "rule": self.rule,
            "host": self.host,
            "hosts": list(self.hosts) or ([self.host] if self.host else []),
            "file": display_path(self.file) if self.file else None,
            "line": self.line,
            "variable": self.variable,
            "message": self.message,
            "fix": self.fix,
            "source": self.source,
        }


def display_path(path: str) -> str:
    """Relative to the working directory when inside it, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass
class Report:
    """Problems of one inventory check, merged and sorted."""

    sources: list[str]
    problems: list[Problem] = field(default_factory=list)
    host_count: int = 0
    group_count: int = 0

    def add(self, problem: Problem) -> None:
        self.problems.append(problem)

    def extend(self, problems) -> None:
        self.problems.extend(problems)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == WARNING]

    @property
    def valid(self) -> bool:
        return not self.errors

    def finalize(self) -> None:
        """Merge the same problem seen on several hosts into one, then sort."""
        merged: dict[tuple, list[Problem]] = {}
        for problem in self.problems:
            key = (
                problem.rule,
                problem.severity,
                problem.file,
                problem.line,
                problem.variable,
                problem.message,
                problem.fix,
            )
            merged.setdefault(key, []).append(problem)
        result = []
        for group in merged.values():
            hosts = sorted({h for p in group for h in (p.hosts or ((p.host,) if p.host else ()))})
            if len(hosts) > 1:
                result.append(replace(group[0], host=None, hosts=tuple(hosts)))
            else:
                result.append(group[0])
        self.problems = sorted(result, key=Problem.sort_key)
