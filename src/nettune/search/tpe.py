"""tpe: optuna's Tree-structured Parzen Estimator over the sweep's parameters.

Each parameter becomes an optuna distribution: categorical values as choices, ordered
numbers as an integer (or float) range, log-scaled ones as a log range; a suggestion is
taken to the nearest listed value on the parameter's scale. A conditional parameter
(`[search.params.X] when = {...}`) is suggested only where its condition holds, as
optuna's define-by-run does. The optimizer holds no state of its own: at every proposal
its study is built again from the ledger (each configuration once, its current mean,
which re-measurements move), with a seed that depends on how many trials it holds, so a
resumed search asks what the killed one would have asked. A configuration the sampler
proposes again is told its mean and the sampler asked again (it spends nothing).
Constraints: a configuration whose mean breaks one is told a value worse than any other.
"""
from __future__ import annotations

import random
import warnings
from typing import Any

from .base import Ask, StrategyBase
from .ledger import NO, Ledger
from .space import Config, Param, Space, nearest

RETRIES = 40  # proposals of measured configurations before taking an unmeasured one at random


def optuna_study(space: Space, ledger: Ledger, configs: list[Config], higher: bool, seed: int) -> Any:
    """An optuna study holding these configurations at their current means."""
    import optuna  # noqa: PLC0415 - a heavy import, only for a search

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    values = {c: ledger.estimate(c).mean for c in configs}
    good = [v for c, v in values.items() if v is not None and ledger.feasibility(c) != NO]
    penalty = None
    if good:
        lo, hi = min(good), max(good)
        penalty = (lo - (hi - lo) - abs(lo) * 0.1) if higher else (hi + (hi - lo) + abs(hi) * 0.1)
    startup = max(3, min(10, len(space.grid) // 8))
    with warnings.catch_warnings():  # multivariate and group are optuna's "experimental" options; they are what conditions need
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(seed=seed * 100_003 + len(configs), n_startup_trials=startup, multivariate=True,
                                             group=any(p.when for p in space.params))
    study = optuna.create_study(direction="maximize" if higher else "minimize", sampler=sampler)
    for c in configs:
        params, dists = trial_params(space, c)
        v = values[c]
        if v is None:
            study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, state=optuna.trial.TrialState.FAIL))
        else:
            told = penalty if ledger.feasibility(c) == NO and penalty is not None else v
            study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=told))
    return study


def ordered_params(space: Space) -> list[Param]:
    """Conditioning parameters before the ones that depend on them."""
    out: list[Param] = []
    todo = list(space.params)
    while todo:
        ready = [p for p in todo if all(k in {q.name for q in out} for k, _ in p.when)] or todo[:1]
        out += ready
        todo = [p for p in todo if p not in ready]
    return out


def distribution(p: Param) -> Any:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: PLC0415

    if p.scale == "categorical":
        return CategoricalDistribution(list(p.values))
    lo, hi = min(p.values), max(p.values)
    if all(isinstance(v, int) for v in p.values):
        return IntDistribution(int(lo), int(hi), log=p.scale == "log")
    return FloatDistribution(float(lo), float(hi), log=p.scale == "log")


def trial_params(space: Space, cfg: Config) -> tuple[dict[str, Any], dict[str, Any]]:
    """A configuration as optuna trial parameters: its active parameters only."""
    values = dict(cfg.values)
    params, dists = {}, {}
    for p in ordered_params(space):
        if p.active(values):
            params[p.name] = values[p.name]
            dists[p.name] = distribution(p)
    return params, dists


def suggest(space: Space, trial: Any) -> Config:
    values: dict[str, Any] = {}
    for p in ordered_params(space):
        if not p.active(values):
            continue
        d = distribution(p)
        if p.scale == "categorical":
            values[p.name] = trial.suggest_categorical(p.name, list(p.values))
        elif type(d).__name__ == "IntDistribution":
            values[p.name] = nearest(p, trial.suggest_int(p.name, d.low, d.high, log=d.log))
        else:
            values[p.name] = nearest(p, trial.suggest_float(p.name, d.low, d.high, log=d.log))
    return space.config(values)


class Tpe(StrategyBase):
    name = "tpe"

    def propose(self, ledger: Ledger) -> list[Ask]:
        known = [c for c in sorted(self.candidates(ledger), key=ledger.first_seq)]
        if len(known) >= len(self.space.grid):
            return []
        study = optuna_study(self.space, ledger, known, self.s.objective.higher_is_better, self.s.seed)
        for _ in range(RETRIES):
            trial = study.ask()
            cfg = suggest(self.space, trial)
            if not ledger.tried(cfg):
                return [Ask(cfg, self.s.initial)]
            mean = ledger.estimate(cfg).mean
            if mean is None:
                study.tell(trial, state=_fail())
            else:
                study.tell(trial, mean)
        rest = [c for c in self.space.grid if not ledger.tried(c)]
        return [Ask(random.Random(self.s.seed * 7919 + len(known)).choice(rest), self.s.initial)] if rest else []

    def describe(self) -> str:
        kinds = ", ".join(f"{p.name} ({p.scale}{', when ' + ', '.join(k for k, _ in p.when) if p.when else ''})" for p in self.space.params)
        return f"tpe (optuna's TPE sampler) over {kinds}: {len(self.space.grid)} configurations"


def _fail() -> Any:
    import optuna  # noqa: PLC0415

    return optuna.trial.TrialState.FAIL
