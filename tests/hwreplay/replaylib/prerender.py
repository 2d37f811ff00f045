"""Pre-rendered answers: the commands node validation runs, rendered once per profile switch.

A replayed command costs a Python start-up (~0.1 s) and node validation of an
Ascend node runs 33 of them, so `hwreplay profile set` renders the validator's
commands in advance and the tool shims (shims.py) print them with `cat`.

The command list is VALIDATOR_COMMANDS below: nodes have only hwreplay, not
cfcore. Where cfcore is importable (the controller: tests, the benchmark) its
command table (cfcore.collect.CAPTURE_LAYOUT) is added, and a unit test checks
that the explicit list covers it, so nodes answer the same commands.

An answer must be what live rendering prints at any moment. Each command is
rendered at two different clocks: equal outputs are stored as they are; outputs
that differ only in the ctime stamp nvidia-smi -q prints are stored as the text
before and after it (the shim prints the time of the call between them);
anything else is left to live rendering.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ascend_installed import nic_device_id
from .common import Context, ReplayError, ctime
from .tools import TOOLS, installed, run_tool

DEVICE = "{n}"  # stands for each NPU id, as in cfcore's table
# What cfcore.validate and cfcore.facts run (cfcore.collect.CAPTURE_LAYOUT), replayed tools only.
VALIDATOR_COMMANDS = (
    ("nvidia-smi", "-q", "-x"),
    ("nvidia-smi", "-q"),
    ("nvidia-smi", "nvlink", "-s"),
    ("dmesg",),
    ("lspci", "-vvv", "-nn", "-D", "-d", "10de:"),
    ("lspci", "-vvv", "-nn", "-D", "-d", "15b3:"),
    ("lspci", "-vvv", "-nn", "-D", "-d", "19e5:"),
    ("ibstat",),
    ("modinfo", "-F", "license", "nvidia"),
    ("npu-smi", "info"),
    ("npu-smi", "info", "-t", "board", "-i", DEVICE),
    ("npu-smi", "info", "-t", "health", "-i", DEVICE),
    ("hccn_tool", "-i", DEVICE, "-ip", "-g"),
    ("hccn_tool", "-i", DEVICE, "-link", "-g"),
    ("hccn_tool", "-i", DEVICE, "-net_health", "-g"),
    # What the hccn role's hccn_config module reads besides (design.md, NPU NIC plan).
    ("hccn_tool", "-i", DEVICE, "-gateway", "-g"),
    ("hccn_tool", "-i", DEVICE, "-netdetect", "-g"),
    ("ppu-smi", "-L"),
    ("ppu-smi", "-q"),
)
# Two clocks (HWREPLAY_NOW, HWREPLAY_UPTIME) differing in every ctime field.
CLOCKS = (("1718935388", "86400"), ("1754366629.5", "1234.25"))


@dataclass
class Answer:
    """One command's pre-rendered outcome.

    `tail` is None for a fixed output (`stdout`); otherwise the output is
    `stdout` + the ctime of the moment it runs + `tail`.
    """

    argv: tuple
    rc: int
    stdout: str
    stderr: str
    tail: str | None = None


def cfcore_templates() -> tuple:
    """cfcore's command table when this Python can import it (the controller), else ()."""
    try:
        from cfcore.collect import CAPTURE_LAYOUT
    except ImportError:
        return ()
    return tuple(tuple(argv) for argv, _capture_file in CAPTURE_LAYOUT)


def command_templates(extra: tuple = ()) -> tuple:
    """VALIDATOR_COMMANDS, then those of `extra` that run a replayed tool, without repeats."""
    ordered = dict.fromkeys(VALIDATOR_COMMANDS)
    ordered.update(dict.fromkeys(argv for argv in extra if argv and argv[0] in TOOLS))
    return tuple(ordered)


def expand(templates: tuple, profile: dict) -> list:
    """The argv of `templates` that the profile's hardware has a tool for, {n} over its NPU ids.

    hccn_tool's {n} goes over its device ids instead (one per chip: the Phy-IDs on A3)."""
    npus = (profile.get("ascend") or {}).get("npus", [])
    device_ids = {
        "npu-smi": list(dict.fromkeys(str(npu["id"]) for npu in npus)),
        "hccn_tool": [str(nic_device_id(npu)) for npu in npus],
    }
    commands = []
    for template in templates:
        if not installed(profile, template[0]):
            continue
        if DEVICE not in template:
            commands.append(tuple(template))
            continue
        for npu_id in device_ids.get(template[0], device_ids["npu-smi"]):
            commands.append(tuple(npu_id if part == DEVICE else part for part in template))
    return commands


def render_answer(ctx: Context, profile: dict, argv: tuple) -> Answer | None:
    """`argv` rendered for any moment, or None when it must stay live (see the module docstring)."""
    results = []
    for now, uptime in CLOCKS:
        clock = Context(env=dict(ctx.env, HWREPLAY_NOW=now, HWREPLAY_UPTIME=uptime))
        try:
            results.append(run_tool(clock, argv[0], list(argv[1:]), profile))
        except ReplayError:
            return None  # live rendering reports it, the same way each time
    first, second = results
    if not all(text.isascii() for text in (first.stdout, first.stderr, second.stdout)):
        return None  # bytes on stdout would depend on the caller's locale
    if (first.rc, first.stderr) != (second.rc, second.stderr):
        return None
    if first.stdout == second.stdout:
        return Answer(argv, first.rc, first.stdout, first.stderr)
    stamp = ctime(float(CLOCKS[0][0]))
    if first.stdout.count(stamp) != 1:
        return None
    head, tail = first.stdout.split(stamp)
    if head + ctime(float(CLOCKS[1][0])) + tail != second.stdout:
        return None
    return Answer(argv, first.rc, head, first.stderr, tail)


def render_answers(ctx: Context, profile: dict) -> list:
    """Answers of every validator command of this hardware that can be pre-rendered."""
    commands = expand(command_templates(cfcore_templates()), profile)
    answers = (render_answer(ctx, profile, argv) for argv in commands)
    return [answer for answer in answers if answer is not None]
