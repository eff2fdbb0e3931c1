"""lexsearch: legal search from everyday questions to statute and decision citations."""

__version__ = "0.1.0"
