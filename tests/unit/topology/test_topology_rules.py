"""cfcore/topology.py: the fabric topology's rules (each failing and passing, the messages naming the
host and the fix), Slurm's topology.conf (tree and block), node labels and Volcano HyperNodes; and
cfcore/slurm_conf.py's hostlist compression."""

from __future__ import annotations

import pytest
from cfcore import topology as tp
from cfcore.inputs import InputError
from cfcore.slurm_conf import hostlist


def host(name, leaf=None, spine=None, domain=None, rack="r1", groups=("gpu_nvidia",), ports=None):
    values = {"rack": rack, "leaf": leaf, "spine": spine, "nvlink_domain": domain}
    if ports is not None:
        values["topology_ports_per_host"] = ports
    return tp.host_entry(name, values, groups)


def rules(findings, severity="error"):
    return sorted(f["rule"] for f in findings if f["severity"] == severity)


def fleet(**settings):
    return tp.settings_of({f"topology_{k}": v for k, v in settings.items()})


FABRIC = [
    host("gpu-01", "leaf-a", "spine-1"),
    host("gpu-02", "leaf-a", "spine-1"),
    host("gpu-03", "leaf-b", "spine-1"),
    host("ctl-01", groups=("slurm_controller",)),  # not an accelerator host: no leaf needed
]


# -- hostlist ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["gpu-01"], "gpu-01"),
        (["gpu-03", "gpu-01"], "gpu-[01,03]"),
        (["gpu-01", "gpu-02", "gpu-03", "gpu-07"], "gpu-[01-03,07]"),
        (["n9", "n10", "n09"], "n9,n[09-10]"),  # padding kept: n9 and n09 are different nodes
        (["ctl", "gpu-1", "gpu-2"], "ctl,gpu-[1-2]"),
        (["a1", "a1"], "a1"),
        ([], ""),
    ],
)
def test_hostlist_compresses_and_keeps_padding(names, expected):
    assert hostlist(names) == expected


# -- rules ------------------------------------------------------------------------------------


def test_a_site_without_topology_has_no_finding():
    hosts = [host("gpu-01"), host("npu-01", groups=("npu_ascend",))]
    assert tp.check(hosts, fleet()) == []
    assert not tp.declared(hosts)


def test_a_placed_fabric_passes():
    assert tp.check(FABRIC, fleet()) == []


def test_an_unplaced_accelerator_host_is_an_error_naming_it_and_the_fix():
    hosts = [*FABRIC, host("npu-01", groups=("npu_ascend",)), host("cpu-w1", groups=("slurm_workers",))]
    found = [f for f in tp.check(hosts, fleet()) if f["rule"] == "topology.unplaced"]
    assert [f["host"] for f in found] == ["npu-01", "cpu-w1"]
    assert "npu-01 has no leaf" in found[0]["message"]
    assert found[0]["fix"].startswith("set leaf of npu-01")
    assert found[0]["variable"] == "leaf"


def test_a_spine_without_leaf_is_an_error():
    [found] = tp.check([*FABRIC, host("ctl-02", spine="spine-1", groups=())], fleet())
    assert (found["rule"], found["host"], found["value"]) == (
        "topology.spine_without_leaf",
        "ctl-02",
        "spine-1",
    )
    assert "set leaf of ctl-02" in found["fix"]


@pytest.mark.parametrize("bad", ["Leaf 01", "leaf,1", "leaf=1", "leaf[1]", "-leaf", "LEAF", "x" * 64, 7])
def test_names_must_suit_slurm_and_kubernetes(bad):
    [found] = tp.check([host("gpu-01", bad, "spine-1")], fleet())
    assert found["rule"] == "topology.name" and found["host"] == "gpu-01" and found["variable"] == "leaf"
    assert "gpu-01" in found["fix"]
    assert tp.NAME_RULE.fullmatch(found["fix"].split("'")[1])  # the suggestion is itself valid


def test_name_suggestion():
    assert tp.suggest("Leaf 01") == "leaf-01"
    assert tp.name_problem("leaf-01") == ""


def test_a_leaf_under_two_spines_is_an_error_naming_its_hosts():
    hosts = [*FABRIC, host("gpu-04", "leaf-a", "spine-2")]
    [found] = tp.check(hosts, fleet())
    assert found["rule"] == "topology.leaf_two_spines"
    assert found["hosts"] == ["gpu-01", "gpu-02", "gpu-04"]
    assert "spine-1: gpu-01, gpu-02; spine-2: gpu-04" in found["message"]
    assert "same spine (spine-1 or spine-2)" in found["fix"]


def test_a_leaf_with_and_without_spine_is_an_error_too():
    hosts = [*FABRIC, host("gpu-04", "leaf-b")]
    assert rules(tp.check(hosts, fleet())) == ["topology.leaf_two_spines"]


