#!/usr/bin/env python3
"""The API's key check: two Redis round trips (look the key up, then count the request) against one
(:meth:`ApiKeyStore.authenticate_and_count`), alternating in one run against a private redis-server.

Example::

    nice -n 10 python scripts/bench_auth.py --rounds 20 --calls 200
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.bench_api import free_port, wait_until  # noqa: E402
from service.apikeys import ApiKeyStore, rate_name  # noqa: E402
from service.ratelimit import RateLimiter  # noqa: E402
from service.redisconn import connect  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="alternating rounds of each way")
    parser.add_argument("--calls", type=int, default=200, help="key checks per round")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-auth-"))
    port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(work),
                              "--save", "", "--logfile", str(work / "redis.log")])
    try:
        client = connect(f"redis://127.0.0.1:{port}/0")
        wait_until(lambda: client.ping(), 30, "redis")
        store, limiter = ApiKeyStore(client), RateLimiter(client)
        _, secret = store.create(("*",), rate_per_min=10_000_000)

        def two() -> None:
            key = store.authenticate(secret)
            assert key is not None
            assert limiter.hit(rate_name(key.id), per_minute=key.rate_per_min).allowed

        def one() -> None:
            found = store.authenticate_and_count(secret)
            assert found is not None and found[1].allowed

        per_call: dict[str, list[float]] = {"two round trips": [], "one round trip": []}
        for n in range(args.rounds):
            ways = [("two round trips", two), ("one round trip", one)]
            for name, check in ways if n % 2 == 0 else ways[::-1]:
                start = time.perf_counter()
                for _ in range(args.calls):
                    check()
                per_call[name].append((time.perf_counter() - start) * 1000 / args.calls)
    finally:
        redis.terminate()
        redis.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average {os.getloadavg()[0]:.1f}, "
          f"{args.rounds} rounds x {args.calls} checks each way\n")
    print("| key check | median ms per request (of the rounds' means) | best round |")
    print("|---|---:|---:|")
    for name, values in per_call.items():
        print(f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} |")


if __name__ == "__main__":
    main()
