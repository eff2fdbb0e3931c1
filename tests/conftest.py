pytest_plugins = [
    "tests.support.fixtures",
    "tests.support.corpus",
    "tests.support.engines",
    "tests.support.redis_server",
]
