"""The OpenSearch and Elasticsearch backends' shared parts, each in its own module.

* :mod:`~service.backends.engine.client`: the engine client (connection, product adapter protocol);
* :mod:`~service.backends.engine.errors`: error translation;
* :mod:`~service.backends.engine.facts`: index facts (field map, ``_meta``, languages), cached;
* :mod:`~service.backends.engine.lifecycle`: versions ``name-vN`` behind the alias ``name``;
* :mod:`~service.backends.engine.bulk`: bulk writing with retries;
* :mod:`~service.backends.engine.backend`: :class:`EngineBackend`, the SearchBackend composed of them.

The product adapters live beside this package: :mod:`service.backends.opensearch` and
:mod:`service.backends.elasticsearch`.
"""
