"""Exercise answers for chapter 0 (computed, never typed)."""

from . import register  # noqa: F401
