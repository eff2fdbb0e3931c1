"""docker-compose.yml, .env.example and the Dockerfile: the Compose Specification's JSON schema
(``check-jsonschema --builtin-schema vendor.compose-spec``), ``docker-compose config -q`` where that
binary is installed, and the project's own rules (no Docker engine runs here)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from service.config import load_settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = re.compile(r"(?<!\$)\$\{([A-Z0-9_]+)(?:(:?[-?])([^}]*))?\}")


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    """``check-jsonschema`` (the dev extra) against the Compose Specification schema it ships."""
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_compose_file_follows_the_compose_specification() -> None:
    result = check_jsonschema(ROOT / "docker-compose.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_catches_a_broken_compose_file(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    broken.write_text(text.replace("    healthcheck:\n      test: [\"CMD\", \"redis-cli\", \"ping\"]",
                                   "    healthcheck:\n      tset: [\"CMD\", \"redis-cli\", \"ping\"]"),
                      encoding="utf-8")
    assert broken.read_text(encoding="utf-8") != text
    result = check_jsonschema(broken)
    assert result.returncode == 1 and "tset" in result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("docker-compose") is None,
                    reason="no docker-compose binary here (`docker compose` v2 or the v1 package runs this check)")
def test_docker_compose_accepts_the_file_with_the_example_env(tmp_path: Path) -> None:
    result = subprocess.run(["docker-compose", "--env-file", str(ROOT / ".env.example"), "--project-directory",
                             str(ROOT), "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def env_example() -> dict[str, str]:
    out = {}
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example line without '=': {line!r}"
            out[key] = value
    return out


def test_services_and_their_roles(compose) -> None:
    services = compose["services"]
    assert set(services) == {"elasticsearch", "es-setup", "kibana", "redis", "api", "worker", "indexer"}
    assert services["api"]["command"][0] == "serve" and services["worker"]["command"][0] == "worker"
    assert services["elasticsearch"]["environment"]["discovery.type"] == "single-node"
    assert services["kibana"]["environment"]["ELASTICSEARCH_HOSTS"] == '["http://elasticsearch:9200"]'
    assert services["indexer"]["profiles"] == ["tools"]


def test_api_and_worker_share_the_image_and_wait_for_their_dependencies(compose) -> None:
    services = compose["services"]
    for name in ("api", "worker", "indexer"):
        svc = services[name]
        assert svc["build"] == "." and svc["image"].startswith("lexsearch:")
        assert svc["depends_on"] == {"elasticsearch": {"condition": "service_healthy"},
                                     "redis": {"condition": "service_healthy"}}
        env = svc["environment"]
        assert env["LEXSEARCH_BACKEND_KIND"] == "elasticsearch"
        assert env["LEXSEARCH_BACKEND_URL"] == "http://elasticsearch:9200"
        assert env["LEXSEARCH_JOBS_REDIS_URL"] == "redis://redis:6379/0"
    assert services["kibana"]["depends_on"] == {"es-setup": {"condition": "service_completed_successfully"}}
    for name in ("elasticsearch", "redis", "api"):
        assert "healthcheck" in services[name], name


def test_ports_are_published_on_loopback_only(compose) -> None:
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


def test_named_volumes_are_declared(compose) -> None:
    declared = set(compose["volumes"])
    for name, svc in compose["services"].items():
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/", "$")):
                assert source in declared, f"{name} uses undeclared volume {source}"


def test_every_variable_is_documented_in_env_example(env_example) -> None:
    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    used = {m.group(1): m.group(2) for m in VARIABLE.finditer(text)}
    assert used, "no ${VARIABLES} found"
    missing = sorted(name for name in used if name not in env_example)
    assert not missing, f"variables not in .env.example: {missing}"
    required = sorted(name for name, op in used.items() if op and op.endswith("?"))
    assert required == ["ELASTIC_PASSWORD", "KIBANA_PASSWORD"]


def test_the_lexsearch_environment_is_valid_settings(compose, env_example) -> None:
    """Every LEXSEARCH_* variable the containers get names a real setting with a valid value."""
    env = compose["services"]["api"]["environment"]

    def resolve(value: str) -> str:
        return VARIABLE.sub(lambda m: env_example.get(m.group(1)) or m.group(3) or "", str(value))

    environ = {key: resolve(value) for key, value in env.items() if key.startswith("LEXSEARCH_")}
    environ["LEXSEARCH_LLM_BASE_URL"] = ""
    settings = load_settings(environ=environ)
    assert settings.backend.kind == "elasticsearch" and settings.backend.username == "elastic"
    assert settings.index.name == env_example["LEXSEARCH_INDEX"]


def test_dockerfile_builds_the_package_and_runs_lexsearch() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    assert "pip install ." in text and 'ENTRYPOINT ["lexsearch"]' in text
    assert "USER lexsearch" in text  # not root
    for path in re.findall(r"^COPY (\S+)", text, flags=re.M):
        assert (ROOT / path).exists(), f"Dockerfile copies missing {path}"
