"""``lexsearch search``: answer one question from the command line."""

from __future__ import annotations

import argparse
import json
import sys

from service.analysis.language import detect_language
from service.commands.common import add_common_options, settings_from_args
from service.corpus.model import Filters
from service.errors import InvalidInput
from service.pipelines.base import SearchRequest
from service.pipelines.build import Runtime
from service.plugins import PIPELINES, RERANKERS
from service.retrieval.snippets import make_snippet

DEFAULT_PIPELINE = "routed"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("search", help="search one question",
                              description="Print the citations that answer a question, best first.")
    p.add_argument("query", help="the question, in everyday words")
    p.add_argument("--top", type=int, default=10, help="how many results (default 10)")
    p.add_argument("--pipeline", default=None,
                   help=f"{', '.join(PIPELINES.names())} (default {DEFAULT_PIPELINE})")
    p.add_argument("--filter", action="append", default=[], metavar="FIELD=VALUE[,VALUE]",
                   help="restrict to law, kind, lang, court, division, chamber, case_type, citation, "
                        "date_from or date_to (repeatable)")
    p.add_argument("--lang", default="", help="the question's language (default: detect)")
    p.add_argument("--reranker", choices=RERANKERS.choices(),
                   help="reranker of the agentic pipelines (auto: llm when an LLM is configured, else learned)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--explain", action="store_true", help="include the trace (timings, tiers, agents)")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    try:
        filters = Filters.parse(args.filter) if args.filter else None
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    runtime = Runtime(settings)
    pipeline = runtime.pipeline(args.pipeline or DEFAULT_PIPELINE)
    options = {"reranker": args.reranker} if args.reranker else {}
    request = SearchRequest(query=args.query, index=settings.index.name, k=args.top, filters=filters,
                            lang=args.lang, explain=args.explain, options=options)
    response = pipeline.run(request)
    docs = runtime.backend.fetch(settings.index.name, [h.doc_id for h in response.hits])
    lang = args.lang or detect_language(args.query)
    rows = []
    for rank, hit in enumerate(response.hits, start=1):
        doc = hit.doc or docs.get(hit.doc_id)
        snippet = make_snippet(doc.text, args.query, doc.lang or lang) if doc else None
        rows.append((rank, hit, doc, snippet))
    if args.json:
        out = {
            "query": args.query,
            "pipeline": pipeline.name,
            "returned": response.returned,
            "hits": [
                {**hit.to_dict(with_doc=False), "rank": rank,
                 "citation": doc.citation if doc else hit.doc_id,
                 "law": doc.law if doc else "", "title": doc.title if doc else "",
                 "snippet": snippet.render("<em>", "</em>") if snippet else ""}
                for rank, hit, doc, snippet in rows
            ],
        }
        if args.explain:
            out["trace"] = response.trace
        json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
        print()
        return 0
    if not rows:
        print("no results")
    tty = sys.stdout.isatty()
    mark = ("\033[1m", "\033[0m") if tty else ("«", "»")
    for rank, hit, doc, snippet in rows:
        cut = " " if response.returned is None or rank <= response.returned else "-"
        title = f" — {doc.title}" if doc and doc.title else ""
        print(f"{cut}{rank:>3}. {doc.citation if doc else hit.doc_id}{title}  [{hit.score:.4f}]")
        if snippet:
            print(f"       {snippet.render(*mark)}".replace("\n", " "))
    if args.explain:
        print(json.dumps(response.trace, ensure_ascii=False, indent=1))
    return 0
