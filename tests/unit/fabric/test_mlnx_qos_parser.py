"""cfcore/parsers/mlnx_qos.py on mlnx_qos outputs of DOCA-OFED, MLNX_OFED 4.x and 3.x, and on non-outputs."""

from __future__ import annotations

import pytest
from cfcore.parsers.common import ParseError
from cfcore.parsers.mlnx_qos import evidence_lines, parse_mlnx_qos
from roce_testlib import fixture


def test_doca_output_with_buffers_and_tabs():
    qos = parse_mlnx_qos(fixture("mlnx_qos-doca-dscp-pfc3.txt"))
    assert qos["dcbx_mode"] == "OS controlled"
    assert qos["trust"] == "dscp"
    assert qos["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["pfc_buffer"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["receive_buffers"] == [130944, 130944, 0, 0, 0, 0, 0, 0]
    assert qos["cable_len"] == 7
    assert qos["dscp2prio"][26] == 3 and qos["dscp2prio"][48] == 6 and len(qos["dscp2prio"]) == 64
    # mlx5's default: priority 0 on tc 1 and priority 1 on tc 0, printed in priority order.
    assert qos["prio_tc"] == {0: 1, 1: 0, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7}
    assert qos["tcs"][1] == {"ratelimit": "unlimited", "tsa": "vendor", "bw": None, "priorities": [0]}
    assert qos["warnings"] == []


def test_pcp_trust_has_no_dscp_section():
    qos = parse_mlnx_qos(fixture("mlnx_qos-doca-pcp-pfc-off.txt"))
    assert qos["trust"] == "pcp"
    assert qos["dscp2prio"] is None
    assert qos["pfc"] == [0] * 8


def test_mlnx_ofed_4_spaces_descending_dscp_ets_bandwidths_and_rate_limit():
    qos = parse_mlnx_qos(fixture("mlnx_qos-ofed4-dscp-ets.txt"))
    assert qos["trust"] == "dscp" and qos["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["pfc_buffer"] is None and qos["receive_buffers"] is None
    assert qos["dscp2prio"][31] == 3 and qos["dscp2prio"][24] == 3 and qos["dscp2prio"][0] == 0
    assert qos["tcs"][3]["bw"] == 50 and qos["tcs"][3]["tsa"] == "ets"
    assert qos["tcs"][6]["tsa"] == "strict" and qos["tcs"][6]["bw"] is None
    assert qos["tcs"][7]["ratelimit"] == "25.0 Gbps"
    assert qos["cable_len"] == 10


def test_mlnx_ofed_3_trust_mode_without_mapping_keeps_the_warning():
    qos = parse_mlnx_qos(fixture("mlnx_qos-ofed3-trust-mode-lldpad.txt"))
    assert qos["trust"] == "dscp"
    assert qos["dscp2prio"] is None  # not printed by this release: not guessed
    assert qos["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["tcs"][0]["priorities"] == list(range(8))
    assert qos["warnings"] == ["WARNING: lldpad service is running and may overwrite your settings"]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("mlnx_qos-no-interface.txt", "not mlnx_qos output"),
        ("mlnx_qos-ets-unsupported.txt", "ETS features are not supported"),
    ],
)
def test_tool_failures_are_parse_errors_saying_why(name, words):
    with pytest.raises(ParseError) as exc:
        parse_mlnx_qos(fixture(name))
    assert words in str(exc.value)
    assert "mlnx_qos -i" in exc.value.fix


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty input"),
        ("<!DOCTYPE html><html></html>\n", "HTML page"),
        ("PFC configuration:\n\tpriority 0 1 2 3 4 5 6 7\n\tenabled 0 0 0 1 0 0\n", "has 6 values, not 8"),
        ("PFC configuration:\n\tpriority 0 1 2 3 4 5 6 7\n\tenabled 0 0 0 2 0 0 0 0\n", "other than 0/1"),
        ("Priority trust state: dscp\ndscp2prio mapping:\n\tprio:9 dscp:01,\n", "priority 9 is not 0-7"),
    ],
)
def test_malformed_outputs_are_refused(text, words):
    with pytest.raises(ParseError) as exc:
        parse_mlnx_qos(text)
    assert words in str(exc.value)


def test_evidence_lines_show_the_deciding_rows():
    text = fixture("mlnx_qos-doca-dscp-pfc3.txt")
    assert evidence_lines(text, ["trust"]) == ["Priority trust state: dscp"]
    assert evidence_lines(text, ["pfc"]) == [
        "PFC configuration:",
        "priority    0   1   2   3   4   5   6   7",
        "enabled     0   0   0   1   0   0   0   0",
    ]
    mapping = evidence_lines(text, ["dscp2prio"])
    assert mapping[0] == "dscp2prio mapping:" and "prio:3 dscp:24,25,26,27,28,29,30,31," in mapping
