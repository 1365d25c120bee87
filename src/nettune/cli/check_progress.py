"""The progress of a study `nettune check` reruns (with or without --history)."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape


class Lines:
    """A rerun's progress as one line per finished test (no bar: check runs in CI logs);
    on stderr when stdout carries a machine format."""

    def __init__(self, out: Console) -> None:
        self.out = out

    def start(self, study: Any, total_tests: int, expected_seconds: float) -> None:
        self.out.print(f"rerunning {study.name}: {total_tests} tests", highlight=False)

    def test_start(self, slot: Any, index: int) -> None: ...

    def test_end(self, slot: Any, result: Any, seconds: float) -> None:
        what = f"{result.total_bps / 1e9:.3f} Gbit/s" if result.ok and result.total_bps is not None else f"failed: {result.error}"
        pair = f" {result.pair.pair}" if result.pair is not None and result.pair.pair else ""
        self.out.print(escape(f"  {slot.point.label()} run {slot.run}{pair}: {what}"), highlight=False)

    def message(self, text: str) -> None:
        self.out.print(escape(text), highlight=False)

    def eta(self, tests_left: int, seconds_left: float) -> None: ...
