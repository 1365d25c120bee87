"""The CPU-frequency and power knob kinds (cpufreq:governor, cpufreq:epp, cpuidle:max_state,
amd_pstate:mode, cpu:smt) on a fake sysfs root: the sandbox test seam's tree, seeded with
the files of a 4-CPU amd-pstate-epp machine in the kernel's formats (this machine has no
cpufreq, so the real files cannot be used here). No root, nothing on this machine changes."""
from __future__ import annotations

from pathlib import Path

import pytest

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.knobs.base import Ctx, KnobError, Loc
from nettune.knobs.registry import KINDS
from nettune.targets.sandbox import SandboxHost, seed_tree

from conftest import needs_iperf3

CPU = "sys/devices/system/cpu/"
GOVS = ["schedutil", "performance", "schedutil", "powersave"]


def seed_cpus(root: Path) -> None:
    """What amd-pstate-epp exposes (Documentation/admin-guide/pm/amd-pstate.rst, cpuidle.rst)."""
    seed_tree(root)
    files = {CPU + "amd_pstate/status": "active", CPU + "smt/control": "on"}
    for i, gov in enumerate(GOVS):
        d = f"{CPU}cpu{i}/"
        files |= {d + "cpufreq/scaling_governor": gov, d + "cpufreq/scaling_available_governors": "performance powersave schedutil",
                  d + "cpufreq/energy_performance_preference": "balance_performance",
                  d + "cpufreq/energy_performance_available_preferences": "default performance balance_performance balance_power power"}
        for k in range(3):
            files[d + f"cpuidle/state{k}/disable"] = "0"
    for rel, v in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(v + "\n")


def knob(key: str):
    kind_name, _, rest = key.partition(":")
    return KINDS[kind_name], Loc(key, kind_name, rest or None)


@pytest.fixture
def host(tmp_path) -> SandboxHost:
    seed_cpus(tmp_path / "a")
    return SandboxHost("a", tmp_path / "a")


def text(root: Path, rel: str) -> str:
    return (root / rel).read_text().strip()


def test_governor_every_cpu_and_each_back(host):
    kind, loc = knob("cpufreq:governor")
    before = kind.read(host, loc)
    assert before == {f"cpu{i}/cpufreq/scaling_governor": g for i, g in enumerate(GOVS)}
    kind.validate(host, loc, "performance", Ctx(4, None))
    kind.apply(host, loc, "performance")
    assert kind.same(kind.read(host, loc), "performance") and not kind.same(before, "performance")
    kind.restore(host, loc, before)
    assert [text(host.root, f"{CPU}cpu{i}/cpufreq/scaling_governor") for i in range(4)] == GOVS  # mixed stays mixed
    # a kill -9 after two CPUs: part original, part new, still nettune's to put back
    half = dict(before, **{"cpu0/cpufreq/scaling_governor": "performance", "cpu2/cpufreq/scaling_governor": "performance"})
    assert kind.between(half, before, "performance") and not kind.between(half | {"cpu3/cpufreq/scaling_governor": "ondemand"}, before, "performance")
    assert kind.show(before) == "mixed: performance on 1, powersave on 1, schedutil on 2"


def test_epp_needs_a_governor_that_does_not_pin_it(host):
    kind, loc = knob("cpufreq:epp")
    kind.validate(host, loc, "performance", Ctx(4, None))
    for i in range(4):
        (host.root / f"{CPU}cpu{i}/cpufreq/scaling_governor").write_text("performance\n")
    with pytest.raises(KnobError, match="pins EPP"):
        kind.validate(host, loc, "power", Ctx(4, None))
    with pytest.raises(KnobError, match="not offered here"):
        kind.validate(host, loc, "turbo", Ctx(4, None))


def test_unavailable_governor_is_refused_naming_the_choices(host):
    kind, loc = knob("cpufreq:governor")
    with pytest.raises(KnobError, match="available: performance, powersave, schedutil"):
        kind.validate(host, loc, "ondemand", Ctx(4, None))


def test_cpuidle_max_state(host):
    kind, loc = knob("cpuidle:max_state")
    before = kind.read(host, loc)
    kind.validate(host, loc, 1, Ctx(4, None))
    kind.apply(host, loc, 1)
    assert text(host.root, f"{CPU}cpu3/cpuidle/state2/disable") == "1" and text(host.root, f"{CPU}cpu3/cpuidle/state1/disable") == "0"
    assert kind.same(kind.read(host, loc), 1) and not kind.same(kind.read(host, loc), 2)
    kind.restore(host, loc, before)
    assert kind.same(kind.read(host, loc), 2)
    with pytest.raises(KnobError, match="beyond the deepest state 2"):
        kind.validate(host, loc, 5, Ctx(4, None))


