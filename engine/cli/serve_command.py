"""``mcs-formats serve STREAM... [--host 127.0.0.1] [--port N] [--delay MS]``: a fake provider.

The command layer over :mod:`engine.cli.serve_http` (README, "Command line"): the streams are
read, recognised and framed before anything listens, so that a stream that cannot be served
is an error (exit 1, naming the file) and never a surprise at the first request. Then the first
line on stdout is ``serving on http://HOST:PORT`` (``--port 0``: a free port, the default),
then one line a stream, ``  KEY<TAB>WIRE<TAB>FILE`` (a request under ``/s/KEY/`` gets that
stream), all flushed; the server runs until interrupted (Ctrl-C, SIGTERM: exit 0).

Only loopback addresses are served (``--host`` elsewhere is a usage error, exit 2): this is a
test double for clients, not a server for a network.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import Any

from .common import EXIT_OK, EXIT_USAGE, CLIError, _load_strategy


def add_serve_command(sub: Any) -> None:
    """Register ``serve`` on the CLI's subcommand parser."""
    p = sub.add_parser("serve", help="a fake provider on loopback, replaying recorded streams")
    p.add_argument("streams", metavar="STREAM", nargs="+", help="JSON Lines recorded streams")
    p.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="the port (default 0: a free one)")
    p.add_argument(
        "--delay", type=float, default=0.0, metavar="MS", help="milliseconds between events"
    )
    p.add_argument(
        "--format",
        metavar="NAME|PATH",
        help="serve every stream as this format (default: the one that recognises each)",
    )
    p.add_argument(
        "--log", metavar="FILE", help="append one JSON line per request received to FILE"
    )
    p.set_defaults(run=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    # The server is imported here, not with the parser: every other command's start (each
    # test's child process too) would pay for http.server and the serve floor it never uses.
    from .serve_http import FakeProvider, ServeSetupError, is_loopback, load_recordings

    if not is_loopback(args.host):
        raise CLIError(f"--host {args.host}: only a loopback address is served", EXIT_USAGE)
    if not 0 <= args.port <= 65535:
        raise CLIError(f"--port {args.port}: 0 to 65535", EXIT_USAGE)
    if args.delay < 0:
        raise CLIError(f"--delay {args.delay:g}: not negative", EXIT_USAGE)
    strategy = _load_strategy(args.format) if args.format else None
    try:
        recordings = load_recordings(args.streams, strategy)
    except ServeSetupError as exc:
        raise CLIError(str(exc)) from None
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(open(args.log, "a", encoding="utf-8")) if args.log else None
        try:
            provider = FakeProvider(recordings, args.host, args.port, args.delay / 1000, log)
        except OSError as exc:
            reason = exc.strerror or exc
            raise CLIError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
        stack.callback(provider.close)
        # The clean stop is in place before the first line: a client that reads it may stop
        # the server at once, and SIGTERM's default would end it with -15, not 0.
        signal.signal(signal.SIGTERM, _interrupt)
        with contextlib.suppress(KeyboardInterrupt):
            _announce(provider, recordings)
            provider.serve_forever()
    return EXIT_OK


def _announce(provider: Any, recordings: list[Any]) -> None:
    """The URL, one line a stream (flushed: a client waits for them), then the notes."""
    from .serve_http import listing

    print(f"serving on {provider.url}")
    for line in listing(provider):
        print(line)
    sys.stdout.flush()
    for recording in recordings:
        if recording.unassembled is not None:
            print(
                f"mcs-formats serve: note: {recording.path}: {recording.unassembled};"
                " a non-streaming request for it is answered 500",
                file=sys.stderr,
            )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
