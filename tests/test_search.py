"""The search's decisions on simulated objectives (search/simulate.py), deterministic with a
seed and without root: the peak method on a curve that declines after its peak, constraints,
the defaults measured at the start and again at the end, a lucky single run re-measured
before it can win, halving's short tests, TPE's parameters, and the study file's [search]."""
from __future__ import annotations

import math

import pytest

from nettune import parse_study
from nettune.errors import SpecError
from nettune.search.answer_text import answer_lines
from nettune.search.ledger import Ledger
from nettune.search.loop import end_start
from nettune.search.session import plan_search
from nettune.search.simulate import SimMeasurer, sim_study_text
from nettune.search.tpe import distribution, suggest


def search(sweep, surface, cv=0.04, seed=0, lucky=None, params=None, **spec):
    text = sim_study_text(sweep, spec | {"seed": seed}, params=params)
    plan = plan_search(parse_study(text), text)
    m = SimMeasurer(surface, plan.objective, cv=cv, seed=seed, lucky=lucky or {}, full_duration=plan.space.full_duration)
    led = Ledger(plan.objective)
    loop = plan.loop(m, led)
    loop.run()
    return plan, led, plan.answer(led, loop.stopped), m


def p_curve(v):
    """Throughput over -P: rises to a peak at 10, then declines (study D's shape)."""
    p = v["p"]
    gbit = 288 * (1 - 0.008 * (p - 10) ** 2) if p <= 10 else 288 * max(0.3, 1 - 0.03 * (p - 10))
    return {"total": gbit * 1e9, "cpu_host": 20.0 + 2 * p}


P_VALUES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 24, 28, 32, 40, 48, 64]


class Drifting(SimMeasurer):
    """The machine slows by 30% from test `after` on."""

    def __init__(self, *args, after: int = 8, **kw):
        super().__init__(*args, **kw)
        self.after = after

    def measure(self, cfg, seq):
        o = super().measure(cfg, seq)
        if seq >= self.after and o.value is not None:
            o = type(o)(o.config, o.seq, {k: (v * 0.7 if v is not None else None) for k, v in o.metrics.items()},
                        o.value * 0.7, o.cost, o.seconds, o.switches)
        return o


def test_peak_finds_an_interior_peak_and_says_the_shape_after_it():
    plan, led, a, m = search({"p": P_VALUES}, p_curve, method="peak", budget=60)
    best = a.winner.params["p"]
    assert 8 <= best <= 12, a.winner  # within noise of the true peak at 10 (4% noise: 8 and 12 are within ~5%)
    assert a.peak.startswith(f"peak at p={best}") and "% at " in a.peak and "plateau" not in a.peak
    after = [int(x.split(" at ")[1]) for x in a.peak.split("; ", 1)[1].split(", ")]
    assert after and all(v > best for v in after)  # the shape after the peak, never just the largest value tried
    tried = {c.get("p") for c in led.by}
    assert max(tried) < 64 and len(tried) < len(P_VALUES) / 2  # stopped after the decline: far fewer than the grid
    assert a.verdict.verdict == "faster" and a.verdict.ci_low > 1  # the defaults (p=1) are far slower


def test_the_same_seed_gives_the_same_search_and_another_seed_another():
    for method in ("tpe", "halving", "peak"):
        sweep = {"p": P_VALUES} if method == "peak" else {"q": [1, 2, 4, 8], "p": [1, 2, 4, 8, 16, 32]}
        surf = p_curve if method == "peak" else (lambda v: {"total": 1e9 * (v["q"] ** 0.5) * p_curve(v)["total"] / 1e9, "cpu_host": 1.0})
        a1 = search(sweep, surf, seed=5, method=method, budget=40)[2]
        a2 = search(sweep, surf, seed=5, method=method, budget=40)[2]
        assert [(s.label, s.value) for s in a1.trace] == [(s.label, s.value) for s in a2.trace]
        a3 = search(sweep, surf, seed=6, method=method, budget=40)[2]
        assert [(s.label, s.value) for s in a1.trace] != [(s.label, s.value) for s in a3.trace]


