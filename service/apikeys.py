"""API keys: created and revoked by ``lexsearch keys``, checked by the HTTP service.

A key looks like ``lsk_<id>_<secret>``: the 12-hex-digit ``id`` names the key in logs, job records
and ``lexsearch keys revoke``; the secret (32 random bytes, URL-safe base64) is shown once, at
creation, and only its SHA-256 digest is stored. The secret has 256 bits of entropy, so a fast
digest is enough (slow password hashes protect low-entropy secrets) and comparing digests in
constant time leaks nothing useful.

Keys live in the same Redis as the jobs (``jobs.redis_url``), so every API process and replica
sees a revocation at once::

    lexsearch:apikey:{id}   hash: digest, indices (JSON list; "*" = all), rate_per_min, ingest, label,
                            created_at, revoked_at
    lexsearch:apikeys       set of all ids

Example::

    store = ApiKeyStore(connect(settings.jobs.redis_url))
    key, secret = store.create(("swiss",), rate_per_min=60)
    store.authenticate(secret).allows("swiss")      # True
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

import redis

from service.errors import InvalidInput
from service.ratelimit import GCRA_FUNCTION, PERIOD_MS, RateDecision
from service.ratelimit import PREFIX as RATE_PREFIX
from service.redisconn import store_errors

PREFIX = "lexsearch:"
KEY_PREFIX = "lsk"
ALL_INDICES = "*"
INDEX_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
"""Names an index may have in the API (also the scope of a key)."""
_KEY_ID = re.compile(r"^[0-9a-f]{12}$")

# KEYS: the key's hash, its rate-limit key. ARGV: the presented key's digest, the period in ms.
# Returns {0} for an unknown, wrong or revoked key (nothing counted), else {1, the hash as a flat
# list, allowed, remaining, retry ms}. The digests are compared in Lua, not in constant time: they
# are digests of 256-bit secrets, so timing says nothing useful about a secret.
_AUTHENTICATE_AND_COUNT = GCRA_FUNCTION + """
local raw = redis.call('HGETALL', KEYS[1])
local rec = {}
for i = 1, #raw, 2 do rec[raw[i]] = raw[i + 1] end
if rec['digest'] ~= ARGV[1] or (rec['revoked_at'] or '') ~= '' then return {0} end
local decision = gcra(KEYS[2], tonumber(ARGV[2]), tonumber(rec['rate_per_min']) or 1)
return {1, raw, decision[1], decision[2], decision[3]}
"""


@dataclass(frozen=True)
class ApiKey:
    """What a key may do: search (and, with ``ingest``, write to) ``indices``, at ``rate_per_min``."""

    id: str
    indices: tuple[str, ...]
    rate_per_min: int
    ingest: bool = False
    label: str = ""
    created_at: float = 0.0
    revoked_at: float | None = None

    def allows(self, index: str) -> bool:
        """Whether the key's scope includes ``index``."""
        return ALL_INDICES in self.indices or index in self.indices

    def to_public(self) -> dict[str, Any]:
        """A JSON view without any secret (for ``lexsearch keys list --json``)."""
        return {"id": self.id, "indices": list(self.indices), "rate_per_min": self.rate_per_min,
                "ingest": self.ingest, "label": self.label, "created_at": self.created_at,
                "revoked_at": self.revoked_at}


