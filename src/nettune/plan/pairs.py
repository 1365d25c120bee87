"""Many hosts: which pairs to test, and in which rounds (pure functions).

`[workload] pairs` is one of
  "mesh"            every unordered pair of test hosts once (server = the host listed first)
  "star:HOST"       HOST is the server of every other host (study D: six hosts vs a switch)
  [["a", "b"], ...] explicit (server, client) pairs, in this order

Pairs are grouped in rounds in which no host is in two tests, so a round's pairs can run
at the same time (`parallel_pairs = true`) without one test disturbing another's host.
A mesh of n hosts uses the circle method (round-robin tournament): n-1 rounds when n is
even, n rounds when odd, each with floor(n/2) pairs; 4 hosts -> 6 pairs in 3 rounds.
Other pair lists are packed greedily in their given order.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..studyfile.network_workload import pairs_problem

Pair = tuple[str, str]  # (server, client)


def expand_pairs(spec: Any, hosts: Sequence[str]) -> list[Pair]:
    """The (server, client) pairs of a spec over the test hosts, in a stable order."""
    hosts = list(hosts)
    if spec == "mesh":
        return [(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1:]]
    if isinstance(spec, str) and spec.startswith("star:"):
        center = spec.split(":", 1)[1]
        if center not in hosts:
            raise ValueError(f"pairs = {spec!r}: {center!r} is not a test host ({', '.join(hosts)})")
        return [(center, h) for h in hosts if h != center]
    if isinstance(spec, str):
        raise ValueError(f'pairs = {spec!r}: use "mesh", "star:HOST" or a list of [server, client] pairs')
    out: list[Pair] = []
    for pair in spec:
        a, b = pair
        for h in (a, b):
            if h not in hosts:
                raise ValueError(f"pairs: {h!r} is not a test host ({', '.join(hosts)})")
        if a == b:
            raise ValueError(f"pairs: [{a!r}, {b!r}] needs two different hosts")
        out.append((a, b))
    return out


def mesh_rounds(hosts: Sequence[str]) -> list[list[Pair]]:
    """Circle method: fix the first host, rotate the others; pair position i with n-1-i."""
    order = {h: i for i, h in enumerate(hosts)}
    ring: list[str | None] = list(hosts)
    if len(ring) % 2:
        ring.append(None)  # a bye: whoever meets it sits the round out
    n = len(ring)
    if n < 2:
        return []
    first, others = ring[0], ring[1:]
    rounds: list[list[Pair]] = []
    for r in range(n - 1):
        rot = others[len(others) - r:] + others[: len(others) - r]
        arr = [first, *rot]
        rnd: list[Pair] = []
        for i in range(n // 2):
            a, b = arr[i], arr[n - 1 - i]
            if a is None or b is None:
                continue
            rnd.append((a, b) if order[a] < order[b] else (b, a))
        rnd.sort(key=lambda p: (order[p[0]], order[p[1]]))
        rounds.append(rnd)
    return rounds


def greedy_rounds(pairs: Sequence[Pair]) -> list[list[Pair]]:
    """Each pair goes into the first round where neither of its hosts is busy."""
    rounds: list[list[Pair]] = []
    busy: list[set[str]] = []
    for a, b in pairs:
        for rnd, used in zip(rounds, busy):
            if a not in used and b not in used:
                rnd.append((a, b))
                used.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def plan_rounds(spec: Any, hosts: Sequence[str]) -> list[list[Pair]]:
    """Rounds of (server, client) pairs; no host appears twice in a round."""
    if spec == "mesh":
        problem = pairs_problem(spec, list(hosts))
        if problem:
            raise ValueError(problem)
        return mesh_rounds(hosts)
    pairs = expand_pairs(spec, hosts)
    if not pairs:
        raise ValueError(f"pairs = {spec!r} gives no pair over hosts {', '.join(hosts)}")
    return greedy_rounds(pairs)


def check_rounds(rounds: list[list[Pair]]) -> None:
    """Assert the invariant (used by tests and as a guard): no host twice in a round."""
    for i, rnd in enumerate(rounds):
        seen: set[str] = set()
        for a, b in rnd:
            if a in seen or b in seen or a == b:
                raise AssertionError(f"round {i} uses a host twice: {rnd}")
            seen.update((a, b))
