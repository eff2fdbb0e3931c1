"""``lexsearch keys``: create, revoke and list API keys (stored hashed in Redis, see service.apikeys).

``lexsearch keys create --indices NAME[,NAME]`` prints the new key on its last line (and only
then: it is not stored and cannot be shown again), so scripts can take ``| tail -n 1``.
"""

from __future__ import annotations

import argparse
import json
import re
import time

from service.apikeys import ApiKeyStore
from service.commands.common import info, settings_from_args
from service.errors import InvalidInput
from service.redisconn import connect

_RATE = re.compile(r"^\s*(\d+)\s*(?:/\s*(min|m|minute|s|sec|second|h|hour))?\s*$")
_PER_MINUTE = {None: 1.0, "min": 1.0, "m": 1.0, "minute": 1.0, "s": 60.0, "sec": 60.0, "second": 60.0,
               "h": 1 / 60, "hour": 1 / 60}


def parse_rate(spec: str) -> int:
    """Requests per minute from ``"60"``, ``"60/min"``, ``"2/s"`` or ``"600/h"``.

    Raises:
        InvalidInput: for anything else, or a rate below one request per minute.
    """
    match = _RATE.match(spec)
    if not match:
        raise InvalidInput(f"--rate {spec!r} must look like 60/min, 2/s or 600/h")
    per_minute = int(int(match.group(1)) * _PER_MINUTE[match.group(2)])
    if per_minute < 1:
        raise InvalidInput(f"--rate {spec!r} is below one request per minute")
    return per_minute


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("keys", help="manage API keys", description="Create, revoke and list API keys.")
    actions = p.add_subparsers(dest="keys_action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="create a key (printed on the last line)")
    create.add_argument("--indices", required=True, help="indices the key may use, comma-separated (* = all)")
    create.add_argument("--rate", help="rate limit, e.g. 60/min (default: api.default_rate_per_min)")
    create.add_argument("--ingest", action="store_true", help="may also add documents to its indices")
    create.add_argument("--label", default="", help="a note: who holds the key")
    revoke = actions.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key_id", help="the key's id (the part after lsk_, as shown by `keys list`)")
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    for sub in (create, revoke, listing):
        sub.add_argument("--redis-url", help="Redis holding the keys (default: jobs.redis_url)")
        sub.add_argument("--config", help="TOML settings file (default: $LEXSEARCH_CONFIG)")
        sub.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    store = ApiKeyStore(connect(args.redis_url or settings.jobs.redis_url))
    if args.keys_action == "create":
        rate = parse_rate(args.rate) if args.rate else settings.api.default_rate_per_min
        key, secret = store.create(args.indices, rate_per_min=rate, ingest=args.ingest, label=args.label)
        info(f"created key {key.id}: indices {','.join(key.indices)}, {key.rate_per_min}/min"
             f"{', ingest' if key.ingest else ''}. Store it now; it cannot be shown again.")
        print(secret)
        return 0
    if args.keys_action == "revoke":
        key_id = args.key_id.removeprefix("lsk_").split("_", 1)[0]
        if not store.revoke(key_id):
            existing = store.get(key_id)
            if existing is None:
                raise InvalidInput(f"there is no key {key_id!r}; see `lexsearch keys list`")
            info(f"key {key_id} was already revoked")
            return 0
        print(f"revoked {key_id}")
        return 0
    keys = store.list()
    if args.json:
        print(json.dumps([k.to_public() for k in keys], indent=1))
        return 0
    for key in keys:
        state = "revoked" if key.revoked_at else "active"
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(key.created_at))
        print(f"{key.id}  {state:<7}  {key.rate_per_min:>6}/min  {'ingest' if key.ingest else 'search'}  "
              f"{created}  {','.join(key.indices)}  {key.label}")
    if not keys:
        info("no keys; create one with `lexsearch keys create --indices NAME`")
    return 0
