"""Reading the shared real-output captures: command sections, sysfs trees in text form.

Captures published in documentation and test suites often hold several commands, each
line of a command followed by its output ('/usr/local/bin/npu-smi info -t board -i 0',
'$ hccn_tool -i 3 -ip -g'); `sections` splits them. Two sysfs trees are stored as text
(one file per line, or the ttar format of prometheus/procfs); `write_flattened_tree`
and `write_ttar_tree` rebuild them as directories for read_sysfs_infiniband.
"""

from __future__ import annotations

import re
from pathlib import Path

# A line that runs a command: a shell prompt, an absolute tool path, or a bare tool name.
_COMMAND_LINE = re.compile(r"^(?:\$\s+|/usr/local/\S+/)?(npu-smi|hccn_tool|cat|lspci|pip)\b(.*)$")
_PROMPT = re.compile(r"^\$\s+(\S+)(.*)$")
# Documentation artefacts around or inside an output: notes, elisions, code fences.
_DOC_NOISE = re.compile(r"^(?:>|\.\.\.$|```)")


class Section:
    """One command of a capture and the lines it printed."""

    def __init__(self, command: str, line: int):
        self.command = command
        self.line = line
        self.body: list[str] = []

    @property
    def text(self) -> str:
        return "\n".join(self.body) + "\n"


def _command(line: str) -> str | None:
    stripped = line.strip()
    match = _COMMAND_LINE.match(stripped) or _PROMPT.match(stripped)
    if not match:
        return None
    command = (match.group(1) + match.group(2)).split(" # ")[0]  # drop '# comment' of blog captures
    return " ".join(command.split())


def sections(text: str) -> list[Section]:
    """The commands of a capture with their outputs, in order (text before the first command is dropped)."""
    found: list[Section] = []
    for number, line in enumerate(text.splitlines(), 1):
        command = _command(line)
        if command is not None:
            found.append(Section(command, number))
        elif found and not _DOC_NOISE.match(line.strip()):
            found[-1].body.append(line)
    return found


def write_flattened_tree(text: str, root: Path) -> Path:
    """'mlx5_0/ports/1/state: 4: ACTIVE' lines -> <root>/sys/class/infiniband/mlx5_0/ports/1/state."""
    base = root / "sys" / "class" / "infiniband"
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        relative, _sep, content = line.partition(": ")
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content.replace(" | ", "\n") + "\n")
    return root


def write_ttar_tree(text: str, root: Path) -> Path:
    """Unpack a ttar archive ('Path:', 'Lines:', content, 'Mode:'), keeping the part under sys/."""
    lines = text.splitlines()
    position = 0
    while position < len(lines):
        line = lines[position]
        position += 1
        if line.startswith("Directory: "):
            (root / _under_sys(line[len("Directory: ") :])).mkdir(parents=True, exist_ok=True)
        elif line.startswith("Path: "):
            path = root / _under_sys(line[len("Path: ") :])
            count = int(lines[position].split(":", 1)[1])
            content = lines[position + 1 : position + 1 + count]
            position += 1 + count
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(content) + "\n")
    return root


def _under_sys(path: str) -> str:
    return path[path.index("sys/") :] if "sys/" in path else path
