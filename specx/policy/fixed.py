"""`fixed`: the same k every round."""
from __future__ import annotations

from .base import Policy


class Fixed(Policy):
    """Drafts k tokens every round; the drafter stops only where it has nothing more to propose."""

    name = "fixed"
