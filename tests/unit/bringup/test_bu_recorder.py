"""StageRecorder on the real event stream of ansible-runner (a local playbook, nothing mocked).

The playbook has what a stage meets on a fleet: a changed file (with its diff under --check
--diff), an unchanged one, a failure rescued by a block, a real failure on one host, a host
that cannot be reached over SSH, and a host no play applies to.
"""

from __future__ import annotations

import textwrap

import pytest
from clusterforge.bringup.recorder import StageRecorder
from clusterforge.validation.runner import run_playbook

PLAYBOOK = """\
- name: A stage in miniature
  hosts: good:bad:gone
  gather_facts: false
  tasks:
    - name: Write the config file
      ansible.builtin.copy:
        content: "new\\n"
        dest: "{{ work }}/{{ inventory_hostname }}.conf"
        mode: "0644"
    - name: Leave the other file alone
      ansible.builtin.copy:
        content: "same\\n"
        dest: "{{ work }}/same-{{ inventory_hostname }}"
        mode: "0644"
    - name: A failure a block rescues
      block:
        - name: Fail inside the block
          ansible.builtin.fail:
            msg: rescued
      rescue:
        - name: Rescue it
          ansible.builtin.debug:
            msg: rescued
    - name: Fail on the bad host
      ansible.builtin.fail:
        msg: "disk full on {{ inventory_hostname }}"
      when: inventory_hostname == 'bad'
"""


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    work = tmp_path_factory.mktemp("stage")
    for host in ("good", "bad"):
        (work / f"{host}.conf").write_text("old\n")
        (work / f"same-{host}").write_text("same\n")
    (work / "play.yml").write_text(PLAYBOOK)
    (work / "inv.yml").write_text(
        textwrap.dedent(f"""\
        all:
          vars: {{work: "{work}", ansible_python_interpreter: "{{{{ ansible_playbook_python }}}}"}}
          hosts:
            good: {{ansible_connection: local}}
            bad: {{ansible_connection: local}}
            gone: {{ansible_connection: ssh, ansible_host: 127.0.0.1, ansible_port: 1, ansible_user: nobody}}
            idle: {{ansible_connection: local}}
        """)
    )
    recorder = StageRecorder("base", ["good", "bad", "gone", "idle"])
    run = run_playbook(
        work / "play.yml", work / "inv.yml", work / "private", recorder, check_mode=True, diff=True
    )
    return recorder, run, work


def test_each_host_gets_its_result_from_the_play_recap(stage):
    recorder, run, _ = stage
    assert run.rc != 0  # a host failed
    assert {h: r["result"] for h, r in recorder.results().items()} == {
        "good": "changed",
        "bad": "failed",
        "gone": "unreachable",
        "idle": "none",
    }


def test_a_changed_task_carries_its_diff_and_an_unchanged_one_is_not_drift(stage):
    recorder, _, work = stage
    [change] = recorder.results()["good"]["changed_tasks"]
    assert change["task"] == "Write the config file"
    diff = change["diff"] if isinstance(change["diff"], dict) else change["diff"][0]
    assert (diff["before"], diff["after"]) == ("old\n", "new\n")
    assert (work / "good.conf").read_text() == "old\n"  # --check changed nothing


def test_the_first_real_failure_is_kept_and_a_rescued_one_is_not_a_failure(stage):
    recorder, _, _ = stage
    bad, good = recorder.results()["bad"], recorder.results()["good"]
    assert (bad["failed_task"], bad["message"]) == ("Fail on the bad host", "disk full on bad")
    assert good["result"] == "changed"  # its rescued failure did not fail it
    assert recorder.results()["gone"]["message"]  # ssh's own reason


def test_without_a_play_recap_no_host_has_finished():
    recorder = StageRecorder("base", ["a"])
    recorder("runner_on_ok", {"host": "a", "task": "t", "res": {"changed": False}})
    assert recorder.results()["a"]["result"] == "unfinished"
