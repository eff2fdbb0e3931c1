"""The ``lexsearch`` command line. Each sub-command lives in ``service.commands.<name>``.

Errors meant for the user (:class:`~service.errors.LexsearchError`) print one clear line and
exit non-zero; a traceback appears only with ``LEXSEARCH_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback

from service.errors import LexsearchError

COMMANDS = ("index", "delete", "search", "evaluate", "split", "train", "calibrate", "keys", "serve", "worker")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lexsearch", description="Legal search: citations for everyday questions.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"service.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"service.commands.{name}":
                continue  # a command not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("LEXSEARCH_LOG_LEVEL", "WARNING"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except LexsearchError as exc:
        print(f"lexsearch: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("lexsearch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: say so plainly, keep the traceback for debugging
        if os.environ.get("LEXSEARCH_DEBUG"):
            traceback.print_exc()
        print(f"lexsearch: internal error: {type(exc).__name__}: {exc} (set LEXSEARCH_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
