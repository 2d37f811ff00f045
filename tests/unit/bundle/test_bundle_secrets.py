"""Secrets in what the CLI prints and records (issue 32, docs/design.md "Secrets in records and
output"): a URL's credentials are masked in the offline preflight's messages, a variable named like
a secret (or a role's no_log option) is recorded as a digest, and the Alertmanager webhook of the
example inventory (a vaulted `*_url`) is no download URL: it neither blocks an offline bring-up nor
is printed."""

from __future__ import annotations

import types

import pytest
from cfcore.redact import is_redacted, is_secret_name, mask_url, redact_vars, redacted
from clusterforge.bundle import check

BUNDLE = "http://bastion:8080/"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://ops:tok-123@mirror.example/repo/", "https://ops:***@mirror.example/repo/"),
        ("https://tok-123@mirror.example/x", "https://***@mirror.example/x"),
        ("http://mirror.example/x?a=b", "http://mirror.example/x?a=b"),
        ("not a url", "not a url"),
    ],
)
def test_a_urls_credentials_are_masked(url, shown):
    assert mask_url(url) == shown


def test_secrets_are_recorded_as_digests_that_still_show_a_change():
    values = {
        "db_password": "s1",
        "nested": {"API_TOKEN": "s2", "count": 3},
        "mirror": "https://u:s3@h/",
        "grafana_admin_password": "s4",
        "ceph_mon_secret": "s5",
        "custom_no_log": "s6",
        "note": "plain",
    }
    found = redact_vars(values, frozenset({"custom_no_log"}))
    assert found["note"] == "plain" and found["nested"]["count"] == 3
    for value in (
        found["db_password"],
        found["nested"]["API_TOKEN"],
        found["mirror"],
        found["custom_no_log"],
    ):
        assert is_redacted(value)
    assert "s1" not in repr(found) and "s3" not in repr(found)
    assert redacted("s1") == found["db_password"] != redacted("s1 ")
    assert is_secret_name("slurm_munge_key") and not is_secret_name("slurm_partition")


def _inventory(variables):
    return types.SimpleNamespace(targets=["n1"], vars_of=lambda _host: variables)


def test_the_preflight_names_no_webhook_and_masks_credentials():
    webhook = "https://hooks.example/services/T0/B0/FAKE-WEBHOOK-SECRET"
    variables = {
        "cf_bundle_url": BUNDLE,
        "vault_alertmanager_chat_url": webhook,  # the example inventory's Alertmanager receiver
        "grafana_root_url": "http://grafana.example:3000/",
        "slurm_repo_url": "https://ops:FAKE-REPO-TOKEN@repo.example/slurm/",
    }
    needs = types.SimpleNamespace(
        hosts={"n1": {"needs": [{"url": "https://u:FAKE-NEED-TOKEN@dl.example/f.tgz", "role": "nccl"}]}}
    )
    problems = check._outside(_inventory(variables), needs, BUNDLE.rstrip("/"))
    text = "\n".join(problems)
    assert "FAKE" not in text and "hooks.example" not in text and "grafana" not in text
    assert "slurm_repo_url = https://ops:***@repo.example/slurm/ points outside the bundle" in text
    assert "https://u:***@dl.example/f.tgz" in text
