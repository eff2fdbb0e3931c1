"""Webhook signatures, URL checks, and delivery to a real local receiver."""

from __future__ import annotations

import time

import pytest

from service.errors import InvalidInput
from service.webhooks import SIGNATURE_HEADER, WebhookError, check_callback_url, deliver, sign, verify_signature
from tests.support.webhook_receiver import WebhookReceiver

BODY = b'{"event":"job.succeeded","job":{"job_id":"abc"}}'


@pytest.mark.unit
def test_a_signature_verifies_with_the_secret_only() -> None:
    header = sign("s3cret", BODY, timestamp=1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    assert verify_signature("s3cret", header, BODY, now=1_700_000_010)
    assert not verify_signature("other", header, BODY, now=1_700_000_010)
    assert not verify_signature("s3cret", header, BODY + b" ", now=1_700_000_010)
    assert not verify_signature("s3cret", "garbage", BODY, now=1_700_000_010)


@pytest.mark.unit
def test_old_signatures_are_replays() -> None:
    header = sign("s3cret", BODY, timestamp=1_700_000_000)
    assert not verify_signature("s3cret", header, BODY, now=1_700_000_000 + 301)
    assert verify_signature("s3cret", header, BODY, now=1_700_000_000 + 299)


@pytest.mark.unit
def test_any_of_several_signatures_may_match_during_rotation() -> None:
    ts = int(time.time())
    old = sign("old", BODY, ts).split("v1=")[1]
    new = sign("new", BODY, ts).split("v1=")[1]
    assert verify_signature("new", f"t={ts},v1={old},v1={new}", BODY)


@pytest.mark.unit
def test_the_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"k", b"42." + BODY, hashlib.sha256).hexdigest()
    assert sign("k", BODY, timestamp=42) == f"t=42,v1={expected}"


@pytest.mark.unit
@pytest.mark.parametrize("url", ["http://127.0.0.1/x", "http://10.0.0.8/x", "http://localhost:8080/",
                                 "http://[::1]/", "http://169.254.169.254/latest/meta-data"])
def test_private_callback_urls_are_refused_unless_allowed(url: str) -> None:
    with pytest.raises(InvalidInput, match="non-public"):
        check_callback_url(url, allow_private=False)
    check_callback_url(url, allow_private=True)


@pytest.mark.unit
@pytest.mark.parametrize("url", ["ftp://example.org/x", "example.org/hook", "http:///nohost", "x" * 3000])
def test_malformed_callback_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidInput):
        check_callback_url(url, allow_private=True)


@pytest.mark.unit
def test_delivery_posts_a_signed_body() -> None:
    with WebhookReceiver() as receiver:
        status = deliver(receiver.url, BODY, secret="s3cret", event="job.succeeded", delivery_id="abc.job.succeeded",
                         timeout_s=5, allow_private=True)
        (got,) = receiver.wait(1)
    assert status == 200 and got.body == BODY
    assert got.headers["X-Lexsearch-Event"] == "job.succeeded"
    assert got.headers["X-Lexsearch-Delivery"] == "abc.job.succeeded"
    assert verify_signature("s3cret", got.headers[SIGNATURE_HEADER.title()], got.body)


@pytest.mark.unit
def test_server_errors_are_retryable_client_errors_final() -> None:
    with WebhookReceiver() as receiver:
        receiver.script(503, 404, 429)
        kwargs = {"secret": "s", "event": "job.failed", "delivery_id": "d", "timeout_s": 5, "allow_private": True}
        with pytest.raises(WebhookError) as server_error:
            deliver(receiver.url, BODY, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(WebhookError) as not_found:
            deliver(receiver.url, BODY, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(WebhookError) as too_many:
            deliver(receiver.url, BODY, **kwargs)  # type: ignore[arg-type]
    assert server_error.value.retryable and not not_found.value.retryable and too_many.value.retryable


@pytest.mark.unit
def test_an_unreachable_receiver_is_retryable() -> None:
    from tests.support.redis_server import free_port

    with pytest.raises(WebhookError) as refused:
        deliver(f"http://127.0.0.1:{free_port()}/", BODY, secret="s", event="e", delivery_id="d", timeout_s=2,
                allow_private=True)
    assert refused.value.retryable
