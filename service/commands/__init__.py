"""One module per ``lexsearch`` sub-command; each has ``register(subparsers)`` and ``run(args)``."""
