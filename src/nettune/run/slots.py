"""Run one slot of a study: a single test, or the workload over many host pairs
(`[workload] pairs`), round by round.

run_study calls `run_slot` for every slot: one run_test, or, when `wl.pairs` is set,
`run_pairs` (the rounds themselves are planned in plan.pairs); every result goes to `on_result` (store.add_run) the
moment it ends. Pair results are runs of the same point and run number; `result.pair`
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
from typing import Any, Callable, Collection

from ..engines.result import TestResult
from ..record.parts import PairPlace
from .driver import run_test, run_test_failed
from ..plan.pairs import Pair, plan_rounds


def traffic_hosts(target: Any) -> list[str]:
    """Hosts that may carry traffic (an ssh target's hypervisors only get sampled)."""
    return list(target.test_hosts)


def pair_rounds(wl: Any, target: Any) -> list[list[Pair]]:
    return plan_rounds(wl.pairs, traffic_hosts(target))


def hosts_in_pairs(wl: Any, target: Any) -> list[str]:
    """Every host a pairs workload uses (for preflight: the tool must be on each)."""
    return list(dict.fromkeys(h for rnd in pair_rounds(wl, target) for pair in rnd for h in pair))


def run_pairs(
    engine: Any,
    wl: Any,
    target: Any,
    tool_version: str,
    on_result: Callable[[TestResult], None] | None = None,
    extra_machines: dict[str, Any] | None = None,
    skip: Collection[str] = (),
    on_round: Callable[[list[TestResult]], None] | None = None,
    access: Any = None,
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
    for r, full in enumerate(pair_rounds(wl, target)):
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


def workload_hosts(wl: Any, target: Any) -> list[str]:
    """Hosts a workload runs its tool on (preflight checks each): server and client, or
    every host of its pairs; a command workload's one host."""
    if wl.engine == "command":  # default: the target's first host that runs tests
        return [wl.host or traffic_hosts(target)[0]]
    return hosts_in_pairs(wl, target) if wl.pairs is not None else [wl.server, wl.client]


def run_slot(engine: Any, wl: Any, target: Any, tool_version: str, on_result: Callable[[TestResult], None],
             skip: Collection[str] = (), on_round: Callable[[list[TestResult]], None] | None = None,
             access: Any = None, meters: Callable[[], list[Any]] | None = None) -> list[TestResult]:
    """One slot of a study: a single test, or every pair of `wl.pairs` in rounds (but
    those in `skip`). Hosts in `target.extra_machines` (ssh hypervisors) are sampled
    during every test; `access` gives servers their binding and credentials; `meters`
    makes the [probes] power meter's probe for a test (one per test)."""
    extra = target.extra_machines
    if not engine.network:  # engine = "command": one timed command on one host
        from .command_driver import command_host, run_command_test  # noqa: PLC0415

        res = run_command_test(engine, wl, command_host(wl, target), extra, meters() if meters else None)
        on_result(res)
        return [res]
    if wl.pairs is not None:
        return run_pairs(engine, wl, target, tool_version, on_result=on_result, extra_machines=extra, skip=skip, on_round=on_round, access=access)
    res = _one_test(engine, wl, target.hosts[wl.server], target.hosts[wl.client], tool_version, extra, access,
                    meters() if meters else None)
    on_result(res)
    return [res]


def _one_test(engine: Any, wl: Any, server: Any, client: Any, tool_version: str, extra: Any, access: Any,
              meters: list[Any] | None = None) -> TestResult:
    try:
        one = access.for_test(wl, server, client) if access is not None else None
    except ConnectionError as e:  # the credentials could not be put on a host
        return run_test_failed(engine, wl, tool_version, f"connection lost: {e}")
    return run_test(engine, wl, server, client, tool_version, extra_machines=extra, access=one, meters=meters)
