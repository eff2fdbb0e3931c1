"""``lexsearch delete``: remove documents from an index by id."""

from __future__ import annotations

import argparse

from service.commands.common import add_common_options, info, settings_from_args
from service.errors import InvalidInput
from service.pipelines.build import Runtime


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("delete", help="delete documents by id",
                              description="Remove documents from both retrievers of an index.")
    p.add_argument("ids", nargs="+", help="document ids (comma-separated lists allowed)")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    ids = [i.strip() for spec in args.ids for i in spec.split(",") if i.strip()]
    if not ids:
        raise InvalidInput("no document id given")
    removed = Runtime(settings).backend.delete(settings.index.name, ids)
    info(f"deleted {removed} of {len(ids)} documents from {settings.index.name!r}"
         + ("" if removed == len(ids) else f"; {len(ids) - removed} id(s) were not in the index"))
    return 0
