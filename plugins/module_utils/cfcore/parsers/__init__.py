"""Parsers of vendor tool outputs (nvidia-smi, npu-smi, hccn_tool, ibstat, lspci, kernel log)."""
