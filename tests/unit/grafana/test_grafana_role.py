"""roles/grafana without Grafana: its argument specs, the install-source checks of tasks/plan.yml
(run by ansible-playbook on localhost: they only assert), and its provisioning templates rendered by
Ansible's template module with the role's defaults and vars."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from role_specs import validate

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "grafana"
SHA = "a" * 64


def ansible_playbook(playbook: Path, *args: str) -> subprocess.CompletedProcess:
    run = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            *args,
            str(playbook),
        ],
        cwd=REPO,
        env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run


# ---------------------------------------------------------------- specs ----
def test_admin_password_is_required():
    errors = validate("grafana", {})
    assert errors and "grafana_admin_password" in errors[0]
    assert validate("grafana", {}, grafana_admin_password="s3cret", grafana_package_name="grafana") == []


def test_a_bad_port_is_refused_naming_it():
    errors = validate("grafana", {}, grafana_admin_password="x", grafana_port="http")
    assert errors and "grafana_port" in errors[0]


# ----------------------------------------------------------------- plan ----
CASES = {
    "neither": ({}, "Set exactly one of grafana_package_url"),
    "both": (
        {
            "grafana_package_url": "https://mirror.example/grafana_10.4.2_amd64.deb",
            "grafana_package_sha256": SHA,
            "grafana_package_name": "grafana",
        },
        "Set exactly one of grafana_package_url",
    ),
    "url_without_sha": (
        {"grafana_package_url": "https://mirror.example/grafana_10.4.2_amd64.deb"},
        "needs grafana_package_sha256",
    ),
    "rpm_on_debian": (
        {
            "grafana_package_url": "https://mirror.example/grafana-10.4.2-1.x86_64.rpm",
            "grafana_package_sha256": SHA,
        },
        "must name a .deb on Debian hosts",
    ),
    "empty_password": (
        {"grafana_package_name": "grafana", "grafana_admin_password": ""},
        "grafana_admin_password is empty",
    ),
    "url_ok": (
        {
            "grafana_package_url": "https://mirror.example/pool/grafana_10.4.2_amd64.deb?x=1",
            "grafana_package_sha256": "sha256:" + SHA.upper(),
        },
        "ok /var/cache/clusterforge/grafana/grafana_10.4.2_amd64.deb",
    ),
    "name_ok": (
        {"grafana_package_name": "grafana", "grafana_package_version": "10.4.2"},
        "ok grafana=10.4.2",
    ),
    "name_any_version": ({"grafana_package_name": "grafana-enterprise"}, "ok grafana-enterprise"),
}


@pytest.fixture(scope="module")
def plan_outcomes(tmp_path_factory):
    """Each case's outcome: the assert's message, or `ok <package file or spec>`."""
    out = tmp_path_factory.mktemp("grafana-plan")
    plays = []
    for case, (values, _expected) in CASES.items():
        plays.append(
            {
                "name": f"grafana plan: {case}",
                "hosts": "localhost",
                "gather_facts": True,
                "gather_subset": ["min"],
                "vars": {"grafana_admin_password": "s3cret", **values},
                "tasks": [
                    {
                        "block": [
                            {
                                "ansible.builtin.include_role": {
                                    "name": "clusterforge.cluster.grafana",
                                    "tasks_from": "plan.yml",
                                    "public": True,
                                }
                            },
                            {
                                "ansible.builtin.copy": {
                                    "dest": f"{out}/{case}",
                                    "mode": "0644",
                                    "content": "ok {{ grafana__package_file if grafana_package_url else"
                                    " grafana__package_spec }}",
                                }
                            },
                        ],
                        "rescue": [
                            {
                                "ansible.builtin.copy": {
                                    "dest": f"{out}/{case}",
                                    "mode": "0644",
                                    "content": "{{ ansible_failed_result.msg }}",
                                }
                            }
                        ],
                    }
                ],
            }
        )
    playbook = out / "plan.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    ansible_playbook(playbook)
    return {case: (out / case).read_text() for case in CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_install_source_checks(plan_outcomes, case):
    outcome, expected = plan_outcomes[case], CASES[case][1]
    assert expected in outcome, outcome
    if not expected.startswith("ok"):
        assert "s3cret" not in outcome


# ------------------------------------------------------------ templates ----
TEMPLATES = ["grafana.ini", "datasource.yml", "dashboards.yml"]
PASSWORD = 'p;a#s"s'


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The role's templates rendered by Ansible with its defaults and vars (and a Vault-like password)."""
    out = tmp_path_factory.mktemp("grafana-render")
    site = out / "site.yml"
    site.write_text(
        yaml.safe_dump(
            {"grafana_admin_password": PASSWORD, "grafana_root_url": "https://grafana.site.example/"}
        )
    )
    play = [
        {
            "name": "Render the grafana role's templates",
            "hosts": "localhost",
            "gather_facts": False,
            # Later files win: the inventory's values over the role's defaults, as in a play.
            "vars_files": [str(ROLE / "defaults" / "main.yml"), str(site), str(ROLE / "vars" / "main.yml")],
            "tasks": [
                {
                    "name": "Render",
                    "ansible.builtin.template": {
                        "src": f"{ROLE}/templates/{{{{ item }}}}.j2",
                        "dest": f"{out}/{{{{ item }}}}",
                        "mode": "0600",
                    },
                    "loop": TEMPLATES,
                }
            ],
        }
    ]
    playbook = out / "render.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    ansible_playbook(playbook)
    return {name: (out / name).read_text() for name in TEMPLATES}