def test_a_constraint_excludes_the_points_that_break_it():
    # the fastest configurations burn CPU above the bound: the winner is the best that keeps it
    def surface(v):
        return {"total": 1e9 * v["p"], "cpu_host": 10.0 * v["p"]}
    for method in ("tpe", "halving", "grid"):
        plan, led, a, m = search({"p": [1, 2, 3, 4, 5, 6, 7, 8], "q": [1, 2]}, surface, method=method, budget=60,
                                 constraints=["cpu_host <= 55"], cv=0.02)
        assert a.winner is not None and a.winner.params["p"] <= 5, (method, a.winner)
        assert m.true(plan.space.config({"p": a.winner.params["p"], "q": a.winner.params["q"]}))["cpu_host"] <= 55
        assert any(c.get("p") >= 6 for c in led.by), method  # violating points were tried, and left out


def test_the_defaults_are_measured_first_and_again_at_the_end():
    plan, led, a, m = search({"p": P_VALUES}, p_curve, method="tpe", budget=30, confirm=3)
    base = plan.space.baseline
    seqs = [o.seq for o in led.by[base]]
    assert seqs[:3] == [0, 1, 2]  # first
    start = end_start(led, base, 3)
    assert start is not None and len([s for s in seqs if s >= start]) == 3 and start > 10  # again at the end
    assert a.drift is not None and "drift check:" in "\n".join(answer_lines(a))
    assert a.verdict is not None and a.verdict.n_a == 3 and a.verdict.n_b == 3  # fresh runs of both, same rounds


def test_drift_of_the_defaults_is_said_and_widens_the_verdict():
    # the machine slows by 30% after the first 8 tests (the defaults' first runs and the
    # search's first probes): the defaults at the end differ from the start
    text = sim_study_text({"p": P_VALUES}, {"method": "peak", "budget": 60, "seed": 1})
    plan = plan_search(parse_study(text), text)
    led = Ledger(plan.objective)
    plan.loop(Drifting(p_curve, plan.objective, cv=0.01, seed=1), led).run()
    a = plan.answer(led)
    assert a.drift.verdict == "slower" and "widens its interval" in a.drift_text
    assert a.drift_text.startswith("at the end, the defaults are "), a.drift_text  # not "the defaults is"
    assert a.verdict.n_a == 6  # both measurements of the defaults


def test_a_lucky_single_run_is_measured_again_before_it_can_win():
    # p=2 is truly mediocre; its first run is 2.5x lucky. It must not win on that one run.
    plan, led, a, m = search({"p": P_VALUES}, p_curve, method="grid", budget=200, lucky={"p=2": 2.5}, cv=0.03)
    lucky = plan.space.config({"p": 2})
    vals = led.values(lucky)
    assert vals[0] > 1.15 * p_curve({"p": 10})["total"]  # it was lucky: above the true peak, the best single value of the study
    assert len(vals) >= 3  # re-measured: the noise rule gave it `confirm` runs
    assert a.winner.params["p"] != 2


def test_halving_runs_short_tests_first_and_its_winner_at_full_length():
    def surface(v):
        return {"total": 1e9 * (10 - abs(v["a"] - 6) - abs(v["b"] - 3)), "cpu_host": 1.0}
    plan, led, a, m = search({"a": list(range(1, 11)), "b": [1, 2, 3, 4, 5, 6]}, surface, method="halving", budget=40)
    durations = {c.duration for c in led.by}
    assert {3, 5, None} <= durations  # 10 s tests: 3 s, then 5 s, then full length
    short = [c for c in led.by if c.duration == 3]
    full = [c for c in plan.strategy.candidates(led)]
    assert len(short) > len(full) >= 1 and a.winner is not None and a.winner.label.count("s tests") == 0
    assert led.spent() <= 40 + 1e-9  # a short test costs its fraction of a full one
    assert abs(a.winner.params["a"] - 6) + abs(a.winner.params["b"] - 3) <= 2


