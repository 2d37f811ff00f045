"""`nvidia-smi -q -x`: the <nvidia_smi_log> XML document (DTD nvsmi_device_v10..v12+).

Element names differ between driver branches (535 <power_draw>, 550+ <instant_power_draw>
and <average_power_draw>; older <power_readings> vs <gpu_power_readings>); each lookup
lists the names it accepts and unknown elements are ignored. Lines nvidia-smi prints
before the XML (e.g. 'WARNING: infoROM is corrupted at gpu ...') are kept in
`tool_messages`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from .common import (
    ParseError,
    na,
    normalize_pci_bus_id,
    not_output,
    require_content,
    to_float,
    to_int,
    yes_no,
)
from .nvidia_common import blank_gpu, check_driver_failure, device_handle_errors, lost_gpus_only

KIND = "nvidia-smi-q-xml"
WHAT = "nvidia-smi -q -x"
FIX = "capture it with: nvidia-smi -q -x > FILE"


def _text(element: ET.Element | None, *paths: str) -> str | None:
    """Text of the first of `paths` (ElementTree paths) present under `element`."""
    if element is None:
        return None
    for path in paths:
        found = element.find(path)
        if found is not None and found.text is not None:
            return found.text.strip()
    return None


def _ecc_sum(section: ET.Element | None, word: str) -> int | None:
    """Sum of the <*{word}*> counters of an <ecc_errors>/<volatile|aggregate> section."""
    if section is None:
        return None
    legacy = section.find("double_bit" if word == "uncorrectable" else "single_bit")
    if legacy is not None:  # pre-Ampere layout: <double_bit><total>
        return to_int(_text(legacy, "total"))
    counts = [
        to_int(child.text)
        for child in section
        if word in child.tag and (word != "correctable" or "uncorrectable" not in child.tag)
    ]
    known = [count for count in counts if count is not None]
    return sum(known) if known else None


def gpu_record(element: ET.Element, index: int) -> dict:
    gpu = blank_gpu(index)
    link = "pci/pci_gpu_link_info/"
    ecc = element.find("ecc_errors")
    volatile = ecc.find("volatile") if ecc is not None else None
    aggregate = ecc.find("aggregate") if ecc is not None else None
    power = "gpu_power_readings/", "power_readings/"
    gpu.update(
        name=na(_text(element, "product_name")),
        uuid=na(_text(element, "uuid")),
        serial=na(_text(element, "serial")),
        pci_bus_id=normalize_pci_bus_id(_text(element, "pci/pci_bus_id") or element.get("id")),
        pcie_gen_max=to_int(
            _text(element, link + "pcie_gen/max_link_gen", link + "pcie_gen/max_device_link_gen")
        ),
        pcie_gen_current=to_int(
            _text(element, link + "pcie_gen/current_link_gen", link + "pcie_gen/device_current_link_gen")
        ),
        pcie_width_max=to_int(_text(element, link + "link_widths/max_link_width")),
        pcie_width_current=to_int(_text(element, link + "link_widths/current_link_width")),
        persistence_mode=na(_text(element, "persistence_mode")),
        mig_mode=na(_text(element, "mig_mode/current_mig")),
        ecc_mode=na(_text(element, "ecc_mode/current_ecc")),
        ecc_uncorrected_volatile=_ecc_sum(volatile, "uncorrectable"),
        retired_pages_pending=yes_no(
            _text(element, "retired_pages/pending_blacklist", "retired_pages/pending_retirement")
        ),
        remapped_rows_pending=yes_no(_text(element, "remapped_rows/remapped_row_pending")),
        remapped_rows_failure=yes_no(_text(element, "remapped_rows/remapped_row_failure")),
        temperature_c=to_int(_text(element, "temperature/gpu_temp")),
        power_draw_w=to_float(
            _text(
                element,
                *(
                    prefix + tag
                    for tag in ("power_draw", "instant_power_draw", "average_power_draw")
                    for prefix in power
                ),
            )
        ),
        memory_total_mib=to_int(_text(element, "fb_memory_usage/total")),
        ecc_corrected_volatile=_ecc_sum(volatile, "correctable"),
        ecc_uncorrected_aggregate=_ecc_sum(aggregate, "uncorrectable"),
        retired_pages_single_bit=to_int(
            _text(element, "retired_pages/multiple_single_bit_retirement/retired_count")
        ),
        retired_pages_double_bit=to_int(_text(element, "retired_pages/double_bit_retirement/retired_count")),
        remapped_rows_correctable=to_int(_text(element, "remapped_rows/remapped_row_corr")),
        remapped_rows_uncorrectable=to_int(_text(element, "remapped_rows/remapped_row_unc")),
        memory_used_mib=to_int(_text(element, "fb_memory_usage/used")),
        power_limit_w=to_float(_text(element, *(prefix + "current_power_limit" for prefix in power))),
        vbios_version=na(_text(element, "vbios_version")),
        fabric_state=na(_text(element, "fabric/state")),
        fabric_status=na(_text(element, "fabric/status")),
        pcie_replays=to_int(_text(element, "pci/replay_counter")),
    )
    return gpu


def _split_preamble(text: str) -> tuple[list[str], str, int]:
    """(lines before the XML, the XML, how many lines were skipped)."""
    lines = text.splitlines(True)
    for number, line in enumerate(lines):
        if line.lstrip().startswith("<"):
            preamble = [raw.strip() for raw in lines[:number] if raw.strip()]
            return preamble, "".join(lines[number:]).lstrip(), number
    return [raw.strip() for raw in lines if raw.strip()], "", len(lines)


def parse_nvidia_smi_q_xml(text: str) -> dict:
    """Parse `nvidia-smi -q -x` into {driver_version, cuda_version, gpus[], ...}."""
    require_content(KIND, text, WHAT, FIX)
    check_driver_failure(KIND, text)
    preamble, document, skipped = _split_preamble(text)
    if not document:
        errors = device_handle_errors(text)
        if errors:
            raise lost_gpus_only(KIND, text, errors)
        raise not_output(KIND, WHAT, text, FIX, "no XML document")
    if "<!ENTITY" in document:  # nvidia-smi never declares entities; refuse expansion tricks
        raise not_output(KIND, WHAT, text, FIX, "the XML declares entities")
    try:
        root = ET.fromstring(document)
    except ET.ParseError as err:
        line, _column = err.position
        lines = document.splitlines()
        bad = lines[line - 1] if 0 < line <= len(lines) else None
        reason = "truncated XML" if line >= len(lines) else "invalid XML"
        raise ParseError(KIND, f"not {WHAT} output ({reason}: {err})", line + skipped, bad, fix=FIX) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(
            KIND, f"not {WHAT} output: the XML root is <{root.tag}>, not <nvidia_smi_log>", fix=FIX
        )
    elements = root.findall("gpu")
    if not elements:
        raise ParseError(KIND, "nvidia-smi -q -x output lists no <gpu> element", fix=FIX)
    return {
        "driver_version": na(_text(root, "driver_version")),
        "cuda_version": na(_text(root, "cuda_version")),
        "attached_gpus": to_int(_text(root, "attached_gpus")),
        "timestamp": na(_text(root, "timestamp")),
        "gpus": [gpu_record(element, index) for index, element in enumerate(elements)],
        "tool_messages": preamble,
    }
