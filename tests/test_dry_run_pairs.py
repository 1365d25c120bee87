"""Dry-run and the ETA count the tests that really run over host pairs: one per pair per
run (warm-ups included), and a parallel round takes the time of one test."""
import pytest

from nettune.plan.points import expand_and_check
from nettune.plan.study_file import parse_study
from nettune.commands.dry_run import dry_run
from nettune.commands.eta import plan_seconds


def _study(pairs: str, parallel: bool, runs: int = 2, warmup: int = 0, hosts: int = 4) -> tuple[object, str]:
    names = [f"h{i + 1}" for i in range(hosts)]
    text = (f'name = "nt-pairs"\n[target]\nkind = "lab"\nhosts = {names!r}\n'.replace("'", '"')
            + f'[workload]\nduration = 2\npairs = "{pairs}"\nparallel_pairs = {str(parallel).lower()}\n'
            + f"[sweep]\nparallel = [1, 2]\n[repeat]\nruns = {runs}\nwarmup = {warmup}\n")
    return parse_study(text, "s.toml"), text


@pytest.mark.parametrize("pairs,hosts,n_pairs", [("mesh", 4, 6), ("mesh", 5, 10), ("star:h1", 4, 3)])
def test_dry_run_counts_one_test_per_pair(pairs, hosts, n_pairs):
    study, text = _study(pairs, False, runs=2, warmup=1, hosts=hosts)
    plan = dry_run(study, text, "s.toml")  # type: ignore[arg-type]
    assert plan.host_pairs == n_pairs
    assert plan.tests == 2 * 3 * n_pairs  # points x (warm-up + runs) x pairs


def test_a_parallel_round_takes_the_time_of_one_test():
    seq, t1 = _study("mesh", False)
    par, t2 = _study("mesh", True)
    s_seq = plan_seconds(seq, expand_and_check(seq, t1, "s.toml"))[0]  # type: ignore[arg-type]
    s_par = plan_seconds(par, expand_and_check(par, t2, "s.toml"))[0]  # type: ignore[arg-type]
    assert s_seq == pytest.approx(2 * s_par)  # 6 tests one after another vs 3 rounds of 2 at once
    star, t3 = _study("star:h1", True)
    star_seq, t4 = _study("star:h1", False)
    # every spoke shares the centre: one pair per round, nothing runs at once
    assert plan_seconds(star, expand_and_check(star, t3, "s.toml"))[0] == pytest.approx(  # type: ignore[arg-type]
        plan_seconds(star_seq, expand_and_check(star_seq, t4, "s.toml"))[0])  # type: ignore[arg-type]
