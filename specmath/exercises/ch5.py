"""Exercise answers for chapter 5 (computed, never typed)."""

from . import register  # noqa: F401
