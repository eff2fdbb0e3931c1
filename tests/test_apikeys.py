"""API keys against a real Redis: created hashed, scoped, revocable."""

from __future__ import annotations

import pytest

from service.apikeys import ApiKeyStore, digest, parse_indices
from service.errors import InvalidInput
from service.redisconn import connect

pytestmark = pytest.mark.engine


@pytest.fixture
def store(redis_url: str) -> ApiKeyStore:
    return ApiKeyStore(connect(redis_url))


def test_a_created_key_authenticates_with_its_scope(store: ApiKeyStore) -> None:
    key, secret = store.create("swiss, coliee", rate_per_min=30, label="cms")
    assert secret.startswith(f"lsk_{key.id}_")
    found = store.authenticate(secret)
    assert found is not None and found.id == key.id and found.rate_per_min == 30
    assert found.allows("swiss") and found.allows("coliee") and not found.allows("stard")
    assert not found.ingest


def test_only_a_digest_is_stored(store: ApiKeyStore) -> None:
    key, secret = store.create(("swiss",), rate_per_min=5)
    stored = store.client.hgetall(f"lexsearch:apikey:{key.id}")
    assert stored["digest"] == digest(secret)
    dump = " ".join(v for k in store.client.keys("*") if store.client.type(k) == "hash"
                    for v in store.client.hgetall(k).values())
    assert secret.split("_", 2)[2] not in dump


def test_wrong_malformed_and_revoked_keys_fail(store: ApiKeyStore) -> None:
    key, secret = store.create(("*",), rate_per_min=5, ingest=True)
    assert store.authenticate(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    for bad in ("", "lsk", "lsk_zz_x", "Bearer x", f"lsk_{key.id}"):
        assert store.authenticate(bad) is None
    assert store.authenticate(secret).allows("anything")  # type: ignore[union-attr]
    assert store.revoke(key.id)
    assert not store.revoke(key.id)
    assert store.authenticate(secret) is None
    assert store.get(key.id).revoked_at is not None  # type: ignore[union-attr]


def test_list_shows_every_key_without_secrets(store: ApiKeyStore) -> None:
    first, _ = store.create(("a",), rate_per_min=1)
    second, _ = store.create(("b",), rate_per_min=2)
    listed = store.list()
    assert [k.id for k in listed] == [second.id, first.id]
    assert "digest" not in listed[0].to_public()


def test_scope_and_rate_are_checked() -> None:
    assert parse_indices("a,b,a") == ("a", "b")
    with pytest.raises(InvalidInput):
        parse_indices(" , ")
    with pytest.raises(InvalidInput):
        parse_indices("../x")


def test_rate_must_be_positive(store: ApiKeyStore) -> None:
    with pytest.raises(InvalidInput):
        store.create(("a",), rate_per_min=0)


def test_authenticate_and_count_is_one_round_trip_that_counts_only_good_keys(store: ApiKeyStore) -> None:
    from service.ratelimit import RateLimiter

    key, secret = store.create(("swiss",), rate_per_min=3, label="cms")
    found = store.authenticate_and_count(secret)
    assert found is not None
    record, decision = found
    assert record == store.authenticate(secret) and record.allows("swiss") and record.label == "cms"
    assert (decision.allowed, decision.limit, decision.remaining) == (True, 3, 2)
    wrong = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    for bad in (wrong, "", f"lsk_{key.id}", "lsk_zz_x"):
        assert store.authenticate_and_count(bad) is None  # nothing counted for a wrong secret
    assert [store.authenticate_and_count(secret)[1].allowed for _ in range(3)] == [True, True, False]  # type: ignore[index]
    refused = store.authenticate_and_count(secret)[1]  # type: ignore[index]
    assert not refused.allowed and refused.retry_after_s > 0 and "Retry-After" in refused.headers()
    # the same bucket as the RateLimiter's name for the key
    assert not RateLimiter(store.client).hit(f"key:{key.id}", per_minute=3).allowed
    store.revoke(key.id)
    assert store.authenticate_and_count(secret) is None