def digest(secret: str) -> str:
    """The stored form of a key: hex SHA-256 of the whole key string."""
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_indices(spec: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Index names from ``"a,b"`` or a list; ``*`` means every index.

    Raises:
        InvalidInput: for an empty list or a malformed name.
    """
    names = [n.strip() for n in (spec.split(",") if isinstance(spec, str) else spec) if n.strip()]
    if not names:
        raise InvalidInput("a key needs at least one index (or * for all)")
    for name in names:
        if name != ALL_INDICES and not INDEX_NAME.match(name):
            raise InvalidInput(f"invalid index name {name!r}: use letters, digits, '.', '_' and '-'")
    return tuple(dict.fromkeys(names))


class ApiKeyStore:
    """API keys in Redis. Every method raises :class:`~service.errors.StoreUnavailable` when Redis is down."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._authenticate_and_count = client.register_script(_AUTHENTICATE_AND_COUNT)

    @staticmethod
    def _key(key_id: str) -> str:
        return f"{PREFIX}apikey:{key_id}"

    def create(self, indices: tuple[str, ...] | str, *, rate_per_min: int, ingest: bool = False,
               label: str = "") -> tuple[ApiKey, str]:
        """Make a new key.

        Args:
            indices: the index names it may use (``*`` = all).
            rate_per_min: requests per minute (a burst of that many, refilled evenly).
            ingest: whether it may add documents (``POST /v1/indices/{name}/documents``).
            label: a note for people (who holds the key).

        Returns:
            The key's record and the secret key string, which is not stored and cannot be shown again.

        Raises:
            InvalidInput: for a bad index name or a rate below 1.
        """
        scope = parse_indices(indices)
        if rate_per_min < 1:
            raise InvalidInput(f"the rate limit must be at least 1 request per minute, got {rate_per_min}")
        key_id = secrets.token_hex(6)
        secret = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKey(id=key_id, indices=scope, rate_per_min=rate_per_min, ingest=ingest, label=label,
                        created_at=time.time())
        with store_errors("the key store"):
            pipe = self.client.pipeline()
            pipe.hset(self._key(key_id), mapping={
                "digest": digest(secret), "indices": json.dumps(list(scope)), "rate_per_min": str(rate_per_min),
                "ingest": "1" if ingest else "0", "label": label, "created_at": repr(record.created_at),
                "revoked_at": "",
            })
            pipe.sadd(f"{PREFIX}apikeys", key_id)
            pipe.execute()
        return record, secret

    def get(self, key_id: str) -> ApiKey | None:
        """The key with this id (revoked or not), or ``None``."""
        if not _KEY_ID.match(key_id):
            return None
        with store_errors("the key store"):
            raw = self.client.hgetall(self._key(key_id))
        return _record(key_id, raw) if raw else None

    def revoke(self, key_id: str) -> bool:
        """Revoke a key at once; ``False`` when there is no such key or it was already revoked."""
        with store_errors("the key store"):
            if not _KEY_ID.match(key_id) or not self.client.exists(self._key(key_id)):
                return False
            if self.client.hget(self._key(key_id), "revoked_at"):
                return False
            self.client.hset(self._key(key_id), "revoked_at", repr(time.time()))
        return True

    def list(self) -> list[ApiKey]:
        """Every key, newest first."""
        with store_errors("the key store"):
            ids = sorted(self.client.smembers(f"{PREFIX}apikeys"))
            pipe = self.client.pipeline()
            for key_id in ids:
                pipe.hgetall(self._key(key_id))
            rows = pipe.execute()
        keys = [_record(key_id, raw) for key_id, raw in zip(ids, rows, strict=True) if raw]
        return sorted(keys, key=lambda k: k.created_at, reverse=True)

    def authenticate(self, presented: str) -> ApiKey | None:
        """The live key matching ``presented``, or ``None`` (unknown, malformed, wrong secret, revoked)."""
        key_id = key_id_of(presented)
        if key_id is None:
            return None
        with store_errors("the key store"):
            raw = self.client.hgetall(self._key(key_id))
        if not raw or not hmac.compare_digest(raw.get("digest", ""), digest(presented)):
            return None
        record = _record(key_id, raw)
        return None if record.revoked_at is not None else record

    def authenticate_and_count(self, presented: str) -> tuple[ApiKey, RateDecision] | None:
        """:meth:`authenticate` and one request counted against the key's rate limit (the
        :class:`~service.ratelimit.RateLimiter` name ``key:<id>``), in one Redis round trip;
        ``None`` (and nothing counted) for an unknown, malformed, wrong or revoked key."""
        key_id = key_id_of(presented)
        if key_id is None:
            return None
        with store_errors("the key store"):
            result = self._authenticate_and_count(keys=[self._key(key_id), f"{RATE_PREFIX}{rate_name(key_id)}"],
                                                  args=[digest(presented), PERIOD_MS])
        if not result[0]:
            return None
        flat = result[1]
        record = _record(key_id, dict(zip(flat[::2], flat[1::2], strict=True)))
        return record, RateDecision.from_script(result[2:], record.rate_per_min)


def key_id_of(presented: str) -> str | None:
    """The id part of a well-formed key string ``lsk_<id>_<secret>``, or ``None``."""
    parts = presented.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not _KEY_ID.match(parts[1]):
        return None
    return parts[1]


def rate_name(key_id: str) -> str:
    """The rate limiter's name for a key's requests."""
    return f"key:{key_id}"


def _record(key_id: str, raw: dict[str, str]) -> ApiKey:
    return ApiKey(
        id=key_id, indices=tuple(json.loads(raw.get("indices") or "[]")),
        rate_per_min=int(raw.get("rate_per_min") or 1), ingest=raw.get("ingest") == "1",
        label=raw.get("label", ""), created_at=float(raw.get("created_at") or 0),
        revoked_at=float(raw["revoked_at"]) if raw.get("revoked_at") else None,
    )