def test_amd_pstate_mode_and_smt(host, tmp_path):
    kind, loc = knob("amd_pstate:mode")
    assert kind.read(host, loc) == "active"
    kind.apply(host, loc, kind.parse(loc, "passive"))
    assert text(host.root, CPU + "amd_pstate/status") == "passive"
    with pytest.raises(KnobError, match="use one of active, passive, guided"):
        kind.parse(loc, "disable")
    smt, sloc = knob("cpu:smt")
    assert smt.parse(sloc, False) == "off"
    (host.root / CPU / "smt/control").write_text("forceoff\n")
    with pytest.raises(KnobError, match="cannot be switched here"):
        smt.validate(host, sloc, "on", Ctx(4, None))
    bare = SandboxHost("b", tmp_path / "b")
    seed_tree(tmp_path / "b")
    with pytest.raises(KnobError, match="not driven by amd-pstate"):
        kind.read(bare, loc)


@needs_iperf3
def test_a_sweep_sets_each_point_and_restores_each_cpu(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    for h in ("server", "client"):
        seed_cpus(tree / h)
    monkeypatch.setenv("NETTUNE_SANDBOX", str(tree))
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    study = parse_study('name = "nettune-t-cpufreq"\n[target]\nkind = "local"\n[workload]\nduration = 1\n'
                        '[sweep]\ngov = ["performance", "powersave"]\n[knobs]\n"cpufreq:governor" = "{gov}"\n"cpuidle:max_state" = 0\n')
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store)
        runs = store.runs(out.study_id)
    assert out.status == "done" and out.failed == 0, out.warnings
    assert [r["settings"]["knobs"]["server"]["cpufreq:governor"] for r in runs] == ["performance", "powersave"]
    assert all(r["settings"]["knobs"]["server"]["cpuidle:max_state"] == 0 for r in runs)
    for h in ("server", "client"):
        assert [text(tree / h, f"{CPU}cpu{i}/cpufreq/scaling_governor") for i in range(4)] == GOVS
        assert text(tree / h, f"{CPU}cpu1/cpuidle/state2/disable") == "0"


PROFILES = {"balanced": "governor=schedutil|performance\n", "throughput-performance": "governor=performance\nenergy_performance_preference=performance\n",
            "powersave": "governor=powersave\nenergy_performance_preference=power|balance_power\n"}


def seed_tuned(root: Path, active: str = "balanced") -> None:
    """tuned's profiles in the sandbox tree (targets/sandbox_cpu.py runs tuned-adm on them)."""
    for name, cpu in PROFILES.items():
        (root / "usr/lib/tuned" / name).mkdir(parents=True)
        (root / "usr/lib/tuned" / name / "tuned.conf").write_text(f"[main]\nsummary={name}\n\n[cpu]\n{cpu}")
    (root / "etc/tuned").mkdir(parents=True)
    (root / "etc/tuned/active_profile").write_text(active + "\n")


def test_a_tuned_profile_keeps_its_governor_and_epp_under_every_amd_pstate_mode(tmp_path, monkeypatch):
    """The mode is set before the profile (whatever the study file's order: here tuned comes
    first), tuned's profile is applied again after each mode switch (which replaces the CPUs'
    policies), and the governor and EPP in force are read back and stored with every point."""
    tree = tmp_path / "tree"
    seed_cpus(tree / "local")
    seed_tuned(tree / "local")
    monkeypatch.setenv("NETTUNE_SANDBOX", str(tree))
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    study = parse_study('name = "nettune-t-tuned-pstate"\n[target]\nkind = "local"\nhosts = ["local"]\n'
                        '[workload]\nengine = "command"\nrun = ["true"]\n'
                        '[sweep]\nprofile = ["throughput-performance", "powersave"]\nmode = ["passive", "active", "guided"]\n'
                        '[knobs]\n"tuned" = "{profile}"\n"amd_pstate:mode" = "{mode}"\n')
    with StoreWriter(tmp_path / "r.db") as store:
        out = run_study(study, store)
        runs = store.runs(out.study_id)
    assert out.status == "done" and out.failed == 0 and len(runs) == 6, out.warnings
    want = {"throughput-performance": ("performance", "performance"), "powersave": ("powersave", "power")}
    for r in runs:
        seen = r.state.read_back["local"]
        gov, epp = want[r.point["profile"]]
        assert seen["amd_pstate"] == r.point["mode"] and seen["governor"] == gov, (r.point, seen)
        if r.point["mode"] == "active":  # EPP exists in active mode only (amd-pstate-epp)
            assert seen["epp"] == epp and seen["scaling_driver"] == "amd-pstate-epp"
        else:
            assert "epp" not in seen and seen["scaling_driver"] == "amd-pstate"
    root = tree / "local"
    assert text(root, CPU + "amd_pstate/status") == "active" and text(root, "etc/tuned/active_profile") == "balanced"
    # restored: the original mode, then balanced applied again after that switch (its governor, not the driver's default)
    assert {text(root, f"{CPU}cpu{i}/cpufreq/scaling_governor") for i in range(4)} == {"performance"}
