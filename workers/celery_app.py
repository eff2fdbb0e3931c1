"""The entry module of ``celery -A workers.celery_app worker``: the app, built from ``LEXSEARCH_*`` settings.

Building a Celery app connects to nothing, so ``app`` is a plain module attribute. The app's
configuration and the task names live in :mod:`service.taskqueue` (the API enqueues by name
through it), the tasks in :mod:`workers.tasks`. ``lexsearch worker`` does not import this module:
it builds its app from its own settings with :func:`workers.tasks.make_celery`.
"""

from __future__ import annotations

from service.config import load_settings
from service.cpu import resolve
from workers.tasks import make_celery

app = make_celery(resolve(load_settings(), role="worker"))
