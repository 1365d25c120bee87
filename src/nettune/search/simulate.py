"""Simulated objectives behind the search's Measurer: a response surface (a function of a
configuration's values) plus noise, measured without root, a target or a tool. The bench
(bench/search) runs its synthetic surfaces through this, and the tests run the loop's
decisions (peaks, constraints, lucky runs) deterministically with a seed."""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from .objective import Objective, Observation
from .space import Config

Surface = Callable[[dict[str, Any]], dict[str, float]]  # values -> true metric means


@dataclass
class SimMeasurer:
    """Each measurement: every metric's true mean times lognormal noise of `cv` (or
    `noise(values, metric, rng)` when given); `lucky` configurations' first measurement is
    multiplied by their factor (a lucky run), and `switch` names the parameters whose
    change costs a reboot."""

    surface: Surface
    objective: Objective
    cv: float = 0.05
    seed: int = 0
    lucky: dict[str, float] = field(default_factory=dict)  # config label -> factor of its first run
    switch: tuple[str, ...] = ()
    reboot_cost: float = 0.0
    full_duration: int | None = None
    short_bias: float = 0.0  # a short test's relative bias per halving of its length (slow start)
    now: Config | None = None
    measured: list[Config] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def switch_key(self, cfg: Config) -> Any:
        return tuple(cfg.get(k) for k in self.switch)

    def current(self) -> Config | None:
        return self.now

    def true(self, cfg: Config) -> dict[str, float]:
        return self.surface(dict(cfg.values))

    def measure(self, cfg: Config, seq: int) -> Observation:
        switches = int(self.now is not None and self.switch_key(self.now) != self.switch_key(cfg) and bool(self.switch))
        self.now = cfg
        true = self.true(cfg)
        metrics: dict[str, float | None] = {}
        sigma = math.sqrt(math.log(1 + self.cv ** 2))
        bias = 1.0
        if cfg.duration is not None and self.full_duration:
            bias -= self.short_bias * math.log2(self.full_duration / cfg.duration)
        first = cfg not in self.measured
        for name in self.objective.names:
            v = true.get(name)
            if v is None:
                metrics[name] = None
                continue
            x = v * math.exp(self.rng.gauss(-sigma ** 2 / 2, sigma)) * (bias if name == self.objective.metric else 1.0)
            if first and name == self.objective.metric:
                x *= self.lucky.get(cfg.label(), 1.0)
            metrics[name] = x
        self.measured.append(cfg)
        frac = (cfg.duration / self.full_duration) if cfg.duration is not None and self.full_duration else 1.0
        return Observation(cfg, seq, metrics, self.objective.value(metrics), frac + switches * self.reboot_cost,
                           frac * (self.full_duration or 10) + 1.0, switches)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    return repr(v)


def sim_study_text(sweep: dict[str, Any], search: dict[str, Any], name: str = "sim", duration: int = 10,
                   params: dict[str, dict[str, Any]] | None = None) -> str:
    """A study file for a simulated search: a local target whose sweep lists are the
    surface's parameters (nothing is run: the SimMeasurer measures)."""
    lines = [f'name = "{name}"', "[target]", 'kind = "local"', "[workload]", f"duration = {duration}", "[sweep]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in sweep.items()]
    lines += ["[search]"] + [f"{k} = {toml_value(v)}" for k, v in search.items()]
    for p, spec in (params or {}).items():
        lines += [f"[search.params.{p}]"] + [f"{k} = {toml_value(v)}" for k, v in spec.items()]
    return "\n".join(lines) + "\n"
