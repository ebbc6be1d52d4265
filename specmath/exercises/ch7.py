"""Exercise answers for chapter 7 (computed, never typed)."""

from . import register  # noqa: F401