def test_tpe_parameters_categorical_integer_log_and_conditional():
    text = sim_study_text({"cc": ["cubic", "bbr"], "pacing": [0, 1, 2], "streams": [1, 2, 4, 8, 16, 32, 64], "queues": [1, 2, 3, 4, 5]},
                          {"method": "tpe", "budget": 40}, params={"pacing": {"when": {"cc": ["bbr"]}}})
    plan = plan_search(parse_study(text), text)
    scales = {p.name: p.scale for p in plan.space.params}
    assert scales == {"cc": "categorical", "pacing": "ordered", "streams": "log", "queues": "ordered"}
    dists = {p.name: distribution(p) for p in plan.space.params}
    assert type(dists["streams"]).__name__ == "IntDistribution" and dists["streams"].log and not dists["queues"].log
    # pacing only with bbr: cubic's points with another pacing are the same candidate, counted once
    assert len(plan.space.grid) == 1 * 7 * 5 + 3 * 7 * 5
    assert all(c.get("pacing") == 0 for c in plan.space.grid if c.get("cc") == "cubic")

    class Trial:  # what suggest asks of an optuna trial
        def __init__(self, picks):
            self.picks, self.asked = picks, []

        def suggest_categorical(self, name, choices):
            self.asked.append(name)
            return self.picks[name]

        def suggest_int(self, name, low, high, log=False):
            self.asked.append(name)
            return self.picks[name]

    t = Trial({"cc": "cubic", "streams": 23, "queues": 3})
    cfg = suggest(plan.space, t)
    assert "pacing" not in t.asked and cfg.get("pacing") == 0 and cfg.get("streams") == 32  # 23 is nearer 32 than 16 on a log scale
    plan2, led, a, m = search({"cc": ["cubic", "bbr"], "pacing": [0, 1, 2], "streams": [1, 2, 4, 8, 16, 32, 64], "queues": [1, 2, 3, 4, 5]},
                              lambda v: {"total": 1e9 * (1 + (v["cc"] == "bbr") * v["pacing"]) * math.log2(v["streams"] + 1)},
                              method="tpe", budget=40, params={"pacing": {"when": {"cc": ["bbr"]}}})
    assert len(led.by) == len(set(led.by))  # nothing measured twice as a new candidate
    assert a.winner is not None and a.importances and set(a.importances) <= {"cc", "pacing", "streams", "queues"}


def test_the_ablation_puts_each_factor_back_to_its_default():
    def surface(v):  # streams matters, mtu does not
        return {"total": 1e9 * v["streams"] * (1 + 0.0 * v["mtu"])}
    plan, led, a, m = search({"streams": [1, 2, 4, 8], "mtu": [1500, 9000]}, surface, method="grid", budget=60, cv=0.02)
    assert a.winner.params["streams"] == 8
    by = {f.factor: f for f in a.factors}
    assert by["streams"].verdict == "mattered"
    if "mtu" in by:
        assert by["mtu"].verdict == "not shown"
    # a winner that differs from the defaults in one factor only: its ablation is the defaults,
    # said so rather than read as a second finding
    plan, led, a, m = search({"streams": [1, 2, 4, 8]}, lambda v: {"total": 1e9 * v["streams"]}, method="grid", budget=60, cv=0.02)
    (only,) = a.factors
    assert a.winner.params["streams"] == 8 and only.verdict == "mattered" and "that is the defaults: the verdict above" in only.text


@pytest.mark.parametrize("extra, field, words", [
    ('method = "peak"\n', "search", "name it with parameter"),
    ('objective = "totl"\n', "search.objective", "is not a metric"),
    ('constraints = ["cpu_host << 3"]\n', "search.constraints", "write METRIC OP NUMBER"),
    ('budget = "3x"\n', "search.budget", "a number of tests"),
    ('method = "tpe"\nper = "total"\n', "search", "lower is better"),
    ('[search.params.r]\nscale = "log"\n', "search", "not a sweep parameter"),
])
def test_bad_search_sections_are_one_line(extra, field, words):
    text = 'name = "x"\n[target]\nkind = "local"\n[sweep]\np = [1, 2, 4, 8]\nq = [1, 2]\n[search]\n' + extra
    with pytest.raises(SpecError) as e:
        parse_study(text, "s.toml")
    assert e.value.field == field and words in str(e.value) and "\n" not in str(e.value)


def test_objective_by_field_name_and_a_budget_too_small():
    text = sim_study_text({"p": [1, 2, 4]}, {"method": "tpe", "objective": "total_bps", "budget": 5})
    study = parse_study(text, "s.toml")
    assert study.search.objective == "total"
    with pytest.raises(SpecError) as e:
        plan_search(study, text, "s.toml")
    assert e.value.field == "search.budget" and "give at least" in str(e.value)


