"""`clusterforge lab`."""

import click


@click.group()
def lab() -> None:
    """(being built)"""