def test_datasource_provisioning(rendered):
    document = yaml.safe_load(rendered["datasource.yml"])
    assert document["apiVersion"] == 1
    [source] = document["datasources"]
    assert source["uid"] == "clusterforge-prometheus"
    assert source["type"] == "prometheus" and source["access"] == "proxy"
    assert source["url"] == "http://localhost:9090"
    assert source["isDefault"] is True and source["editable"] is False
    assert source["jsonData"]["timeInterval"] == "30s"


def test_dashboards_reference_the_provisioned_datasource(rendered):
    uid = yaml.safe_load(rendered["datasource.yml"])["datasources"][0]["uid"]
    for path in (ROLE / "files" / "dashboards").glob("*.json"):
        dashboard = json.loads(path.read_text())
        sources = {panel["datasource"]["uid"] for panel in dashboard["panels"] if "datasource" in panel}
        assert sources == {uid}, path.name


def test_dashboard_provider(rendered):
    document = yaml.safe_load(rendered["dashboards.yml"])
    [provider] = document["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards/clusterforge"
    assert provider["folder"] == "ClusterForge"
    assert provider["allowUiUpdates"] is False and provider["updateIntervalSeconds"] > 0


def test_grafana_ini(rendered):
    ini = configparser.ConfigParser(
        interpolation=None, comment_prefixes=(";", "#"), inline_comment_prefixes=None
    )
    ini.read_string(rendered["grafana.ini"])
    assert ini["server"]["http_port"] == "3000"
    assert ini["server"]["root_url"] == "https://grafana.site.example/"
    assert ini["security"]["admin_user"] == "admin"
    # Triple quotes keep ; and # of the password from starting a comment (Grafana's ini rule).
    assert ini["security"]["admin_password"] == f'"""{PASSWORD}"""'
    assert ini["paths"]["provisioning"] == "/etc/grafana/provisioning"
    for section, key in [
        ("analytics", "reporting_enabled"),
        ("analytics", "check_for_updates"),
        ("analytics", "check_for_plugin_updates"),
        ("news", "news_feed_enabled"),
        ("snapshots", "external_enabled"),
        ("users", "allow_sign_up"),
        ("auth.anonymous", "enabled"),
    ]:
        assert ini[section][key] == "false", (section, key)


def test_config_tasks_write_where_the_templates_say():
    """tasks/config.yml writes the rendered files where Grafana reads them, with the modes the design says."""
    [block] = yaml.safe_load((ROLE / "tasks" / "config.yml").read_text())
    tasks = {task["name"]: task for task in block["block"]}
    ini = tasks["Write grafana.ini (port, admin account, no phoning home)"]
    assert ini["no_log"] is True and ini["ansible.builtin.template"]["mode"] == "0640"
    assert ini["ansible.builtin.template"]["group"] == "grafana"
    destinations = {
        task["ansible.builtin.template"]["src"]: task["ansible.builtin.template"]["dest"]
        for task in tasks.values()
        if "ansible.builtin.template" in task
    }
    assert destinations == {
        "grafana.ini.j2": "{{ grafana__config_dir }}/grafana.ini",
        "datasource.yml.j2": "{{ grafana__config_dir }}/provisioning/datasources/clusterforge.yml",
        "dashboards.yml.j2": "{{ grafana__config_dir }}/provisioning/dashboards/clusterforge.yml",
    }
    copy = tasks["Copy the ClusterForge dashboards"]
    assert "notify" not in copy, "dashboards are re-read by Grafana: no restart"
    assert all(
        task.get("notify") == "Restart grafana-server"
        for task in tasks.values()
        if "ansible.builtin.template" in task
    )
