"""The benchmark keeps working (it is not run by the test suite otherwise); no timing is asserted."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_validate.py"


def test_synthetic_results_have_the_node_result_shape():
    sys.path.insert(0, str(BENCH.parent))
    try:
        import bench_validate
    finally:
        sys.path.remove(str(BENCH.parent))
    from clusterforge.validation.results import normalise

    results = bench_validate.synthetic_results(300)
    for raw in results:
        assert normalise(raw["host"], raw, "quick", raw["node_sku"])["status"] == raw["status"]
    assert any(r["status"] == "fail" for r in results)
    assert len({r["host"] for r in results}) == 300


def test_report_part_prints_its_figures():
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--skip-node", "--nodes", "300"],
        capture_output=True,
        text=True,
        check=True,
    )
    for figure in ("reports: outlier pass", "reports: junit", "reports: total", "reports: peak memory"):
        assert figure in proc.stdout
    assert "300 nodes" in proc.stdout
