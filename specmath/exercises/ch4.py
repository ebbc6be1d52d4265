"""Exercise answers for chapter 4 (computed, never typed)."""

from . import register  # noqa: F401
