"""cf_quarantine_nodes (plugins/filter/quarantine.py): the playbook's check of its whole request."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible.plugins.loader import filter_loader, init_plugin_loader
from clusterforge.ansible_env import ensure_collection_link

# Loaded as Ansible loads it: the collection's filter, found through the checkout's link
# (.collections/ansible_collections/clusterforge/cluster).
init_plugin_loader([str(ensure_collection_link().parents[2])])
cf_quarantine_nodes = filter_loader.get("clusterforge.cluster.cf_quarantine_nodes").j2_function
GOOD_SLURM = {"name": "gpu-r1-n01", "reason": "clusterforge: gpu.xid 2026-11-30T12:05Z", "scheduler": "slurm"}
GOOD_K8S = {"name": "gpu-r1-n01.dc1", "reason": "gpu.xid", "scheduler": "kubernetes"}


def test_good_entries_are_split_by_scheduler():
    nodes = [GOOD_SLURM, GOOD_K8S]
    assert cf_quarantine_nodes(nodes, "slurm") == [
        {"name": "gpu-r1-n01", "reason": "clusterforge: gpu.xid 2026-11-30T12:05Z"}
    ]
    assert cf_quarantine_nodes(nodes, "kubernetes") == [{"name": "gpu-r1-n01.dc1", "reason": "gpu.xid"}]
    assert cf_quarantine_nodes([], "slurm") == []


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (["scontrol", "update", "NodeName=x"], "must be a mapping with name, reason, scheduler, got list"),
        ("rm -rf /", "must be a mapping"),
        ({**GOOD_SLURM, "argv": ["sh", "-c", "id"]}, "exactly the keys name, reason, scheduler, got argv"),
        (
            {"name": "n1", "scheduler": "slurm"},
            "exactly the keys name, reason, scheduler, got name, scheduler",
        ),
        ({**GOOD_SLURM, "scheduler": "shell"}, "scheduler 'shell' is not one of slurm, kubernetes"),
        ({**GOOD_SLURM, "name": "gpu-01;reboot"}, "name 'gpu-01;reboot' is not one Slurm node name"),
        ({**GOOD_SLURM, "name": "gpu 01"}, "name 'gpu 01' is not one Slurm node name"),
        ({**GOOD_SLURM, "name": "gpu-01\n"}, "name 'gpu-01\\n' is not one Slurm node name"),
        ({**GOOD_SLURM, "name": "node[1-100]"}, "is not one Slurm node name"),
        ({**GOOD_SLURM, "name": "a,b"}, "is not one Slurm node name"),
        ({**GOOD_SLURM, "name": "--help"}, "is not one Slurm node name"),
        ({**GOOD_SLURM, "name": "gpü-01"}, "is not one Slurm node name"),  # ASCII only
        ({**GOOD_SLURM, "name": "n" * 64}, "is not one Slurm node name"),
        ({**GOOD_SLURM, "name": 7}, "name 7 is not one Slurm node name"),
        ({**GOOD_SLURM, "reason": "ok\nState=RESUME"}, "reason 'ok\\nState=RESUME' is not one line"),
        ({**GOOD_SLURM, "reason": ""}, "is not one line of printable ASCII"),
        ({**GOOD_SLURM, "reason": "r" * 201}, "at most 200 characters"),
        ({**GOOD_K8S, "name": "Gpu-01"}, "name 'Gpu-01' is not one Kubernetes node name"),
        ({**GOOD_K8S, "name": "gpu_01"}, "is not one Kubernetes node name"),
        ({**GOOD_K8S, "reason": "gpu.xid:NoExecute"}, "reason 'gpu.xid:NoExecute' is not a taint value"),
        ({**GOOD_K8S, "reason": "a b"}, "is not a taint value"),
    ],
)
def test_anything_but_a_name_and_a_reason_is_refused(entry, words):
    with pytest.raises(AnsibleFilterError) as refused:
        cf_quarantine_nodes([GOOD_SLURM, entry], "slurm")
    message = str(refused.value)
    assert message.startswith("quarantine refused, nothing was run: quarantine_nodes[1]: ")
    assert words in message


def test_a_bad_entry_of_another_scheduler_refuses_this_one_too():
    """The first play that runs refuses the whole request, before any controller runs a command."""
    with pytest.raises(AnsibleFilterError, match=r"quarantine_nodes\[1\]: name 'a;b'"):
        cf_quarantine_nodes([GOOD_SLURM, {**GOOD_K8S, "name": "a;b"}], "slurm")


def test_every_problem_is_listed_at_once():
    with pytest.raises(AnsibleFilterError) as refused:
        cf_quarantine_nodes([{**GOOD_SLURM, "name": "a b"}, GOOD_K8S, "x"], "kubernetes")
    assert "quarantine_nodes[0]" in str(refused.value) and "quarantine_nodes[2]" in str(refused.value)


@pytest.mark.parametrize("nodes", ["scontrol update NodeName=x", {"name": "x"}, None])
def test_the_request_must_be_a_list(nodes):
    with pytest.raises(AnsibleFilterError, match="quarantine_nodes must be a list"):
        cf_quarantine_nodes(nodes, "slurm")


@pytest.mark.parametrize("name", ["ALL", "all", "All", "DEFAULT", "default"])
def test_a_slurm_keyword_is_no_node_name_anywhere_it_is_formed(name):
    """`scontrol update NodeName=ALL State=DRAIN` drains the whole cluster (issue 32): refused by
    the playbook's filter (what AWX extra vars reach), the shared rule and every argument vector."""
    from cfcore import quarantine_rules, scheduler_drain

    with pytest.raises(AnsibleFilterError, match="is a Slurm keyword, not a node"):
        cf_quarantine_nodes([{**GOOD_SLURM, "name": name}], "slurm")
    assert "Slurm keyword" in quarantine_rules.name_problem(name, "slurm")
    for build in (lambda: scheduler_drain.slurm_drain(name, "r"), lambda: scheduler_drain.slurm_resume(name)):
        with pytest.raises(ValueError, match="Slurm keyword"):
            build()
    assert quarantine_rules.name_problem("allegro-01", "slurm") is None  # a name that starts so is fine
