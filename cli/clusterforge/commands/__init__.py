"""Command groups of the CLI, one module each."""

from clusterforge.commands.add_node import add_node
from clusterforge.commands.backup import backup, restore
from clusterforge.commands.bringup import bringup
from clusterforge.commands.bundle import bundle
from clusterforge.commands.demo import demo
from clusterforge.commands.facts import facts
from clusterforge.commands.inspect import inspect
from clusterforge.commands.inventory import inventory
from clusterforge.commands.lab import lab
from clusterforge.commands.runs import runs
from clusterforge.commands.upgrade import upgrade
from clusterforge.commands.validate import validate

COMMAND_GROUPS = [
    inventory,
    lab,
    facts,
    validate,
    inspect,
    bringup,
    add_node,
    upgrade,
    runs,
    bundle,
    backup,
    restore,
    demo,
]
