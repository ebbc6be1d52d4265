"""Exercise answers for chapter 1 (computed, never typed)."""

from . import register  # noqa: F401
