"""`clusterforge facts`."""

import click


@click.group()
def facts() -> None:
    """(being built)"""
