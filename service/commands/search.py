"""``lexsearch search``: answer one question from the command line."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from service.commands.common import add_common_options, add_reranker_option, filters_from_args, settings_from_args
from service.errors import InvalidInput
from service.pipelines.base import MAX_K, SearchRequest
from service.pipelines.build import Runtime
from service.plugins import PIPELINES
from service.retrieval.snippets import Snippet
from service.search_json import render_response

DEFAULT_PIPELINE = "routed"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("search", help="search one question",
                              description="Print the citations that answer a question, best first.")
    p.add_argument("query", help="the question, in everyday words")
    p.add_argument("--top", type=int, default=10, help=f"how many results, 1 to {MAX_K} (default 10)")
    p.add_argument("--pipeline", default=None,
                   help=f"{', '.join(PIPELINES.names())} (default {DEFAULT_PIPELINE})")
    p.add_argument("--filter", action="append", default=[], metavar="FIELD=VALUE[,VALUE]",
                   help="restrict to law, kind, lang, court, division, chamber, case_type, citation, "
                        "date_from or date_to (repeatable)")
    p.add_argument("--lang", default="", help="the question's language (default: detect)")
    p.add_argument("--one-ranking", action="store_true",
                   help="rank an index of statutes and decisions as one corpus (default: each group on its own, "
                        "the rankings merged)")
    add_reranker_option(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--explain", action="store_true", help="include the trace (timings, tiers, agents)")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.top <= MAX_K:  # the request would name its field k, which this command calls --top
        raise InvalidInput(f"--top must be between 1 and {MAX_K}, got {args.top}")
    settings = settings_from_args(args)
    filters = filters_from_args(args.filter)
    runtime = Runtime(settings)
    pipeline = runtime.search_pipeline(args.pipeline or DEFAULT_PIPELINE)
    options: dict[str, Any] = {"reranker": args.reranker} if args.reranker else {}
    if args.one_ranking:
        options["one_ranking"] = True
    request = SearchRequest(query=args.query, index=settings.index.name, k=args.top, filters=filters,
                            lang=args.lang, explain=args.explain, options=options)
    started = time.perf_counter()
    response = pipeline.run(request)
    body = render_response(runtime.backend, request, response, pipeline=pipeline.name,
                           took_ms=(time.perf_counter() - started) * 1000,
                           embedder=runtime.embedder_or_none(request.index))
    if args.json:
        json.dump(body, sys.stdout, ensure_ascii=False, indent=1)
        print()
        return 0
    if not body["hits"]:
        within = (f" within the filters {' '.join(args.filter)} (law names ignore case; other values match"
                  " exactly)") if args.filter else ""
        print("no results" + within)
        laws = [v for name, values in (filters.terms if filters else ()) if name == "law" for v in values]
        if laws:  # the index's law names are read only when there is a law filter to explain
            for hint in unknown_law_hints(runtime.backend.law_names(request.index), laws):
                print(hint)
    tty = sys.stdout.isatty()
    mark = ("\033[1m", "\033[0m") if tty else ("«", "»")
    for hit in body["hits"]:
        print(_hit_lines(hit, cut=hit["rank"] > body["returned"], mark=mark))
    if args.explain:
        print(json.dumps(response.trace, ensure_ascii=False, indent=1))
    return 0


def _hit_lines(hit: dict[str, Any], *, cut: bool, mark: tuple[str, str]) -> str:
    """One hit as text: the citation (pinpointed to its best paragraphs), title and score (``n/a`` for a
    score that is not a finite number, ``null`` in JSON); the other language versions; the snippet with
    the matched words marked. Hits past the score cliff start with '-'."""
    cited = " · ".join(p["citation"] for p in hit["pinpoint"]) or hit["citation"]
    title = f" — {hit['title']}" if hit["title"] else ""
    score = "n/a" if hit["score"] is None else f"{hit['score']:.4f}"
    lines = [f"{'-' if cut else ' '}{hit['rank']:>3}. {cited}{title}  [{score}]"]
    others = [f"{v['lang']}: {v['citation']}" for v in hit.get("versions", []) if v["doc_id"] != hit.get("version")]
    if others:
        lines.append("       " + " · ".join(others))
    snippet = hit["snippet"]
    if snippet:
        marked = Snippet(snippet["text"], tuple(tuple(s) for s in snippet["highlights"])).render(*mark)
        lines.append(f"       {marked}".replace("\n", " "))
    return "\n".join(lines)


def unknown_law_hints(known: Sequence[str], laws: Sequence[str]) -> list[str]:
    """One line per law filter value in ``laws`` that names no law of the index (``known``, ignoring
    case), with the closest names it has."""
    by_case = {name.casefold() for name in known}
    hints = []
    for value in laws:
        if value.casefold() not in by_case:
            close = difflib.get_close_matches(value, known, n=3, cutoff=0.6)
            hints.append(f"the index has no law {value!r}" + (f"; close: {', '.join(close)}" if close else ""))
    return hints
