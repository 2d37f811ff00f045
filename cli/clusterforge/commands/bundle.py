"""`clusterforge bundle`: offline bundles for air-gapped installs (docs/design.md, "Air-gapped installs")."""

from __future__ import annotations

import signal
import sys
import urllib.parse
from pathlib import Path

import click
from rich.console import Console

from clusterforge.errors import ChecksFailed, InvalidInput


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


@click.group()
def bundle() -> None:
    """Offline bundles: build one from an inventory, verify it, serve it from a bastion."""


@bundle.command("build")
@click.option("-i", "--inventory", required=True, type=click.Path(), help="Inventory file or directory.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="The bundle folder.")
@click.option(
    "--vendor",
    type=click.Path(file_okay=False),
    help="The site's vendor packages (Ascend .run files, NVIDIA repository mirrors): by name or URL path.",
)
@click.option("-l", "--limit", help="Only these hosts' needs (an Ansible host pattern).")
@click.option(
    "--build-image",
    "build_images",
    multiple=True,
    metavar="OS=IMAGE",
    help='Build node image of a target OS, e.g. "ubuntu 22.04=IMAGE" (Debian 12: the node image).',
)
@click.option(
    "-e",
    "--extra-vars",
    "extra_vars",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a variable, as ansible -e.",
)
def build_command(
    inventory: str,
    out: str,
    vendor: str | None,
    limit: str | None,
    build_images: tuple[str, ...],
    extra_vars: tuple[str, ...],
) -> None:
    """Gather everything a bring-up of INVENTORY downloads into --out, with a sha256 manifest.

    \b
    OS packages with their dependency closure (resolved by apt on a build node of
    each target OS), the roles' URL downloads, wheels and vendor repositories.
    A second build into the same folder fetches only what changed. Exit 0
    complete, 3 built with missing items (listed), 2 bad input, 4 environment
    not ready (podman, the build image, the mirror).
    """
    from clusterforge.bundle.build import BuildOptions, build
    from clusterforge.validation.inventory import checked_inventory

    console = _stderr()
    options = BuildOptions(
        out=Path(out),
        vendor=Path(vendor) if vendor else None,
        limit=limit,
        build_images=dict(_pair(text, "--build-image", "OS=IMAGE") for text in build_images),
        extravars=dict(_pair(text, "-e", "KEY=VALUE") for text in extra_vars),
    )
    loaded = checked_inventory(inventory, limit, console=console)
    result = build(loaded, options, note=lambda text: console.print(text, markup=False))
    manifest = result.manifest
    click.echo(
        f"bundle {Path(out)}: {len(manifest.files)} files, {_mib(manifest)} MiB; this build fetched "
        f"{result.fetched}, refreshed {result.refreshed}, reused {result.reused}, failed {result.failed} "
        f"in {result.seconds} s"
    )
    if manifest.missing:
        for item in manifest.missing:
            click.echo(
                f"  missing {item.get('kind')} {item.get('name')} ({item.get('target')}): {item.get('why')}"
            )
        raise ChecksFailed(
            f"the bundle lacks {len(manifest.missing)} item(s), listed above",
            "fix each (a file in --vendor, a reachable URL, a pinned version that exists), then build again",
        )


@bundle.command("verify")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "-i", "--inventory", type=click.Path(), help="Also list what this inventory needs that the bundle lacks."
)
@click.option("-l", "--limit", help="With -i: only these hosts.")
def verify_command(directory: str, inventory: str | None, limit: str | None) -> None:
    """Check every file of the bundle against its manifest (and, with -i, the inventory's needs).

    Exit 0 when complete, 3 when a file is corrupt or missing or a need is not
    in the bundle (each named), 2 on bad input.
    """
    from cfcore.bundle import BundleError, Manifest, closure_files, refuse_links, verify
    from cfcore.redact import mask_url

    root = Path(directory)
    try:
        manifest = Manifest.load(root)
        refuse_links(str(root))
        problems = [f"{p.path}: {p.kind} ({p.detail})" for p in verify(root, manifest)]
    except BundleError as err:
        raise InvalidInput(err.message, err.fix) from None
    checked = len(manifest.files)
    if inventory:
        from clusterforge.bundle.check import bundle_url_of
        from clusterforge.bundle.needs import compute_needs
        from clusterforge.validation.inventory import checked_inventory

        loaded = checked_inventory(inventory, limit, console=_stderr())
        needs = compute_needs(loaded)
        served = _served_relpath(bundle_url_of(loaded))
        for os_release, target in sorted(needs.targets.items()):
            built = manifest.targets.get(os_release)
            if built is None:
                problems.append(f"no packages for {os_release} (hosts {', '.join(target.hosts[:5])})")
                continue
            _files, unknown = closure_files(built, sorted(target.packages))
            problems += [f"package {spec} ({os_release}) is not in the bundle" for spec in unknown]
            built_files = set((built.get("files") or {}).keys())
            problems += [
                f"file {mask_url(url)} is not in the bundle"
                for url in sorted(target.files)
                if url not in built_files and served(url) not in manifest.files
            ]
            built_wheels = set(built.get("wheels") or [])
            problems += [
                f"wheel {req} is not in the bundle"
                for req in sorted(target.wheels)
                if req not in built_wheels
            ]
    for problem in problems:
        click.echo(f"  {problem}")
    if problems:
        raise ChecksFailed(
            f"the bundle {root} has {len(problems)} problem(s), listed above",
            "build again into the same folder (clusterforge bundle build -i INV --out DIR)",
        )
    click.echo(
        f"bundle {root}: {checked} files verified"
        + (f", every need of {inventory} present" if inventory else "")
    )


