"""The search methods as a family: each proposes what to measure next from what was
measured (the ledger), nothing else, so a resumed search (its ledger read back from the
stored runs) proposes what the killed one would have: its state is rebuilt, never saved.

A member subclasses StrategyBase, lives in its own file (grid.py, tpe.py, halving.py,
peak.py) and is listed in registry.py. The loop (loop.py) measures what it proposes,
re-measures what noise leaves undecided, and stops at the budget."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .ledger import Ledger
from .objective import Objective
from .space import Config, Space


@dataclass(frozen=True)
class Ask:
    """Measure `config` until it has `runs` observations (failed ones count: a failing
    configuration is not tried forever)."""

    config: Config
    runs: int


@dataclass(frozen=True)
class Setting:
    """What a method knows of its search."""

    space: Space
    objective: Objective
    seed: int
    units: float  # the budget of the search phase, in tests (baseline and end phase excluded)
    initial: int  # runs of a configuration measured for the first time
    confirm: int  # runs a configuration needs to win


class Strategy(Protocol):
    name: str

    def propose(self, ledger: Ledger) -> list[Ask]:
        """What to measure next, a batch the loop may reorder to save reboots; [] when the
        method has nothing more to ask."""
        ...

    def candidates(self, ledger: Ledger) -> list[Config]:
        """The measured configurations that may win (full-length tests of grid points)."""
        ...

    def describe(self) -> str:
        """One sentence of what it will do (`nettune run --dry-run`)."""
        ...


class StrategyBase:
    name = ""

    def __init__(self, setting: Setting):
        self.s = setting

    @property
    def space(self) -> Space:
        return self.s.space

    def propose(self, ledger: Ledger) -> list[Ask]:
        raise NotImplementedError

    def candidates(self, ledger: Ledger) -> list[Config]:
        return [c for c in ledger.by if c.duration is None and self.space.on_grid(c)]

    def describe(self) -> str:
        return self.name

    def fresh(self, ledger: Ledger, configs: list[Config], runs: int | None = None) -> list[Ask]:
        """Asks for those of `configs` that have fewer than `runs` (default: the initial runs)."""
        want = self.s.initial if runs is None else runs
        return [Ask(c, want) for c in configs if ledger.runs(c) < want]
