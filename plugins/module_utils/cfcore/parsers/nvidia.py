"""Parsers of nvidia-smi in all its forms; one import point for callers.

Every form returns {"driver_version", "cuda_version", "gpus": [...]} (None where the
form does not print it); each GPU carries every key of `GPU_FIELDS`:
  index (int: nvidia-smi's index; for -q/-q -x the position in the output, which is
  the index order), name, uuid, serial, pci_bus_id ('0000:18:00.0'),
  pcie_gen_max/current (int), pcie_width_max/current (int lanes),
  persistence_mode, mig_mode, ecc_mode: the strings nvidia-smi prints, "Enabled" or
  "Disabled" (None when N/A, e.g. mig_mode on a GPU without MIG),
  ecc_uncorrected_volatile (int, sum of the volatile uncorrectable counters),
  retired_pages_pending, remapped_rows_pending, remapped_rows_failure (bool),
  temperature_c (int), power_draw_w (float), memory_total_mib (int),
  plus the extras listed in GPU_FIELDS.
`tool_messages` lists lines nvidia-smi printed outside its format (warnings such as
'WARNING: infoROM is corrupted', errors such as 'Unable to determine the device handle
for GPU...'); the validator decides what they mean.
"""

from __future__ import annotations

from .nvidia_common import GPU_FIELDS, QUERY_GPU_FIELDS, blank_gpu, check_driver_failure
from .nvidia_csv import parse_nvidia_smi_csv
from .nvidia_links import parse_nvidia_smi_nvlink, parse_nvidia_smi_topo
from .nvidia_text import parse_nvidia_smi_q
from .nvidia_xml import parse_nvidia_smi_q_xml

__all__ = [
    "GPU_FIELDS",
    "QUERY_GPU_FIELDS",
    "blank_gpu",
    "check_driver_failure",
    "parse_nvidia_smi_csv",
    "parse_nvidia_smi_nvlink",
    "parse_nvidia_smi_q",
    "parse_nvidia_smi_q_xml",
    "parse_nvidia_smi_topo",
]
