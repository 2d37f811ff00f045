"""The `clusterforge` command line."""

from __future__ import annotations

import sys
import traceback

import click

from clusterforge import __version__
from clusterforge.commands import COMMAND_GROUPS
from clusterforge.errors import EXIT_INTERNAL, EXIT_INVALID, ClusterForgeError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
DEBUG_HELP = "Show tracebacks of internal errors."
_debug = {"on": False}  # set by --debug wherever it is given; read when an internal error is reported


def _set_debug(_ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        _debug["on"] = True


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="clusterforge")
@click.option("--debug", is_flag=True, envvar="CLUSTERFORGE_DEBUG", callback=_set_debug, help=DEBUG_HELP)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """ClusterForge: from racked servers to validated, schedulable AI capacity.

    \b
    Exit codes: 0 success, 1 internal error, 2 invalid input,
                3 checks failed, 4 environment not ready.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _accept_debug_everywhere(command: click.Command) -> None:
    """`--debug` after any sub-command too: errors say "rerun with --debug" wherever it was typed."""
    for sub in command.commands.values() if isinstance(command, click.Group) else []:
        sub.params.append(
            click.Option(["--debug"], is_flag=True, expose_value=False, callback=_set_debug, help=DEBUG_HELP)
        )
        _accept_debug_everywhere(sub)


for group in COMMAND_GROUPS:
    cli.add_command(group)
_accept_debug_everywhere(cli)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and map every outcome onto the documented exit codes."""
    _debug["on"] = False
    try:
        rc = cli.main(args=argv, prog_name="clusterforge", standalone_mode=False)
    except ClusterForgeError as err:
        click.echo(err.render(), err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as err:  # usage errors: bad flags or arguments
        err.show()
        sys.exit(EXIT_INVALID if err.exit_code == 2 else err.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as err:  # last line of defence: never a bare traceback
        if _debug["on"]:
            traceback.print_exc()
        click.echo(
            f"internal error: {type(err).__name__}: {err}\n  (a bug: rerun with --debug and report it)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(rc if isinstance(rc, int) else 0)