@pytest.mark.parametrize("fail_at, runs_of_defaults", [(4, 7), (1, 7), (2, 7)])
def test_a_failed_test_of_the_defaults_is_measured_again(fail_at, runs_of_defaults):
    # the tool crashes on one run of the defaults (at the start, or the end phase's first):
    # the verdict still gets `confirm` values of the defaults on each side, not "no verdict"
    class FailsOnce(SimMeasurer):
        calls = 0

        def measure(self, cfg, seq):
            o = super().measure(cfg, seq)
            if cfg == self.base:
                FailsOnce.calls += 1
                if FailsOnce.calls == fail_at:  # 4: confirm = 3 at the start, then the end phase's first
                    return type(o)(o.config, o.seq, {}, None, o.cost, o.seconds, o.switches)
            return o
    text = sim_study_text({"p": P_VALUES}, {"method": "peak", "budget": 60, "seed": 1})
    plan = plan_search(parse_study(text), text)
    led = Ledger(plan.objective)
    m = FailsOnce(p_curve, plan.objective, cv=0.02, seed=1)
    m.base = plan.space.baseline
    FailsOnce.calls = 0
    loop = plan.loop(m, led)
    loop.run()
    a = plan.answer(led, loop.stopped)
    base = plan.space.baseline
    assert led.runs(base) == runs_of_defaults and len(led.values(base)) == 6  # the failed run, then one more
    assert [o.value is None for o in led.by[base]][fail_at - 1]
    assert a.complete and a.verdict is not None and a.verdict.n_a == 3 and a.verdict.verdict == "faster"
    assert "p=" in a.verdict_text and "95% CI" in a.verdict_text


def test_reboots_are_counted_in_the_budget_and_batched():
    # `boot` stands for a boot-time knob: changing it costs a reboot (4 tests here)
    def surface(v):
        return {"total": 1e9 * (5 + v["boot"] * 2 - abs(v["p"] - 4))}
    text = sim_study_text({"boot": [0, 1], "p": [1, 2, 3, 4, 5, 6, 7, 8]}, {"method": "halving", "budget": 80, "seed": 4})
    plan = plan_search(parse_study(text), text)
    led = Ledger(plan.objective)
    m = SimMeasurer(surface, plan.objective, cv=0.02, seed=4, switch=("boot",), reboot_cost=4.0, full_duration=plan.space.full_duration)
    loop = plan.loop(m, led)
    loop.run()
    start = end_start(led, plan.space.baseline, plan.setting.confirm)
    search_phase = [o for o in led.obs if start is None or o.seq < start]
    switched = sum(o.switches for o in search_phase)
    rungs = len(plan.strategy.rungs())
    assert 1 <= switched <= 2 * rungs  # each rung's batch grouped by boot value: at most one reboot into it and one out
    assert led.switches() == sum(o.switches for o in led.obs)
    assert led.spent() == pytest.approx(sum(o.cost for o in led.obs)) and any(o.cost >= 4.0 for o in led.obs)  # reboots paid for
    a = plan.answer(led, loop.stopped)
    assert any("reboot(s)" in n for n in a.notes) and a.winner.params["boot"] == 1


def test_a_leader_shown_better_wins_though_failures_left_it_unconfirmed():
    # the budget ran out while p=8's third run failed: two runs far above the confirmed
    # defaults are no lucky single run, so it (not the defaults) goes to the end phase
    from nettune.search.loop import winner_before
    from nettune.search.objective import Observation

    text = sim_study_text({"p": [1, 2, 4, 8]}, {"method": "peak", "budget": 40})
    plan = plan_search(parse_study(text), text)
    led = Ledger(plan.objective)
    base, best, lucky = plan.space.config({"p": 1}), plan.space.config({"p": 8}), plan.space.config({"p": 4})
    for cfg, v in [(base, 1.00e9), (base, 1.01e9), (base, 0.99e9), (best, 8.0e9), (best, 8.1e9), (best, None), (lucky, 20e9)]:
        led.add(Observation(cfg, led.next_seq, {"total": v}, v, 1.0, 1.0, 0))
    assert winner_before(plan.strategy, led, None, 3, base) == best  # one lucky run (p=4) still does not win
    led2 = Ledger(plan.objective)
    for cfg, v in [(base, 1.00e9), (base, 1.01e9), (base, 0.99e9), (best, 1.0e9), (best, 1.3e9)]:
        led2.add(Observation(cfg, led2.next_seq, {"total": v}, v, 1.0, 1.0, 0))
    assert winner_before(plan.strategy, led2, None, 3, base) == base  # not shown better: the confirmed one


