"""The prometheus role's files rendered for inventories/example (tests/unit/prometheus/render.yml,
the role's tasks_from: render) pass `promtool check config` and `amtool check-config`, and hold
the targets, routes and flags of docs/design.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from patience import HANG_S

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = ROOT / "tests/unit/prometheus/render.yml"
BIN = ROOT / ".venv/bin"
SEARCH = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
MONITORING_HOST = "ctl-r3-n03"
# The example site's monitoring variables over the role's defaults (what the render must show).
SITE = {
    **yaml.safe_load((ROOT / "roles/prometheus/defaults/main.yml").read_text()),
    **yaml.safe_load((ROOT / "inventories/example/group_vars/all/monitoring.yml").read_text()),
}


def tool(name: str) -> str:
    found = shutil.which(name, path=SEARCH)
    if not found:
        pytest.skip(f"{name} is not installed (scripts/setup-tools.sh puts it into .venv/bin)")
    return found


def render(root: Path, extra: dict | None = None, more_args: tuple = ()) -> Path:
    argv = [
        shutil.which("ansible-playbook", path=SEARCH) or "ansible-playbook",
        "-i",
        str(ROOT / "inventories/example"),
        str(PLAYBOOK),
        "-e",
        json.dumps({"prometheus_render_root": str(root), **(extra or {})}),
        *more_args,
    ]
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return root / MONITORING_HOST


def check(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=HANG_S, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return render(tmp_path_factory.mktemp("render"))


def inventory_hosts() -> dict:
    """{host: vars} of inventories/example (hosts.yml), merged over its groups."""
    document = yaml.safe_load((ROOT / "inventories/example/hosts.yml").read_text())
    hosts: dict = {}

    def walk(group):
        for name, values in ((group or {}).get("hosts") or {}).items():
            hosts.setdefault(name, {}).update(values or {})
        for child in ((group or {}).get("children") or {}).values():
            walk(child)

    walk(document["all"])
    return hosts


def test_rendered_configs_pass_promtool_and_amtool(example):
    out = check([tool("promtool"), "check", "config", str(example / "prometheus.yml")])
    assert "SUCCESS: 2 rule files found" in out
    check([tool("amtool"), "check-config", str(example / "alertmanager.yml")])


def test_prometheus_yml_jobs_and_paths(example):
    config = yaml.safe_load((example / "prometheus.yml").read_text())
    assert config["global"] == {"scrape_interval": "30s", "evaluation_interval": "30s"}
    assert config["alerting"]["alertmanagers"] == [{"static_configs": [{"targets": ["localhost:9093"]}]}]
    assert config["rule_files"] == [f"{example}/rules/*.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert list(jobs) == ["node", "dcgm", "npu", "prometheus", "alertmanager"]
    for name in ("node", "dcgm", "npu"):
        assert jobs[name]["file_sd_configs"] == [{"files": [f"{example}/file_sd/{name}.json"]}]
    labels = {
        "node": MONITORING_HOST,
        "rack": "r3",
        "node_sku": "cpu-generic",
        "cluster_groups": ",k8s_control_plane,monitoring,",
    }
    assert jobs["prometheus"]["static_configs"] == [{"targets": ["10.10.3.13:9090"], "labels": labels}]
    assert jobs["alertmanager"]["static_configs"] == [{"targets": ["10.10.3.13:9093"], "labels": labels}]


def test_file_sd_targets_are_the_inventorys(example):
    hosts = inventory_hosts()
    node = json.loads((example / "file_sd/node.json").read_text())
    assert [e["targets"] for e in node] == [[f"{hosts[h]['ansible_host']}:9100"] for h in sorted(hosts)]
    assert all(set(e["labels"]) == {"node", "rack", "node_sku", "cluster_groups"} for e in node)
    dcgm = json.loads((example / "file_sd/dcgm.json").read_text())
    assert [e["labels"]["node"] for e in dcgm] == [f"gpu-r1-n0{i}" for i in range(1, 5)]
    assert dcgm[2]["labels"]["cluster_groups"] == ",gpu_nvidia,slurm_workers,"
    assert dcgm[0]["targets"] == ["10.10.1.11:9400"]
    npu = json.loads((example / "file_sd/npu.json").read_text())
    assert [e["targets"] for e in npu] == [["10.10.2.11:8082"], ["10.10.2.12:8082"]]


def test_alertmanager_routes_by_severity_and_node_down_inhibits(example):
    config = yaml.safe_load((example / "alertmanager.yml").read_text())
    assert [r["name"] for r in config["receivers"]] == [r["name"] for r in SITE["alertmanager_receivers"]]
    route = config["route"]
    default = SITE["alertmanager_default_receiver"]
    assert route["receiver"] == default and route["group_by"] == ["alertname", "rack", "node"]
    assert route["routes"] == [
        {"receiver": SITE.get("alertmanager_route_critical", default), "matchers": ['severity="critical"']},
        {"receiver": SITE.get("alertmanager_route_warning", default), "matchers": ['severity="warning"']},
    ]
    assert config["inhibit_rules"] == [
        {
            "source_matchers": ['alertname="NodeDown"'],
            "target_matchers": ['alertname!="NodeDown"'],
            "equal": ["node"],
        }
    ]


def test_default_flags(example):
    size = SITE["prometheus_retention_size"]
    assert (example / "default-prometheus").read_text().splitlines()[-1] == (
        f'ARGS="--config.file={example}/prometheus.yml --storage.tsdb.path=/var/lib/prometheus/metrics2'
        f" --storage.tsdb.retention.time={SITE['prometheus_retention_time']}"
        + (f" --storage.tsdb.retention.size={size}" if size else "")
        + ' --web.listen-address=:9090"'
    )
    assert (example / "default-prometheus-alertmanager").read_text().splitlines()[-1] == (
        f'ARGS="--config.file={example}/alertmanager.yml --storage.path=/var/lib/prometheus/alertmanager'
        ' --web.listen-address=:9093 --cluster.listen-address="'
    )


def test_the_defaults_send_nothing_and_keep_no_size_limit(tmp_path):
    out = render(
        tmp_path,
        {
            "alertmanager_receivers": [{"name": "default"}],
            "alertmanager_default_receiver": "default",
            "alertmanager_route_critical": "default",
            "alertmanager_route_warning": "default",
            "prometheus_retention_size": None,
        },
    )
    check([tool("amtool"), "check-config", str(out / "alertmanager.yml")])
    config = yaml.safe_load((out / "alertmanager.yml").read_text())
    assert config["receivers"] == [{"name": "default"}]
    assert "retention.size" not in (out / "default-prometheus").read_text()


def test_site_receivers_ports_and_retention(tmp_path):
    pager = {
        "name": "pager",
        "webhook_configs": [{"url": "http://pager.example:9000/hook", "send_resolved": True}],
    }
    out = render(
        tmp_path,
        {
            "alertmanager_receivers": [{"name": "default"}, pager],
            "alertmanager_default_receiver": "default",
            "alertmanager_route_critical": "pager",
            "alertmanager_route_warning": "default",
            "prometheus_retention_size": "500GB",
            "prometheus_port": 9191,
            "prometheus_scrape_interval": "15s",
        },
    )
    check([tool("promtool"), "check", "config", str(out / "prometheus.yml")])
    check([tool("amtool"), "check-config", str(out / "alertmanager.yml")])
    config = yaml.safe_load((out / "alertmanager.yml").read_text())
    assert config["receivers"][1] == pager
    assert config["route"]["routes"][0] == {"receiver": "pager", "matchers": ['severity="critical"']}
    prom = yaml.safe_load((out / "prometheus.yml").read_text())
    assert prom["global"]["scrape_interval"] == "15s"
    assert prom["scrape_configs"][3]["static_configs"][0]["targets"] == ["10.10.3.13:9191"]
    flags = (out / "default-prometheus").read_text()
    assert "--storage.tsdb.retention.size=500GB --web.listen-address=:9191" in flags


def test_receiver_secrets_from_vault_are_written_decrypted(tmp_path):
    """The example's receivers take their URL and key from Vault variables: alertmanager.yml must
    hold the secrets themselves, never the ciphertext (to_nice_yaml would write the latter)."""
    password = tmp_path / "vault-password"
    password.write_text("cf-render-test\n")
    vault = shutil.which("ansible-vault", path=SEARCH) or "ansible-vault"
    encrypted = check(
        [
            vault,
            "encrypt_string",
            "--vault-password-file",
            str(password),
            "--name",
            "vault_alertmanager_chat_url",
            "http://chat.example:8065/hooks/cf-secret-path",
        ]
    )
    secrets = tmp_path / "secrets.yml"
    secrets.write_text(encrypted[encrypted.index("vault_alertmanager_chat_url") :])
    out = render(tmp_path / "out", more_args=("-e", f"@{secrets}", "--vault-password-file", str(password)))
    check([tool("amtool"), "check-config", str(out / "alertmanager.yml")])
    text = (out / "alertmanager.yml").read_text()
    assert "$ANSIBLE_VAULT" not in text
    chat = {r["name"]: r for r in yaml.safe_load(text)["receivers"]}["team-chat"]
    assert chat["webhook_configs"][0]["url"] == "http://chat.example:8065/hooks/cf-secret-path"
