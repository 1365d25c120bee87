"""The tools nettune can drive, by the name a study file uses (workload.engine)."""
from __future__ import annotations

from .base import Engine
from .timed_command import CommandEngine
from .iperf2 import Iperf2Engine
from .iperf3 import Iperf3Engine

ENGINES: dict[str, Engine] = {"iperf3": Iperf3Engine(), "iperf2": Iperf2Engine(), "command": CommandEngine()}


def get_engine(name: str) -> Engine:
    """The engine called `name`; ValueError naming the known ones otherwise."""
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})") from None


__all__ = ["ENGINES", "CommandEngine", "Engine", "Iperf2Engine", "Iperf3Engine", "get_engine"]