def two_peaks(v):
    """A near peak at 4 and a higher, far one at 28 (a dip between them stays flat)."""
    p = v["p"]
    return {"total": 1e9 * (60 + 30 * math.exp(-((p - 4) / 1.5) ** 2) + 45 * math.exp(-((p - 28) / 6) ** 2))}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_peak_does_not_stop_at_a_dip_and_refines_the_far_higher_peak(seed):
    values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 20, 24, 28, 32, 40, 48, 56, 64]
    plan, led, a, m = search({"p": values}, two_peaks, method="peak", budget=40, seed=seed, cv=0.03)
    tried = {c.get("p") for c in led.by}
    assert 32 in tried  # the flat dip after 4 (8, 16) did not end the coarse pass
    assert a.winner.params["p"] == 28, a.winner  # refined around the second local maximum too
    assert len(tried) < len(values) * 2 / 3


def test_a_rising_curve_is_not_confirmed_at_every_step_but_its_winner_is():
    # the noise rule waits while there is budget to explore: the probes on the way up get
    # one run each, and only the leader and its rivals within noise get `confirm` runs
    plan, led, a, m = search({"p": P_VALUES}, p_curve, method="peak", budget=60, seed=3)
    assert [led.runs(plan.space.config({"p": p})) for p in (2, 4)] == [1, 1]
    assert led.n(plan.space.config({"p": a.winner.params["p"]})) >= 3 + 3  # confirmed, then the end phase's fresh runs


def test_halving_keeps_a_configuration_near_a_bound_and_drops_one_shown_to_break_it():
    # the best that keeps cpu_host <= 60 is q=4, s=4 (cpu 56): one short run a little over 60
    # must not drop it, and a configuration far over the bound goes no further than its first rung
    def surface(v):
        q, s = v["queues"], v["streams"]
        return {"total": 15e9 * q ** 0.5 * math.log2(1 + s), "cpu_host": 6.0 * s + 8 * q}
    wins = 0
    for seed in range(4):
        plan, led, a, m = search({"queues": [1, 2, 4, 8], "streams": [1, 2, 4, 8, 16, 32, 64]}, surface, method="halving",
                                 budget=40, seed=seed, constraints=["cpu_host <= 60"])
        second = [c for c in led.by if c.duration == plan.strategy.rungs()[1][0]]
        assert second and all(m.true(c)["cpu_host"] < 90 for c in second), seed  # far over the bound: not past the first rung
        best = {k: a.winner.params[k] for k in ("queues", "streams")}
        assert m.true(plan.space.config(best))["cpu_host"] <= 60
        wins += best == {"queues": 4, "streams": 4}
    assert wins >= 3


def test_defaults_left_as_found_can_win_over_every_grid_point():
    # w only sets a knob, so the defaults leave it as found (w=default, not a grid point);
    # they beat every configuration tried: the answer is the defaults, not the best loser
    text = ('name = "sim"\n[target]\nkind = "local"\n[workload]\nduration = 1\n[sweep]\np = [1, 2, 4, 8]\n'
            'w = [16384, 4194304]\n[knobs]\n"sysctl:net.ipv4.tcp_wmem" = "4096 {w} 4194304"\n'
            '[search]\nmethod = "tpe"\nbudget = 30\nseed = 1\n')
    plan = plan_search(parse_study(text), text)
    assert plan.space.baseline.get("w") == "default" and not plan.space.on_grid(plan.space.baseline)
    m = SimMeasurer(lambda v: {"total": 1e9 * (10 if v["w"] == "default" and v["p"] == 1 else 6)}, plan.objective, cv=0.02)
    led = Ledger(plan.objective)
    loop = plan.loop(m, led)
    loop.run()
    a = plan.answer(led, loop.stopped)
    assert a.winner is not None and a.winner.label == a.baseline.label, a.winner
    assert a.verdict_text == "the best configuration found is the defaults themselves"