@bundle.command("serve")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--bind", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option("--url", "url", help="The bundle's URL as the nodes reach it (default: http://BIND:PORT).")
@click.option(
    "--vars-out",
    type=click.Path(dir_okay=False),
    help="Write the inventory variables here (a group_vars/all file).",
)
def serve_command(directory: str, bind: str, port: int, url: str | None, vars_out: str | None) -> None:
    """Verify the bundle, print its inventory variables, then serve it over HTTP until interrupted."""
    from clusterforge.bundle.serve import bundle_vars, make_server, prepare, render_vars, serve_forever

    root = Path(directory)
    if url is None and bind in ("0.0.0.0", "::"):
        raise InvalidInput(
            "--url is needed with --bind 0.0.0.0: the nodes need the bastion's own address",
            "pass --url http://BASTION-ADDRESS:PORT (or --bind that address)",
        )
    url = (url or f"http://{bind}:{port}").rstrip("/")
    from cfcore.bundle import BundleError

    try:
        manifest = prepare(root)
        found, conflicts = bundle_vars(manifest, url)
    except BundleError as err:
        raise InvalidInput(err.message, err.fix) from None
    text = render_vars(found, root)
    if vars_out:
        Path(vars_out).write_text(text)
    else:
        click.echo(text)
    for conflict in conflicts:
        _stderr().print(f"note: set per group, not in group_vars/all: {conflict}", markup=False)
    try:
        server = make_server(root, bind, port)
    except OSError as err:
        raise InvalidInput(
            f"cannot listen on {bind}:{port}: {err}", "choose another --port or --bind"
        ) from None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _stderr().print(f"serving {root} at {url} (Ctrl-C stops)", markup=False)
    try:
        serve_forever(server)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@bundle.command("check")
@click.option("-i", "--inventory", required=True, type=click.Path(), help="Inventory file or directory.")
@click.option("-l", "--limit", help="Only these hosts.")
def check_command(inventory: str, limit: str | None) -> None:
    """The bring-up's offline preflight alone: every URL into the bundle, every need served by it.

    Exit 0 when the served bundle holds everything (or cf_bundle_url is unset), 2 with the problems listed.
    """
    from cfcore.redact import mask_url

    from clusterforge.bundle.check import bundle_url_of, check_bundle, raise_on_problems
    from clusterforge.validation.inventory import checked_inventory

    console = _stderr()
    loaded = checked_inventory(inventory, limit, console=console)
    url = bundle_url_of(loaded)
    if url is None:
        click.echo("cf_bundle_url is not set: an online bring-up, nothing to check")
        return
    raise_on_problems(check_bundle(loaded, note=lambda t: console.print(t, markup=False)), url)
    click.echo(f"offline preflight: every need of {len(loaded.targets)} host(s) is served by {mask_url(url)}")


def _served_relpath(bundle_url: str | None):
    """URL -> its path in the bundle when an offline inventory's URL points into it (else "")."""

    def relpath(url: str) -> str:
        prefix = f"{bundle_url}/" if bundle_url else None
        return urllib.parse.unquote(url[len(prefix) :]) if prefix and url.startswith(prefix) else ""

    return relpath


def _pair(text: str, flag: str, shape: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise InvalidInput(f"{flag} {text!r} is not {shape}", f"write it as {flag} '{shape}'")
    return key.strip(), value.strip()


def _mib(manifest: object) -> int:
    return round(sum(f.size for f in manifest.files.values()) / (1 << 20))
