"""The command line: ``python -m calc SUBCOMMAND ...``.

Each subcommand is a module of this package (``calc/cli/<name>.py``) that defines

* ``HELP``: one line for ``python -m calc --help``;
* ``add_arguments(parser)``: its options, on an ``argparse.ArgumentParser``;
* ``run(args) -> dict``: the result as plain JSON-able data (this is what ``--json`` prints);
* ``render(result) -> str``: the readable table printed by default.

Bad input raises :class:`calc.errors.CalcError`; the CLI prints its message and
exits with status 2, never a traceback.

>>> main(["--help"])  # doctest: +ELLIPSIS
usage: python -m calc ...
0
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from calc.errors import CalcError

# Listed here, in the order --help shows them; each name is a module of this package (a dash for its underscore).
SUBCOMMANDS = (
    "lesson", "model", "kv", "memory",
    "step", "spec", "prefix", "context", "scale", "cost", "gpu-util",
    "simulate", "plan",
)


def _available():
    for name in SUBCOMMANDS:
        module = f"calc.cli.{name.replace('-', '_')}"
        try:
            yield name, importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a subcommand not written yet is simply absent
            if exc.name != module:
                raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m calc",
        description="The arithmetic of serving a large language model. Every subcommand prints a table, or JSON with --json.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="SUBCOMMAND")
    for name, module in _available():
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
        sub.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or argparse's own usage error
        return int(exc.code or 0)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    try:
        result = args._module.run(args)
    except CalcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(args._module.render(result))
    return 0
