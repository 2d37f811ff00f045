"""The replayed tools' entry points: tiny sh shims that print pre-rendered answers.

`hwreplay profile set` writes, for each tool of the hardware, `<bin>/<tool>`:

    if no HWREPLAY_PROFILE/NOW/UPTIME pin is set:
        source <state>/answers/<tool>.sh    # prints and exits when it has these exact arguments
    exec <python> hwreplay.py "$@"          # anything else: rendered live, as before

and the answers themselves (prerender.py) under the state dir:

    answers -> answers-<digest>/            a symlink, swapped atomically
    answers-<digest>/<tool>.sh              the tool's table: a `case` tree over its arguments
    answers-<digest>/<i>.out|.err|.tail     answer i: stdout (its head when timed), stderr, tail

The directory is named after a digest of its content and written under a
temporary name first, so a shim only ever reads a complete set. A table gives up
(and the shim renders live) when the caller points hwreplay at other overrides
or profiles than it was rendered with, when the overrides file changed since, or
(NVIDIA hardware) when the installed NVIDIA packages say otherwise than when it
was rendered: another libnvidia-ml, a fabric manager package installed, removed,
started or stopped (installed.py). The apt hook install.yml adds runs
`hwreplay profile refresh` after each dpkg run, so the answers follow soon.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile

from . import ascend_installed, installed
from .common import DEFAULTS, PROGRAM, Context
from .prerender import Answer

SHIM_MARKER = "hwreplay tool shim"
ANSWERS_LINK = "answers"
ANSWERS_PREFIX = "answers-"
# nvidia-smi's ctime stamp ('Fri Jun 21 02:03:08 2024'), as common.ctime writes it.
DATE_COMMAND = "LC_ALL=C date '+%a %b %e %H:%M:%S %Y'"


def interpreter() -> str:
    """The Python a shim falls back to: the one running `profile set` (no PATH or pyenv look-up)."""
    return sys.executable or "python3"


def shim_text(tool: str) -> str:
    state_default = DEFAULTS["HWREPLAY_STATE_DIR"]
    return (
        "#!/bin/sh\n"
        f"# {SHIM_MARKER} (tests only): {tool} on replayed hardware, written by 'hwreplay profile set'.\n"
        "# Prints the answer pre-rendered for exactly these arguments when there is one;\n"
        "# anything else is rendered by the Python program, as it always was.\n"
        'if [ -z "$HWREPLAY_PROFILE$HWREPLAY_NOW$HWREPLAY_UPTIME" ]; then\n'
        f'    hwreplay_table="${{HWREPLAY_STATE_DIR:-{state_default}}}/{ANSWERS_LINK}/{tool}.sh"\n'
        '    if [ -f "$hwreplay_table" ]; then . "$hwreplay_table"; fi\n'
        "fi\n"
        f"HWREPLAY_TOOL={tool}\n"
        "export HWREPLAY_TOOL\n"
        f'exec {shlex.quote(interpreter())} {shlex.quote(PROGRAM)} "$@"\n'
    )


def is_shim(path: str) -> bool:
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as handle:
            return SHIM_MARKER.encode() in handle.read(512)
    except OSError:
        return False


def answer_files(index: int, answer: Answer) -> dict:
    """File name -> content for answer `index` (empty parts get no file)."""
    parts = {f"{index}.out": answer.stdout, f"{index}.err": answer.stderr, f"{index}.tail": answer.tail}
    return {name: text for name, text in parts.items() if text}


def answer_action(index: int, answer: Answer) -> str:
    """The sh commands that print answer `index` and exit with its status."""
    files = answer_files(index, answer)
    if list(files) == [f"{index}.out"] and answer.tail is None and answer.rc == 0:
        return f'exec cat "$hwreplay_dir/{index}.out"'
    steps = []
    if f"{index}.out" in files:
        steps.append(f'cat "$hwreplay_dir/{index}.out"')
    if answer.tail is not None:
        steps.append(f"printf '%s' \"$({DATE_COMMAND})\"")
        if f"{index}.tail" in files:
            steps.append(f'cat "$hwreplay_dir/{index}.tail"')
    if f"{index}.err" in files:
        steps.append(f'cat "$hwreplay_dir/{index}.err" >&2')
    steps.append(f"exit {answer.rc}")
    return "; ".join(steps)


def case_tree(entries: list, position: int, depth: int) -> list:
    """Nested `case` over positional parameters from `position`; entries are (args, action)."""
    pad = "    " * depth
    args, action = entries[0]
    if position > len(args):
        return [pad + action]
    groups: dict = {}
    for entry in entries:
        groups.setdefault(entry[0][position - 1], []).append(entry)
    lines = [f"{pad}case ${{{position}}} in"]
    for value, group in groups.items():
        lines.append(f"{pad}{shlex.quote(value)})")
        lines += case_tree(group, position + 1, depth + 1)
        lines.append(f"{pad}    ;;")
    lines.append(f"{pad}esac")
    return lines


def same_setting(variable: str, value: str) -> str:
    """A guard that leaves the table unless `variable` selects `value`, as when it was rendered."""
    if value == DEFAULTS[variable]:
        return f'[ -z "${variable}" ] || [ "${variable}" = {shlex.quote(value)} ] || return 0'
    return f'[ "${variable}" = {shlex.quote(value)} ] || return 0'


def installed_guard(ctx: Context) -> list:
    """sh lines that leave the table unless the installed NVIDIA packages look as when it was rendered."""
    seen = installed.fingerprint(ctx)
    units = " ".join(shlex.quote(os.path.join(d, installed.FM_UNIT)) for d in ctx.package_unit_dirs)
    state = shlex.quote(ctx.fm_state)
    return [
        "# ...and render live once the installed NVIDIA packages say otherwise (replaylib/installed.py).",
        same_setting("HWREPLAY_LIB_DIR", ctx.lib_dir),
        same_setting("HWREPLAY_PACKAGE_UNIT_DIRS", ":".join(ctx.package_unit_dirs)),
        same_setting("HWREPLAY_FM_STATE", ctx.fm_state),
        "hwreplay_seen=",
        "for hwreplay_f in "
        + " ".join(f"{shlex.quote(ctx.lib_dir)}/{pattern}" for pattern in installed.NVML_GLOBS)
        + '; do [ -e "$hwreplay_f" ] && hwreplay_seen="$hwreplay_seen $hwreplay_f"; done',
        f'[ "$hwreplay_seen" = {shlex.quote(seen["nvml"])} ] || return 0',
        "hwreplay_fm=none",
        f'for hwreplay_f in {units}; do [ -e "$hwreplay_f" ] && hwreplay_fm=stopped; done',
        f'if [ "$hwreplay_fm" = stopped ] && [ -f {state} ]; then',
        f"    read -r hwreplay_pid < {state} || :",
        '    case "$hwreplay_pid" in',
        "        ''|*[!0-9]*) ;;",
        '        *) [ -d "/proc/$hwreplay_pid" ] && hwreplay_fm=running ;;',
        "    esac",
        "fi",
        f'[ "$hwreplay_fm" = {seen["fm"]} ] || return 0',
    ]


def table_text(tool: str, indexed: list, ctx: Context, answers_dir: str, nvidia: bool = False) -> str:
    """The sourced table of `tool`: guards, then a `case` on the argument count and each argument."""
    overrides = ctx.overrides_path
    table = shlex.quote(os.path.join(answers_dir, f"{tool}.sh"))
    lines = [
        f"# hwreplay: answers of {tool} pre-rendered by 'hwreplay profile set' (sourced by its shim).",
        f"hwreplay_dir={shlex.quote(answers_dir)}",
        "# Rendered with these profiles and overrides: with others, render live.",
        same_setting("HWREPLAY_PROFILE_DIR", ctx.profile_dir),
        same_setting("HWREPLAY_OVERRIDES", overrides),
    ]
    if os.path.exists(overrides):
        lines.append("# ...and render live once the overrides file is gone or newer than this table.")
        lines.append(f"[ -f {shlex.quote(overrides)} ] || return 0")
        lines.append(f"[ {shlex.quote(overrides)} -nt {table} ] && return 0")
    else:
        lines.append("# ...and render live once an overrides file appears.")
        lines.append(f"[ -e {shlex.quote(overrides)} ] && return 0")
    if nvidia:
        lines += installed_guard(ctx)
    if tool in ascend_installed.GUARDED_TOOLS:
        lines += ascend_installed.guard(ctx)
    by_count: dict = {}
    for index, answer in indexed:
        args = answer.argv[1:]
        by_count.setdefault(len(args), []).append((args, answer_action(index, answer)))
    lines.append("case $# in")
    for count, entries in sorted(by_count.items()):
        lines.append(f"{count})")
        lines += case_tree(entries, 1, 1)
        lines.append("    ;;")
    lines.append("esac")
    return "\n".join(lines) + "\n"


def answer_set(ctx: Context, answers: list, answers_dir: str, nvidia: bool = False) -> dict:
    """Every file of the answers directory: file name -> content (`nvidia`: guard on installed packages)."""
    files: dict = {}
    by_tool: dict = {}
    for index, answer in enumerate(answers):
        files.update(answer_files(index, answer))
        by_tool.setdefault(answer.argv[0], []).append((index, answer))
    for tool, indexed in by_tool.items():
        files[f"{tool}.sh"] = table_text(tool, indexed, ctx, answers_dir, nvidia)
    if set(by_tool) & set(ascend_installed.GUARDED_TOOLS):
        files[ascend_installed.SEEN_FILE] = ascend_installed.seen_text(ctx)  # for refresh_if_stale
    return files


def digest(files: dict) -> str:
    return hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest()[:16]


def write_answers(directory: str, files: dict) -> None:
    for name, content in files.items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="ascii", newline="") as handle:
            handle.write(content)
        os.chmod(path, 0o644)
    os.chmod(directory, 0o755)  # mkdtemp made it private; validation may not run as root


def freshen_tables(directory: str, overrides: str) -> None:
    """Keep tables newer than an overrides file that was rewritten without changing any answer."""
    try:
        changed = os.stat(overrides).st_mtime_ns
    except OSError:
        return
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.endswith(".sh") and os.stat(path).st_mtime_ns <= changed:
            os.utime(path)


def sync_answers(ctx: Context, answers: list, nvidia: bool = False) -> list:
    """Make <state>/answers hold exactly `answers`; switches by renaming, never edits in place.

    `nvidia`: the hardware has NVIDIA GPUs, so the tables also check the installed NVIDIA packages."""
    state = os.path.realpath(ctx.state_dir)
    link = os.path.join(state, ANSWERS_LINK)
    name = ANSWERS_PREFIX + digest(answer_set(ctx, answers, "", nvidia))
    final = os.path.join(state, name)
    files = answer_set(ctx, answers, final, nvidia)
    previous = os.readlink(link) if os.path.islink(link) else None
    if previous == name and os.path.isdir(final) and set(os.listdir(final)) == set(files):
        freshen_tables(final, ctx.overrides_path)
        return []
    os.makedirs(state, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=name + ".tmp-", dir=state)
    try:
        write_answers(tmp, files)
        if os.path.isdir(final):
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    tmp_link = os.path.join(state, f".{ANSWERS_LINK}.tmp-{os.getpid()}")
    if os.path.lexists(tmp_link):
        os.unlink(tmp_link)
    os.symlink(name, tmp_link)
    if os.path.isdir(link) and not os.path.islink(link):
        shutil.rmtree(link)
    os.replace(tmp_link, link)
    remove_old_answers(state, keep={name, previous})
    return [f"answers {link}: pre-rendered {len(answers)} commands ({name})"]


def remove_old_answers(state: str, keep: set) -> None:
    """Drop older answer sets, keeping the previous one for a shim that is still reading it."""
    for entry in os.listdir(state):
        if entry.startswith(ANSWERS_PREFIX) and entry not in keep:
            shutil.rmtree(os.path.join(state, entry), ignore_errors=True)
