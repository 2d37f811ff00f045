"""ClusterForge: bring bare-metal AI clusters from racked servers to validated capacity."""

__version__ = "0.1.0"