def test_the_stop_reason_does_not_call_a_budget_spent_that_was_not():
    # 20 tests: 3 for the defaults, up to 15 kept for the end phase (3 rounds of the defaults,
    # the winner and 3 ablations), 2 to search; a winner differing in one parameter needs 6
    def surface(v):
        return {"total": 1e9 * (2 if v["a"] == 2 else 1)}
    plan, led, a, m = search({"a": [1, 2], "b": [1, 2], "c": [1, 2]}, surface, method="tpe", budget=20, cv=0.02)
    assert a.spent < 20
    assert a.stopped.startswith("the search's share") and "kept for the end phase" in a.stopped, a.stopped


def test_the_dry_run_of_a_search_counts_and_times_the_search_not_the_grid(tmp_path):
    # it said "32 points x 1 runs = 32 tests ... expected time: about 51s ... run order: #0 #1 ..."
    # above "the search runs at most 20 tests, about 32s"
    from typer.testing import CliRunner

    from nettune.cli.main import app

    f = tmp_path / "s.toml"
    f.write_text('name = "x"\n[target]\nkind = "local"\nhosts = ["local"]\n[workload]\nengine = "command"\nrun = ["sleep", "{t}"]\n'
                 '[sweep]\nt = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]\n[search]\nmethod = "tpe"\nbudget = 14\n')
    out = " ".join(CliRunner().invoke(app, ["run", str(f), "--dry-run", "--db", str(tmp_path / "r.db")],
                                      env={"COLUMNS": "200"}, prog_name="nettune").output.split())
    assert "x: a search of at most 14 tests over 12 candidate points" in out, out
    assert "= 12 tests" not in out and "run order:" not in out, out
    assert "the search runs at most 14 tests" in out
    assert "up to 9 tests; 2 tests left for the search itself)" in out  # 3 for the defaults, 9 held for the end phase
    # a timed command of no declared duration: its length is unknown, said so (it was counted
    # at the network default of 10 s a test: "30 tests, about 5m18s" for sleeps under 0.3 s)
    assert "their time unknown until the command's first run" in out and "2m" not in out, out
    assert "expected time: unknown until the command's first run" in out and "at most about" not in out, out


def test_persist_best_cautions_when_the_winner_was_not_shown_better():
    # a flat surface: whatever wins, the end phase shows no difference from the defaults
    # (lab: 'wrote 7 files for eyes-tpe (...); nothing was applied' beside 'verdict: no difference shown (-8.9%...)')
    from nettune.search.answer_text import persist_caution

    plan, led, a, m = search({"p": [1, 2, 4, 8]}, lambda v: {"total": 1e9}, method="tpe", budget=20, cv=0.05)
    assert a.verdict is not None and a.verdict.verdict == "inconclusive", a.verdict_text
    assert persist_caution(a).startswith("note: the winner was not shown better than the defaults (verdict: no difference shown")
    plan, led, a, m = search({"p": [1, 2, 4, 8]}, lambda v: {"total": 1e9 * v["p"]}, method="tpe", budget=20, cv=0.05)
    assert a.verdict.verdict == "faster" and persist_caution(a) == ""


def test_the_winner_line_is_on_the_search_runs_like_the_defaults_and_the_runners_up():
    # drift after the search: the winner's fresh end-phase runs are 30% lower. Its line must
    # stand on the same runs as the runners-up compared with it, not on all of them
    text = sim_study_text({"p": P_VALUES}, {"method": "peak", "budget": 30, "seed": 1})
    plan = plan_search(parse_study(text), text)
    led = Ledger(plan.objective)
    plan.loop(Drifting(p_curve, plan.objective, cv=0.01, seed=1, after=14), led).run()
    a = plan.answer(led)
    start = end_start(led, plan.space.baseline, plan.setting.confirm)
    win = plan.space.config({"p": a.winner.params["p"]})
    assert a.winner.n == len(led.values(win, before=start)) < len(led.values(win))
    assert a.winner.mean == led.estimate(win, before=start).mean
    assert f"{a.peak.split(', ')[1].split(' ')[0]}" in answer_lines(a)[2]  # the peak's value is the winner's
