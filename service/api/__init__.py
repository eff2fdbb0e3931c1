"""The HTTP service: :func:`service.api.app.create_app` builds the Flask app from ``Settings``."""
