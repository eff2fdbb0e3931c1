pytest_plugins = ["tests.support.fixtures", "tests.support.corpus"]
