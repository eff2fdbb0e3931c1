"""The HTTP service: ``create_app(settings)`` builds the Flask app (see :mod:`service.api.app`)."""

from service.api.app import create_app

__all__ = ["create_app"]
