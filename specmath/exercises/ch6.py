"""Exercise answers for chapter 6 (computed, never typed)."""

from . import register  # noqa: F401
