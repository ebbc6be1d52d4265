"""Exercise answers for chapter 3 (computed, never typed)."""

from . import register  # noqa: F401
