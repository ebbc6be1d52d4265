"""Exercise answers for chapter 2 (computed, never typed)."""

from . import register  # noqa: F401
