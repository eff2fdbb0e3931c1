"""``lexsearch keys``: create (key on the last line), list, revoke, against a real Redis."""

from __future__ import annotations

import json

import pytest

from service.apikeys import ApiKeyStore
from service.cli import main
from service.commands.keys import parse_rate
from service.errors import InvalidInput
from service.redisconn import connect

pytestmark = pytest.mark.engine


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_create_prints_the_key_last_and_stores_only_its_digest(capsys: pytest.CaptureFixture[str],
                                                                redis_url: str) -> None:
    code, out, err = run(capsys, "keys", "create", "--indices", "swiss,coliee", "--rate", "2/s", "--ingest",
                         "--label", "cms", "--redis-url", redis_url)
    assert code == 0 and "cannot be shown again" in err
    secret = out.strip().splitlines()[-1]
    key = ApiKeyStore(connect(redis_url)).authenticate(secret)
    assert key is not None and key.indices == ("swiss", "coliee") and key.rate_per_min == 120 and key.ingest
    assert secret not in json.dumps(connect(redis_url).hgetall(f"lexsearch:apikey:{key.id}"))


def test_list_and_revoke(capsys: pytest.CaptureFixture[str], redis_url: str) -> None:
    run(capsys, "keys", "create", "--indices", "swiss", "--redis-url", redis_url)
    code, out, _ = run(capsys, "keys", "list", "--json", "--redis-url", redis_url)
    (listed,) = json.loads(out)
    assert code == 0 and listed["indices"] == ["swiss"] and listed["rate_per_min"] == 60
    assert run(capsys, "keys", "revoke", listed["id"], "--redis-url", redis_url)[1].strip() == f"revoked {listed['id']}"
    code, out, _ = run(capsys, "keys", "list", "--redis-url", redis_url)
    assert "revoked" in out
    code, _, err = run(capsys, "keys", "revoke", "0123456789ab", "--redis-url", redis_url)
    assert code == 2 and "no key" in err


def test_bad_input_and_a_down_redis_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.redis_server import free_port

    code, _, err = run(capsys, "keys", "create", "--indices", "a/b", "--redis-url", "redis://127.0.0.1:1/0")
    assert code == 2 and "invalid index name" in err
    code, _, err = run(capsys, "keys", "list", "--redis-url", f"redis://127.0.0.1:{free_port()}/0")
    assert code == 3 and "key store is unavailable" in err


@pytest.mark.unit
@pytest.mark.parametrize(("spec", "per_minute"), [("60", 60), ("60/min", 60), ("2/s", 120), ("600/h", 10),
                                                  (" 5 / minute ", 5)])
def test_rates(spec: str, per_minute: int) -> None:
    assert parse_rate(spec) == per_minute


@pytest.mark.unit
@pytest.mark.parametrize("spec", ["", "fast", "0", "10/h", "-1/min", "1/day"])
def test_bad_rates(spec: str) -> None:
    with pytest.raises(InvalidInput):
        parse_rate(spec)
