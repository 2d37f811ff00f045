"""The meta URL of a volume without its own (cfcore.juicefs.default_meta_url): one rule for the
juicefs role, validation and the CLI."""

from __future__ import annotations

import pytest
from cfcore.juicefs import default_meta_url


@pytest.mark.parametrize(
    ("meta_url", "meta_host", "expected"),
    [
        # The site's own URL wins (an external TiKV or PostgreSQL).
        ("tikv://pd1:2379,pd2:2379/jfs", {"ansible_host": "10.0.0.1"}, "tikv://pd1:2379,pd2:2379/jfs"),
        # Else the Redis of the first juicefs_meta host: bind address, storage address, ansible_host.
        (
            "",
            {"juicefs_redis_bind_address": "10.20.3.21", "ansible_host": "10.10.3.21"},
            "redis://10.20.3.21:6379/1",
        ),
        (
            None,
            {"fabric_storage_address": "10.20.3.21", "ansible_host": "10.10.3.21"},
            "redis://10.20.3.21:6379/1",
        ),
        ("", {"ansible_host": "10.10.3.21", "juicefs_redis_port": 6380}, "redis://10.10.3.21:6380/1"),
        ("", {"inventory_hostname": "jfs-r3-n01"}, "redis://jfs-r3-n01:6379/1"),
        # Neither: no default (the volume must name its own).
        ("", {}, ""),
        ("  ", None, ""),
    ],
)
def test_default_meta_url(meta_url, meta_host, expected):
    assert default_meta_url(meta_url, meta_host) == expected
