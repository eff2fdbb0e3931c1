# lexsearch: one image for the API (`lexsearch serve`), the job workers (`lexsearch worker`) and
# one-shot commands (`lexsearch index ...`). The default embedder (USE v3) ships inside its pip
# package, so the image needs no model download at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --system --create-home --home-dir /srv/lexsearch --shell /usr/sbin/nologin lexsearch

WORKDIR /srv/lexsearch/app
COPY setup.cfg pyproject.toml README.md ./
COPY service ./service
COPY workers ./workers
COPY analyzers ./analyzers
COPY mappings ./mappings
RUN pip install . \
    && mkdir -p /srv/lexsearch/var \
    && chown -R lexsearch: /srv/lexsearch

USER lexsearch
# analyzers/ is read from the working tree, indices and caches go to the var volume
ENV LEXSEARCH_ANALYZERS_DIR=/srv/lexsearch/app/analyzers \
    LEXSEARCH_INDEX_ROOT=/srv/lexsearch/var/indices \
    LEXSEARCH_EMBEDDER_CACHE_DIR=/srv/lexsearch/var/embedding-cache
VOLUME ["/srv/lexsearch/var"]
EXPOSE 8080

ENTRYPOINT ["lexsearch"]
CMD ["serve", "--bind", "0.0.0.0:8080"]