def test_a_name_is_a_leaf_or_a_spine_and_the_root_is_free():
    hosts = [host("gpu-01", "sw-1", "sw-2"), host("gpu-02", "sw-2", "sw-3")]
    assert rules(tp.check(hosts, fleet())) == ["topology.name_clash"]
    clash = tp.check(FABRIC, fleet(root_name="spine-1"))
    assert [(f["rule"], f["variable"]) for f in clash] == [("topology.name_clash", "topology_root_name")]


def test_leaf_ports_are_counted_against_the_downlinks():
    hosts = [host(f"gpu-{i:02d}", "leaf-a", ports=8) for i in range(1, 5)]  # 32 ports: full
    assert tp.check(hosts, fleet()) == []
    hosts.append(host("gpu-05", "leaf-a"))  # 33 > 32
    [found] = tp.check(hosts, fleet())
    assert found["rule"] == "topology.leaf_ports" and len(found["hosts"]) == 5
    assert "33 host ports" in found["message"] and "32 host-facing ports" in found["message"]
    assert "topology_leaf_ports.leaf-a" in found["fix"]
    assert tp.check(hosts, fleet(leaf_ports={"leaf-a": 48})) == []  # the per-leaf override
    assert rules(tp.check(hosts, fleet(leaf_downlinks=64))) == []


def test_an_nvlink_domain_stays_in_one_rack_unless_declared_spanning():
    hosts = [
        host("gb-01", "leaf-a", domain="nvl-1", rack="r1"),
        host("gb-02", "leaf-a", domain="nvl-1", rack="r2"),
    ]
    [found] = tp.check(hosts, fleet())
    assert found["rule"] == "topology.domain_racks" and found["hosts"] == ["gb-01", "gb-02"]
    assert "rack r1: gb-01; rack r2: gb-02" in found["message"]
    assert "topology_spanning_domains" in found["fix"]
    assert tp.check(hosts, fleet(spanning_domains=["nvl-1"])) == []


def test_bad_settings_and_unused_entries():
    found = tp.check(
        FABRIC,
        fleet(leaf_downlinks=0, leaf_ports={"leaf-a": "many", "leaf-x": 8}, spanning_domains=["nvl-9"]),
    )
    assert rules(found) == ["topology.settings", "topology.settings"]
    assert rules(found, "warning") == ["topology.unknown_domain", "topology.unknown_leaf"]
    assert rules(tp.check(FABRIC, fleet(spanning_domains="nvl-1"))) == ["topology.settings"]
    assert rules(tp.check([host("gpu-01", "leaf-a", ports=0)], fleet())) == ["topology.settings"]


def test_require_valid_raises_with_every_error():
    with pytest.raises(InputError) as err:
        tp.require_valid([*FABRIC, host("npu-01", groups=("npu_ascend",))], fleet())
    assert "[host npu-01]" in err.value.message and "set leaf of npu-01" in err.value.message


# -- Slurm ------------------------------------------------------------------------------------


def worker(name, leaf=None, spine=None, domain=None):
    return {
        "host": f"{name}.example.org",
        "name": name,
        "leaf": leaf,
        "spine": spine,
        "nvlink_domain": domain,
    }


def test_tree_one_spine_needs_no_root():
    conf = tp.slurm_topology(
        [
            worker("gpu-01", "leaf-a", "spine-1"),
            worker("gpu-03", "leaf-a", "spine-1"),
            worker("gpu-02", "leaf-b", "spine-1"),
        ],
        cluster_name="c1",
    )
    assert conf["plugin"] == "tree" and conf["slurm_plugin"] == "topology/tree"
    assert conf["lines"] == [
        "SwitchName=leaf-a Nodes=gpu-[01,03]",
        "SwitchName=leaf-b Nodes=gpu-02",
        "SwitchName=spine-1 Switches=leaf-a,leaf-b",
    ]
    assert conf["text"].startswith("# Managed by ClusterForge") and conf["text"].endswith("leaf-b\n")
    assert "topology/tree of cluster c1" in conf["text"]


def test_tree_several_tops_get_a_root_so_jobs_can_span_them():
    conf = tp.slurm_topology(
        [
            worker("n01", "leaf-1", "spine-1"),
            worker("n02", "leaf-2", "spine-2"),
            worker("n03", "leaf-3"),  # a leaf without a spine is a top switch too
        ],
        root="fabric",
    )
    assert conf["lines"] == [
        "SwitchName=leaf-1 Nodes=n01",
        "SwitchName=leaf-2 Nodes=n02",
        "SwitchName=leaf-3 Nodes=n03",
        "SwitchName=spine-1 Switches=leaf-1",
        "SwitchName=spine-2 Switches=leaf-2",
        "SwitchName=fabric Switches=leaf-3,spine-[1-2]",
    ]
    leaves_only = tp.slurm_topology([worker("n01", "leaf-1"), worker("n02", "leaf-2")])
    assert leaves_only["lines"][-1] == "SwitchName=root Switches=leaf-[1-2]"


