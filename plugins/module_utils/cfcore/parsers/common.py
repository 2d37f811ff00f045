"""What every parser shares: the error type, value conversions and PCI address normalisation.

Conventions every parser follows (the JSON shapes other code relies on):
- "N/A", "[N/A]", "Not Supported", "[Not Supported]", "NA", "-", anything in square
  brackets ("[Requested functionality has been deprecated]") and empty values become None.
- Numbers are int or float, units stripped ("81559 MiB" -> 81559, "16x" -> 16).
- PCI addresses are lower-case "dddd:bb:dd.f" (`normalize_pci_bus_id`), so facts from
  nvidia-smi, npu-smi, lspci and the kernel log can be joined.
- Input that is not the tool's output raises ParseError; a tool's error message (the
  driver is not loaded, NVML failed) raises ParseError saying so.
"""

from __future__ import annotations

import re

SOURCE_HEADER = "# source:"

_NA_WORDS = {
    "",
    "-",
    "na",
    "n/a",
    "not supported",
    "not available",
    "unknown error",
    "requested functionality has been deprecated",
    "insufficient permissions",
}

_LEADING_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)")
_PCI_ADDRESS = re.compile(
    r"^(?:PCI:)?(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.([0-7]))?$"
)


class ParseError(Exception):
    """The input is not the output of the tool the parser reads.

    `kind` is the parser's KIND name, `message` says what is wrong, `line` is the
    1-based line number in the input (None when the whole input is at fault),
    `text` the offending line, `fix` how to capture a usable output.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        line: int | None = None,
        text: str | None = None,
        fix: str | None = None,
    ):
        self.kind = kind
        self.message = message
        self.line = line
        self.text = text
        self.fix = fix
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        if self.text is None:
            return f"{self.message} (line {self.line})"
        snippet = self.text.strip()
        if len(snippet) > 80:
            snippet = snippet[:77] + "..."
        return f"{self.message} (line {self.line}: {snippet!r})"


def strip_source_header(text: str) -> str:
    """Blank out a first line starting with '# source:' (captures in the shared folder carry one).

    The line is replaced by an empty line rather than removed so that line numbers in
    errors still match the file.
    """
    if not text.startswith(SOURCE_HEADER):
        return text
    newline = text.find("\n")
    return "" if newline < 0 else text[newline:]


def is_na(value: str | None) -> bool:
    if value is None:
        return True
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        return True
    return text.lower() in _NA_WORDS


def na(value: str | None) -> str | None:
    """The value stripped, or None for the tools' "not available" spellings."""
    return None if is_na(value) else value.strip()  # type: ignore[union-attr]


def to_number(value: str | None) -> int | float | None:
    """The leading number of a value with its unit ("71.97 W" -> 71.97, "16x" -> 16)."""
    if is_na(value):
        return None
    match = _LEADING_NUMBER.match(value)  # type: ignore[arg-type]
    if not match:
        return None
    text = match.group(1)
    return float(text) if "." in text else int(text)


def to_int(value: str | None) -> int | None:
    number = to_number(value)
    if number is None:
        return None
    return int(number)


def to_float(value: str | None) -> float | None:
    number = to_number(value)
    return None if number is None else float(number)


def yes_no(value: str | None) -> bool | None:
    """Yes/No (also True/False, 1/0) as a boolean; None when not available."""
    text = na(value)
    if text is None:
        return None
    lowered = text.lower()
    if lowered in ("yes", "true", "1"):
        return True
    if lowered in ("no", "false", "0"):
        return False
    return None


def normalize_pci_bus_id(value: str | None) -> str | None:
    """'00000000:18:00.0', 'PCI:0000:18:00', '18:00.0', '0000:C1:00.0' -> '0000:18:00.0'.

    None when the value is not available or not a PCI address.
    """
    text = na(value)
    if text is None:
        return None
    match = _PCI_ADDRESS.match(text)
    if not match:
        return None
    domain, bus, device, function = match.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{int(function or '0')}"


def first_content_line(text: str) -> tuple[int | None, str | None]:
    """(1-based number, text) of the first non-blank line; (None, None) for blank input."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            return number, line
    return None, None


def require_content(kind: str, text: str, what: str, fix: str | None = None) -> None:
    """Raise ParseError for empty input or an HTML page instead of the tool's output."""
    if text is None or not text.strip():
        raise ParseError(kind, f"empty input: no {what} output", fix=fix)
    number, line = first_content_line(text)
    head = (line or "").strip().lower()
    if head.startswith(("<!doctype html", "<html")):
        raise ParseError(kind, f"not {what} output: an HTML page", number, line, fix=fix)


def not_output(kind: str, what: str, text: str, fix: str | None = None, why: str = "") -> ParseError:
    """The standard 'not X output' error, pointing at the first line of the input."""
    number, line = first_content_line(text)
    message = f"not {what} output"
    if why:
        message += ": " + why
    return ParseError(kind, message, number, line, fix=fix)


def snake_key(label: str) -> str:
    """'PCIe Bus Info' -> 'pcie_bus_info', 'Aicore Usage Rate(%)' -> 'aicore_usage_rate_pct'."""
    text = label.strip().replace("%", "pct")
    text = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")
    return text.lower()


def natural_key(name: str) -> list:
    """Sort key putting mlx5_2 before mlx5_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
