"""The outcome of one command or file read, as the checks see it.

Kept apart from collect.py so the check logic can be exercised with plain
parsed dicts (`Output.from_data`) without any source or parser.
"""

from __future__ import annotations


class Output:
    """One command's (or file's) outcome, parsed once and shared by every check.

    `state` is one of:
      ok            ran and (when a parser kind was given) parsed
      not_found     the tool is not installed (rc 127)
      timeout       it did not finish in time (rc 124)
      not_captured  a capture directory lacks the file
      failed        it exited non-zero (stdout may still hold usable output)
      unparsable    it printed something that is not its output
    """

    def __init__(
        self,
        command: str,
        state: str,
        text: str = "",
        stderr: str = "",
        rc: int = 0,
        data: dict | None = None,
        error: str = "",
        file: str | None = None,
    ):
        self.command = command
        self.state = state
        self.text = text
        self.stderr = stderr
        self.rc = rc
        self.data = data
        self.error = error
        self.file = file
        self._lines: list | None = None
        self._memo: dict = {}

    @classmethod
    def from_data(cls, command: str, data: dict, text: str = "") -> Output:
        """An output known by its parsed form only (unit tests of check logic)."""
        return cls(command, "ok", text=text, data=data)

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    @property
    def usable(self) -> bool:
        """Parsed data exists, even if the tool also complained (e.g. one GPU unreachable)."""
        return self.data is not None

    def lines(self) -> list[str]:
        """The text's lines, split once (evidence looks them up by index)."""
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def index(self, name: str, build):
        """`build(lines)` computed once per output: evidence lookups stay linear in the output's size."""
        if name not in self._memo:
            self._memo[name] = build(self.lines())
        return self._memo[name]

    def __repr__(self) -> str:
        return f"Output({self.command!r}, {self.state!r}, rc={self.rc})"
