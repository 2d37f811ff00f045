"""`clusterforge validate`."""

import click


@click.command()
def validate() -> None:
    """(being built)"""