def test_tree_needs_every_worker_on_a_leaf():
    with pytest.raises(InputError) as err:
        tp.slurm_topology([worker("n01", "leaf-1"), worker("n02")], "tree")
    assert "n02.example.org" in err.value.message and "slurm_topology_plugin: none" in err.value.fix


def test_auto_without_topology_and_none():
    assert tp.slurm_topology([worker("n01")]) == {
        "plugin": "none",
        "slurm_plugin": "",
        "lines": [],
        "text": "",
    }
    assert tp.slurm_topology([worker("n01", "leaf-1")], "none")["plugin"] == "none"
    with pytest.raises(InputError, match="slurm_topology_plugin 'fat-tree'"):
        tp.slurm_topology([worker("n01", "leaf-1")], "fat-tree")


NVL72 = [worker(f"gb-{i:02d}", "leaf-1", domain=f"nvl-{1 + (i - 1) // 18}") for i in range(1, 37)]


def test_block_one_block_per_nvlink_domain():
    conf = tp.slurm_topology(NVL72, "block", "24.05.4", [18, 36])
    assert conf["slurm_plugin"] == "topology/block"
    assert conf["lines"] == [
        "BlockName=nvl-1 Nodes=gb-[01-18]",
        "BlockName=nvl-2 Nodes=gb-[19-36]",
        "BlockSizes=18,36",
    ]
    assert tp.slurm_topology(NVL72, "block", "23.11.0")["lines"][-1] == "BlockName=nvl-2 Nodes=gb-[19-36]"


@pytest.mark.parametrize(
    ("version", "sizes", "message"),
    [
        ("22.05.8", [], "needs Slurm 23.11 or later"),
        ("24.05.4", [18, 30], "power of two"),
        ("24.05.4", [20], "have fewer"),
        ("24.05.4", ["x"], "a list of node counts"),
    ],
)
def test_block_refusals(version, sizes, message):
    with pytest.raises(InputError, match=message):
        tp.slurm_topology(NVL72, "block", version, sizes)


def test_block_needs_every_worker_in_a_domain():
    with pytest.raises(InputError, match=r"gb-99\.example\.org have no nvlink_domain"):
        tp.slurm_topology([*NVL72, worker("gb-99", "leaf-1")], "block", "24.05.4")


# -- Kubernetes -------------------------------------------------------------------------------


def test_node_labels():
    assert tp.node_labels("r1", "leaf-a", None, "nvl-1") == {
        "topology.clusterforge.io/rack": "r1",
        "topology.clusterforge.io/leaf": "leaf-a",
        "topology.clusterforge.io/nvlink-domain": "nvl-1",
    }
    assert tp.node_labels(2) == {"topology.clusterforge.io/rack": "2"}
    assert tp.node_labels() == {}
    with pytest.raises(InputError):
        tp.node_labels(leaf="Leaf A")


@pytest.mark.parametrize("rack", ["r 1", "r;1", "r-1-", "räck-1", "R1", True, ["r1"]])
def test_a_rack_is_never_rewritten_into_another_label(rack):
    # 'r 1' and 'r;1' used to become the one label 'r-1', and 'räck-1' none at all
    assert tp.rack_problem(rack)
    with pytest.raises(InputError, match="rack"):
        tp.node_labels(rack)


def test_hypernodes_only_from_volcano_1_12():
    entries = [{"node": "gpu-01", "leaf": "leaf-a", "spine": "spine-1"}]
    assert tp.hypernodes(entries, "1.10.0") == []
    assert tp.hypernodes([{"node": "gpu-01"}], "1.12.0") == []  # no topology
    assert [d["metadata"]["name"] for d in tp.hypernodes(entries, "v1.12.1")] == ["leaf-a", "spine-1"]


def test_hypernode_tiers_members_and_root():
    docs = tp.hypernodes(
        [
            {"node": "gpu-02", "leaf": "leaf-a", "spine": "spine-1"},
            {"node": "gpu-01", "leaf": "leaf-a", "spine": "spine-1"},
            {"node": "npu-01", "leaf": "leaf-c"},
            {"node": "cpu-01"},  # not placed: in no HyperNode
        ],
        "1.12.0",
    )
    by_name = {d["metadata"]["name"]: d["spec"] for d in docs}
    assert by_name["leaf-a"] == {
        "tier": 1,
        "members": [
            {"type": "Node", "selector": {"exactMatch": {"name": "gpu-01"}}},
            {"type": "Node", "selector": {"exactMatch": {"name": "gpu-02"}}},
        ],
    }
    assert by_name["spine-1"]["tier"] == 2
    assert by_name["root"] == {
        "tier": 3,
        "members": [
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-c"}}},
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "spine-1"}}},
        ],
    }
    assert all(d["apiVersion"] == "topology.volcano.sh/v1alpha1" and d["kind"] == "HyperNode" for d in docs)
