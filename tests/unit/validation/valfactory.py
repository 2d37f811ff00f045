"""Synthetic node results in the shape of docs/design.md, for the validation tests and the benchmark."""

from __future__ import annotations

from typing import Any


def check(check_id: str, status: str = "pass", message: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "id": check_id,
        "status": status,
        "message": message or f"{check_id} {status}",
        "evidence": extra.pop("evidence", None),
        "remedy": extra.pop("remedy", None),
        **extra,
    }


def node(
    host: str,
    sku: str = "hgx-h100-8gpu",
    checks: list[dict[str, Any]] | None = None,
    metrics: dict[str, Any] | None = None,
    status: str | None = None,
) -> dict[str, Any]:
    checks = checks if checks is not None else [check("gpu.count"), check("gpu.xid")]
    order = {"skip": 0, "pass": 1, "warn": 2, "error": 3, "fail": 4}
    ranked = [c["status"] for c in checks if c["status"] != "skip"]
    overall = status or (max(ranked, key=order.__getitem__) if ranked else "skip")
    return {
        "host": host,
        "node_sku": sku,
        "level": "quick",
        "status": overall,
        "checks": checks,
        "metrics": metrics if metrics is not None else {},
        "facts": {"driver_version": "535.183.01", "accelerator_count": 8},
        "collected_at": "2026-11-30T12:00:00Z",
        "duration_s": 0.8,
    }


def xid79_node(host: str) -> dict[str, Any]:
    return node(
        host,
        checks=[
            check("gpu.count"),
            check(
                "gpu.xid",
                "fail",
                "fatal Xid 79 (GPU fallen off the bus) on 0000:18:00.0 since boot",
                evidence={
                    "command": "dmesg",
                    "lines": ["NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus."],
                },
                remedy="drain the node, reseat/replace the GPU; RMA if it recurs",
            ),
        ],
    )
