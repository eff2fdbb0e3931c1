"""``lexsearch index``: put a dataset folder or a user corpus file into an index."""

from __future__ import annotations

import argparse
from pathlib import Path

from service.commands.common import add_common_options, info, progress_enabled, settings_from_args
from service.corpus.datasets import Dataset, LoadReport, load_corpus, read_user_corpus
from service.corpus.works import group_versions, rule_for
from service.errors import InvalidInput
from service.indexing import citation_links_current, index_documents, rebuild_index
from service.pipelines.build import Runtime


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("index", help="index a dataset folder or a corpus file",
                              description="Index a dataset folder (corpus*.jsonl) or a JSONL/CSV corpus file. "
                                          "By default the index is rebuilt and swapped in atomically; "
                                          "--update upserts into the existing index instead.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="dataset folder holding corpus*.jsonl")
    source.add_argument("--corpus", help="a JSONL or CSV corpus file")
    p.add_argument("--format", choices=["jsonl", "csv"], help="format of --corpus (default: from extension)")
    p.add_argument("--field", action="append", default=[], metavar="OURS=THEIRS",
                   help="map a document field to a column/key of --corpus, e.g. --field text=body")
    p.add_argument("--lang", default="", help="language of documents that name none (de, fr, it, en, zh)")
    p.add_argument("--update", action="store_true", help="upsert into the existing index instead of rebuilding")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    runtime = Runtime(settings)
    report = LoadReport()
    if args.data:
        dataset = Dataset(args.data)
        language = args.lang or dataset.language
        docs = load_corpus(dataset, report)
    else:
        mapping = {}
        for spec in args.field:
            ours, sep, theirs = spec.partition("=")
            if not sep or not ours or not theirs:
                raise InvalidInput(f"--field {spec!r} must look like ours=theirs, e.g. text=body")
            mapping[ours.strip()] = theirs.strip()
        language = args.lang
        by_id = {d.id: d for d in read_user_corpus(args.corpus, report, fmt=args.format or "",
                                                     field_map=mapping, default_lang=language)}
        docs = list(by_id.values())
        rule = rule_for({}, (), docs[0] if docs else None)  # a "work" field groups versions of one work
        if rule is not None:
            languages = tuple(dict.fromkeys(d.lang for d in docs if d.lang))
            docs = group_versions(docs, rule, (language, *languages) if language else languages)
    if not docs:
        info(report.summary())
        raise InvalidInput("the corpus holds no valid document; nothing was indexed")
    name = settings.index.name
    if not language:  # a corpus in one language gets that language's embedder
        found = {d.lang for d in docs if d.lang}
        language = found.pop() if len(found) == 1 else ""
    embedder = runtime.index_embedder(name, language) if args.update else runtime.embedder_for(language)
    if not args.update:
        if settings.backend.kind == "embedded":
            info(f"indexing {len(docs)} documents into {Path(settings.index.root) / name}")
        else:
            info(f"indexing {len(docs)} documents into a new version of {name!r} ({settings.backend.kind}); "
                 "the alias moves to it when it is complete")
        result = rebuild_index(runtime.backend, settings, name, embedder, docs, language=language,
                               progress=progress_enabled())
    else:
        info(f"indexing {len(docs)} documents into index {name!r} ({settings.backend.kind})")
        result = index_documents(runtime.backend, embedder, name, docs, language=language,
                                 progress=progress_enabled())
        if not citation_links_current(runtime.backend.metadata(name)):
            info("the index's older documents keep the citation links another version of lexsearch read; "
                 "rebuild it (without --update) to link them all by this version's rules")
    info(report.summary())
    info(f"indexed {result.indexed} of {result.sent} documents; embedded {embedder.computed} new texts "
         f"with {embedder.name}")
    if result.failed:
        info(f"{len(result.failed)} documents failed:")
        for doc_id, reason in list(result.failed.items())[:50]:
            info(f"  {doc_id}: {reason}")
        return 1
    from service.fusion_calibration import ensure_fusion_quietly
    from service.routing.calibration import ensure_qsi_quietly

    # The corpus changed, so its BM25 score scale may have too: recalibrate routing's QSI, and the
    # fusion weights (label-free, from passages of the corpus).
    info(ensure_qsi_quietly(runtime.backend, name, language=language, force=True))
    info(ensure_fusion_quietly(runtime.backend, embedder, name, settings.retrieval, language=language, force=True))
    return 0
