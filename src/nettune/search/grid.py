"""grid: every candidate of the sweep, in the sweep's order (the loop groups those that
boot alike). A budget smaller than the grid stops it part way, and the answer says so."""
from __future__ import annotations

from .base import Ask, StrategyBase
from .ledger import Ledger


class Grid(StrategyBase):
    name = "grid"

    def propose(self, ledger: Ledger) -> list[Ask]:
        return self.fresh(ledger, self.space.grid)

    def describe(self) -> str:
        return f"grid: all {len(self.space.grid)} configurations, {self.s.initial} run(s) each"
