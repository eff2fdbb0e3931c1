"""``lexsearch split``: carve reproducible splits (e.g. fit/dev out of train) into a derived dataset folder."""

from __future__ import annotations

import argparse

from service.commands.common import info
from service.corpus.datasets import Dataset, carve_split
from service.errors import InvalidInput


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("split", help="carve splits out of a split into a new dataset folder",
                              description="Write OUT with the corpus symlinked and the queries of --from split "
                                          "into --parts, shuffled with a fixed seed.")
    p.add_argument("--data", required=True, help="dataset folder")
    p.add_argument("--from", dest="source", required=True, help="split to carve, e.g. train")
    p.add_argument("--parts", required=True, help="name=fraction list, e.g. fit=0.81,dev=0.19")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", required=True, help="folder to write")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    parts: dict[str, float] = {}
    for spec in args.parts.split(","):
        name, sep, frac = spec.partition("=")
        try:
            parts[name.strip()] = float(frac)
        except ValueError:
            raise InvalidInput(f"--parts entry {spec!r} must look like name=fraction") from None
        if not sep or not name.strip() or parts[name.strip()] <= 0:
            raise InvalidInput(f"--parts entry {spec!r} must look like name=fraction with fraction > 0")
    sizes = carve_split(Dataset(args.data), args.source, args.out, parts=parts, seed=args.seed)
    info(f"wrote {args.out}: " + ", ".join(f"{k} {v} queries" for k, v in sizes.items()))
    return 0
