"""Run one slot of a network workload: a single test, or the workload over many host pairs
(`[workload] pairs`), round by round.

The network kind (run/workloads/network_run.py) calls `run_slot` for every slot: one
run_test, or, when `wl.pairs` is set, `run_pairs` (the rounds themselves are planned in
plan.pairs); every result goes to `on_result` (store.add_run) the moment it ends. Pair results are runs of the same point and run number; `result.pair`
(record/parts.PairPlace) says which pair:

    pair.pair    "a->b"   (server->client)
    pair.server, pair.client
    pair.round   0-based round index within this point's run
    pair.round_pairs  how many pairs that round had
    pair.parallel     whether the round's pairs ran at the same time
    pair.round_total_bps  parallel rounds only: sum of the ok pairs' throughput

Rounds never put a host in two tests, so with parallel_pairs the pairs of a round run in
threads at the same time and their sum is the aggregate the hosts reached together.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Collection

from ..engines.base import Engine
from ..engines.result import TestResult
from ..record.parts import PairPlace
from ..plan.pairs import Pair, plan_rounds
from ..probes.base import Probe
from ..studyfile.workload import Workload
from ..targets.base import Host, Target
from .driver import run_test, run_test_failed
from .network_steps import ServerAccess


def pair_rounds(wl: Workload, test_hosts: list[str]) -> list[list[Pair]]:
    """The rounds of a pairs workload over these test hosts (an ssh target's hypervisors
    only get sampled, never a pair)."""
    return plan_rounds(wl.pairs, test_hosts)


def run_pairs(
    engine: Engine,
    wl: Workload,
    target: Target,
    tool_version: str,
    on_result: Callable[[TestResult], object] | None = None,
    extra_machines: dict[str, Host] | None = None,
    skip: Collection[str] = (),
    on_round: Callable[[list[TestResult]], object] | None = None,
    access: ServerAccess | None = None,
) -> list[TestResult]:
    """Every pair of `wl.pairs`, round after round; results in run order.

    `extra_machines` defaults to the target's (hypervisors sampled during every test).
    `on_result` is called as soon as a test (sequential) or a round (parallel) ends;
    `on_round`, when given, takes a parallel round's results at once instead (so they can
    be stored together: a round measured together is kept whole or not at all).
    Pairs labelled in `skip` ("a->b", already stored by a run that was killed) are not run.
    `access` (run.credentials.StudyAccess) gives each test's server its binding and credentials.
    """
    if extra_machines is None:
        extra_machines = target.extra_machines
    results: list[TestResult] = []
    for r, full in enumerate(pair_rounds(wl, list(target.test_hosts))):
        rnd = [p for p in full if pair_label(p) not in skip]
        parallel = bool(wl.parallel_pairs) and len(rnd) > 1

        def one(pair: Pair) -> TestResult:
            server, client = pair
            res = _one_test(engine, wl, target.hosts[server], target.hosts[client], tool_version, extra_machines, access)
            res.pair = PairPlace(pair=pair_label(pair), server=server, client=client, round=r, round_pairs=len(full), parallel=parallel)
            return res

        if parallel:
            with ThreadPoolExecutor(len(rnd), thread_name_prefix="nettune-pair") as ex:
                done = list(ex.map(one, rnd))
            total = sum(x.total_bps or 0.0 for x in done if x.ok)
            for res in done:
                if res.pair is not None:
                    res.pair.round_total_bps = total
            if on_round:
                on_round(done)
            elif on_result:
                for res in done:
                    on_result(res)
        else:
            done = []
            for pair in rnd:
                res = one(pair)
                done.append(res)
                if on_result:
                    on_result(res)
        results.extend(done)
    return results


def pair_label(pair: Pair) -> str:
    return f"{pair[0]}->{pair[1]}"


def round_totals(results: list[TestResult]) -> dict[int, float]:
    """Aggregate throughput per round (sum of ok pairs), from results' pair parts."""
    out: dict[int, float] = {}
    for res in results:
        rnd = None if res.pair is None else res.pair.round
        if rnd is not None and res.ok:
            out[rnd] = out.get(rnd, 0.0) + (res.total_bps or 0.0)
    return out


def run_slot(engine: Engine, wl: Workload, target: Target, tool_version: str, on_result: Callable[[TestResult], object],
             skip: Collection[str] = (), on_round: Callable[[list[TestResult]], object] | None = None,
             access: ServerAccess | None = None, meters: Callable[[], list[Probe]] | None = None) -> list[TestResult]:
    """One slot of a network workload: a single test, or every pair of `wl.pairs` in rounds
    (but those in `skip`). Hosts in `target.extra_machines` (ssh hypervisors) are sampled
    during every test; `access` gives servers their binding and credentials; `meters`
    makes the [probes] power meter's probe for a test (one per test)."""
    extra = target.extra_machines
    if wl.pairs is not None:
        return run_pairs(engine, wl, target, tool_version, on_result=on_result, extra_machines=extra, skip=skip, on_round=on_round, access=access)
    res = _one_test(engine, wl, target.hosts[wl.server], target.hosts[wl.client], tool_version, extra, access,
                    meters() if meters else None)
    on_result(res)
    return [res]


def _one_test(engine: Engine, wl: Workload, server: Host, client: Host, tool_version: str, extra: dict[str, Host],
              access: ServerAccess | None, meters: list[Probe] | None = None) -> TestResult:
    try:
        one = access.for_test(wl, server, client) if access is not None else None
    except ConnectionError as e:  # the credentials could not be put on a host
        return run_test_failed(engine, wl, tool_version, f"connection lost: {e}")
    return run_test(engine, wl, server, client, tool_version, extra_machines=extra, access=one, meters=meters)
