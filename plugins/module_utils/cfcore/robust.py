"""Robust statistics: is a figure far from its peers (or from its own history)?

One implementation for the fleet outliers of `clusterforge validate`
(cli/clusterforge/validation/outliers.py) and the drift of `clusterforge
inspect trend` (cfcore/trend.py):

    median, MAD = median(|x - median|), robust z = 0.6745 * (x - median) / MAD

(Iglewicz and Hoaglin): |z| > 3.5 deviates. When MAD is 0 (most samples equal,
typical of link widths, rates and error counters) a value more than
REL_TOLERANCE of the median away deviates instead, so any change of an
all-zero figure does. Stdlib only.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

Z_LIMIT = 3.5
Z_SCALE = 0.6745  # makes the MAD consistent with the standard deviation of a normal distribution
REL_TOLERANCE = 0.05
METHOD = (
    f"robust z = {Z_SCALE}*(x-median)/MAD, |z| > {Z_LIMIT}; "
    f"MAD = 0: |x-median| > {REL_TOLERANCE:.0%} of the median"
)


@dataclass(frozen=True)
class Deviation:
    """How far `value` sits from `median`; `robust_z` is None when MAD is 0."""

    value: float
    median: float
    mad: float
    robust_z: float | None
    deviates: bool

    @property
    def side(self) -> str:
        return "above" if self.value > self.median else "below"


def numeric(value) -> float | None:
    """A finite int or float as a float; None for anything else (bools are flags, not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:  # an int no float can hold (10**400) is no figure either
        return None


def median_mad(samples: list[float]) -> tuple[float, float]:
    middle = statistics.median(samples)
    return middle, statistics.median([abs(v - middle) for v in samples])


def deviation(value: float, samples: list[float], worse: str = "both") -> Deviation:
    """`value` against `samples`; `worse` is 'high', 'low' or 'both': only that side may deviate."""
    middle, mad = median_mad(samples)
    offset = value - middle
    z = round(Z_SCALE * offset / mad, 2) if mad > 0 else None
    harmless = (worse == "high" and offset <= 0) or (worse == "low" and offset >= 0)
    if harmless:
        far = False
    elif z is not None:
        far = abs(z) > Z_LIMIT
    else:
        far = abs(offset) > REL_TOLERANCE * abs(middle)
    return Deviation(value, middle, mad, z, far)
