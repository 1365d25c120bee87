"""The search methods by `[search] method` name."""
from __future__ import annotations

from .base import Setting, Strategy, StrategyBase
from .grid import Grid
from .halving import Halving
from .peak import Peak
from .tpe import Tpe

METHODS: dict[str, type[StrategyBase]] = {m.name: m for m in (Grid, Tpe, Halving, Peak)}


def strategy(method: str, setting: Setting) -> Strategy:
    return METHODS[method](setting)
