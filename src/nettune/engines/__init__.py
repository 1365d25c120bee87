"""The tools nettune can drive, by the name a study file uses (workload.engine)."""
from __future__ import annotations

from .base import Engine, Tool
from .timed_command import CommandEngine
from .iperf2 import Iperf2Engine
from .iperf3 import Iperf3Engine

# the traffic tools (server and client); the network workload kind runs them
NETWORK_ENGINES: dict[str, Engine] = {"iperf3": Iperf3Engine(), "iperf2": Iperf2Engine()}
# every `engine =` value's tool: the network engines and the command workload's sh
ENGINES: dict[str, Tool] = {**NETWORK_ENGINES, "command": CommandEngine()}


def get_engine(name: str) -> Tool:
    """The engine called `name`; ValueError naming the known ones otherwise."""
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})") from None


def network_engine(name: str) -> Engine:
    """The network engine called `name`; ValueError naming them otherwise."""
    try:
        return NETWORK_ENGINES[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a network engine (known: {', '.join(sorted(NETWORK_ENGINES))})") from None


__all__ = ["ENGINES", "NETWORK_ENGINES", "CommandEngine", "Engine", "Iperf2Engine", "Iperf3Engine", "Tool", "get_engine", "network_engine"]
