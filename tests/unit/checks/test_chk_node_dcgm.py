"""node.mounts and gpu.dcgm_diag."""

from __future__ import annotations

import json

from cfcore.checks import dcgm, node
from cfcore.outputs import Output
from chkdata import failed_output

MOUNTS = """/dev/md0 / ext4 rw,relatime 0 0
JuiceFS:jfs /mnt/jfs fuse.juicefs rw,relatime,user_id=0,group_id=0,allow_other 0 0
/dev/sdb1 /mnt/with\\040space xfs rw 0 0
"""


def mounts(text=MOUNTS) -> Output:
    return Output("/proc/self/mounts", "ok", text=text)


def test_required_mounts():
    assert node.node_mounts(mounts(), ["/mnt/jfs", "/mnt/jfs/"])["status"] == "pass"
    assert node.node_mounts(mounts(), ["/mnt/with space"])["status"] == "pass"
    missing = node.node_mounts(mounts(), ["/mnt/jfs", "/mnt/ceph"])
    assert missing["status"] == "fail" and missing["message"] == "not mounted: /mnt/ceph"
    assert "(no entry for /mnt/ceph)" in missing["evidence"]["lines"]
    assert node.node_mounts(mounts(), [])["status"] == "skip"
    unreadable = failed_output("/proc/self/mounts", "not_captured", "proc-mounts.txt is not in the capture")
    result = node.node_mounts(unreadable, ["/mnt/jfs"])
    assert result["status"] == "error" and "cf-capture.sh" in result["remedy"]


def diag(statuses, runtime_error=None, rc=0) -> Output:
    tests = [
        {
            "name": name,
            "results": [
                {
                    "entity_group": "GPU",
                    "entity_group_id": 1,
                    "entity_id": gpu,
                    "status": status,
                    **(
                        {
                            "warnings": [
                                {
                                    "warning": f"{name} failed on GPU {gpu}",
                                    "error_id": 1,
                                    "error_category": 1,
                                    "error_severity": 1,
                                }
                            ]
                        }
                        if status == "Fail"
                        else {}
                    ),
                }
                for gpu, status in enumerate(per_gpu)
            ],
            "test_summary": {"status": "Fail" if "Fail" in per_gpu else "Pass"},
        }
        for name, per_gpu in statuses.items()
    ]
    report = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": tests}]}}
    if runtime_error:
        report = {"DCGM Diagnostic": {"runtime_error": runtime_error}}
    return Output("dcgmi diag -r 2 -j", "ok" if rc == 0 else "failed", text=json.dumps(report), rc=rc)


def test_dcgm_diag():
    assert dcgm.gpu_dcgm_diag(diag({"memory": ["Pass"] * 8, "pcie": ["Pass"] * 8}))["status"] == "pass"
    failed = dcgm.gpu_dcgm_diag(diag({"memory": ["Pass", "Fail"] + ["Pass"] * 6}, rc=226))
    assert failed["status"] == "fail"
    assert "Hardware/memory GPU 1: Fail" in failed["evidence"]["lines"]
    assert "  memory failed on GPU 1" in failed["evidence"]["lines"]
    broken = dcgm.gpu_dcgm_diag(diag({}, runtime_error="Unable to connect to host engine"))
    assert broken["status"] == "error" and "nv-hostengine" in broken["remedy"]
    assert (
        dcgm.gpu_dcgm_diag(failed_output("dcgmi diag -r 2 -j", "not_found", "dcgmi not found"))["status"]
        == "skip"
    )
    garbage = dcgm.gpu_dcgm_diag(
        Output("dcgmi diag -r 2 -j", "ok", text="Error: unable to establish a connection")
    )
    assert garbage["status"] == "error"
