"""The network workload kind, its study-file half: traffic between a server host and a
client host (engine = "iperf3", "iperf2" or "auto"), or over many host pairs (`pairs`).

Its hosts are `server` and `client`, or every host its pairs name ("mesh": every test
host). Its primary metric is the throughput of a test (`total_bps`, higher is better).
The command kind's fields (host, setup, run, cleanup, cwd, env) are refused here: set for
a traffic tool they would be silently ignored. How a run uses it: run/workloads/network_run.py.
"""
from __future__ import annotations

from typing import Any

from .command_fields import COMMAND_FIELDS
from .expr import has_placeholder
from .workload import Workload
from .workload_kind import HostField, PrimaryMetric, WorkloadKindBase


def pairs_hosts(pairs: Any) -> list[str]:
    """Host names a `pairs` value names explicitly ("mesh" names none)."""
    if isinstance(pairs, str):
        return [pairs.split(":", 1)[1]] if pairs.startswith("star:") else []
    return list(dict.fromkeys(h for pair in pairs for h in pair))


def pairs_problem(pairs: Any, hosts: list[str]) -> str | None:
    """Why a `pairs` value whose hosts exist gives no test over these test hosts (None:
    it gives at least one). plan.pairs makes the rounds; this is what the file must say."""
    if pairs == "mesh" and len(hosts) < 2:
        return f'pairs = "mesh" needs at least two test hosts, got {len(hosts)}'
    if isinstance(pairs, str) and pairs.startswith("star:") and len(hosts) < 2:
        return f"pairs = {pairs!r} gives no pair over hosts {', '.join(hosts)}"
    return None


def stray_command_fields(wl: Workload) -> list[str]:
    """The command kind's fields a workload sets (for a network engine: refused)."""
    named = {"host": wl.host, "cwd": wl.cwd} | {k: v for k, v in zip(COMMAND_FIELDS, (wl.setup, wl.run, wl.cleanup))}
    return [k for k in ("host", "setup", "run", "cleanup", "cwd") if named[k] is not None] + (["env"] if wl.env else [])


class NetworkWorkload(WorkloadKindBase):
    name = "network"
    engines = ("auto", "iperf3", "iperf2")
    primary = PrimaryMetric("total_bps", "Gbit/s", True)

    def check(self, wl: Workload) -> str | None:
        stray = stray_command_fields(wl)
        if stray and "{" not in str(wl.engine):  # set for a network tool: a mistake, never silently ignored
            return f"{', '.join(stray)} {'applies' if len(stray) == 1 else 'apply'} to engine = \"command\" only (engine is {wl.engine!r})"
        if wl.pairs is not None:
            if isinstance(wl.pairs, list) and any(a == b for a, b in wl.pairs):
                return "pairs: each pair needs two different hosts"
            return None
        if wl.server == wl.client:
            return "server and client must be different hosts"
        return None

    def check_written(self, wl: Workload, test_hosts: list[str]) -> str | None:
        if wl.pairs is None:
            return super().check_written(wl, test_hosts)
        for h in pairs_hosts(wl.pairs):
            if "{" not in h and h not in test_hosts:  # a template follows the sweep: checked at every point (plan.point_hosts)
                return f"workload.pairs: {h!r} is not a target host that runs tests ({', '.join(test_hosts)})"
        return pairs_problem(wl.pairs, test_hosts)  # e.g. "mesh" over one host

    def host_fields(self, wl: Workload) -> list[HostField]:
        if wl.pairs is not None:
            return [HostField("workload.pairs", h) for h in pairs_hosts(wl.pairs)]
        return [HostField("workload.server", wl.server), HostField("workload.client", wl.client)]

    def hosts_problem(self, wl: Workload, test_hosts: list[str]) -> tuple[str, str] | None:
        problem = pairs_problem(wl.pairs, test_hosts) if wl.pairs is not None else None
        return ("workload.pairs", problem) if problem else None

    def follows_sweep(self, wl: Workload) -> bool:
        return has_placeholder([wl.server, wl.client]) or (wl.pairs is not None and has_placeholder(wl.pairs))

    def point_hosts(self, wl: Workload, test_hosts: list[str]) -> list[str]:
        if wl.pairs is None:
            return [wl.server, wl.client]
        if wl.pairs == "mesh":  # every test host (pairs_problem refuses fewer than two)
            return list(test_hosts)
        if isinstance(wl.pairs, str):  # "star:HOST": the centre, then every other test host
            center = pairs_hosts(wl.pairs)[0]
            return [center] + [h for h in test_hosts if h != center]
        return pairs_hosts(wl.pairs)
