"""`clusterforge inventory`."""

import click


@click.group()
def inventory() -> None:
    """(being built)"""
