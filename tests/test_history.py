"""`nettune history` and `nettune check --history`: change points in a study's reruns
(ruptures places them, a permutation test judges them), what changed across each, the gate's
exit codes and JSON. Synthetic reruns written into real stores (tests/study_builders.py);
one history read from the session's throwaway PostgreSQL cluster."""
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from nettune.analysis.changepoints import find_steps, latest_step
from nettune.analysis.history import history
from nettune.analysis.history_gate import gate
from nettune.cli.main import app
from nettune.errors import NettuneError
from nettune.store.writer import StoreWriter
from nettune.store.locate import store_at

from conftest import nettune
from study_builders import build

POINTS = [{"q": 1}, {"q": 2}]


def _reruns(store, levels: list[float], seed: int = 0, noise: float = 0.01, kernels: list[str] | None = None,
            name: str = "s", points: list[dict] = POINTS) -> list[int]:
    """One stored rerun of study `name` per level (Gbit/s at every point), oldest first."""
    ids = []
    for i, g in enumerate(levels):
        facts = {"client": {"cpu_count": 8, "kernel": (kernels or ["Linux 6.1"] * len(levels))[i]}}
        ids.append(build(store, name, [(p, g) for p in points], runs=3, noise=noise, seed=seed * 1000 + i, facts=facts))
    return ids


def _series(rng: np.random.Generator, n: int, step_at: int | None, step: float) -> list[float]:
    """n rerun means of 10 (1% noise of 3 runs each), stepping by `step` from index step_at."""
    x = 10 + rng.normal(0, 0.1 / np.sqrt(3), n)
    if step_at is not None:
        x[step_at:] += step
    return list(x)


def _changes(x: list[float], m: int) -> list:
    steps = find_steps(x, m)
    last = latest_step(x, steps[-1].at if steps else 0, m)
    return steps + ([last] if last is not None and all(s.at != last.at for s in steps) else [])


def test_identical_reruns_raise_at_most_5pct_false_alarms():
    """The design rate is 5% per history (Bonferroni over the split test and the latest-rerun
    test, each exact under alike normal reruns; 4.97% over 10,000 simulated histories when
    written): counted over 2,000 seeded histories, within their sampling error of 5%.
    Without the Bonferroni (m=1) the count doubles and this fails."""
    rng = np.random.default_rng(42)
    histories = 2000
    for n in (6, 12):  # reruns
        alarms = sum(bool(_changes(_series(rng, n, None, 0), 2)) for _ in range(histories))  # m=2: one series' two tests
        assert alarms / histories <= 0.05 + 2 * (0.05 * 0.95 / histories) ** 0.5, f"{n} reruns: {alarms} of {histories} alarms"


def test_an_injected_step_is_placed_within_one_rerun():
    rng = np.random.default_rng(7)
    for s in range(20):
        at = 3 + s % 4  # 3..6 of 10 reruns
        found = _changes(_series(rng, 10, at, -0.5), 2)  # a 5% drop against 0.6% rerun scatter
        assert found and any(abs(c.at - at) <= 1 for c in found), (s, at, [c.at for c in found])
        c = next(c for c in found if abs(c.at - at) <= 1)
        assert c.size == pytest.approx(-0.5, abs=0.15) and c.ci_low < c.size < c.ci_high < 0


def test_history_names_the_step_its_interval_and_what_changed(tmp_path):
    with StoreWriter(tmp_path / "r.db") as st:
        ids = _reruns(st, [10.0] * 5 + [9.0] * 4, kernels=["Linux 6.1"] * 5 + ["Linux 6.6"] * 4)
        _reruns(st, [10.0], points=[{"q": 7}])  # a rerun of the name with other points: left out
        h = history(st, "s", POINTS)
    assert [r.study_id for r in h.reruns] == ids and len(h.left_out) == 1 and "other points" in h.left_out[0]
    assert [s.label for s in h.series] == ["q=1", "q=2"] and h.tests == 4
    for s in h.series:
        assert len(s.changes) == 1, [c.to_dict() for c in s.changes]
        c = s.changes[0]
        assert abs(c.step.at - 5) <= 1 and c.step.pct == pytest.approx(-10, abs=2) and c.step.ci_high < 0
        if c.step.at == 5:
            assert (c.study_before, c.study_after) == (ids[4], ids[5])
            assert any("kernel" in w and "Linux 6.1 -> Linux 6.6" in w for w in c.changed), c.changed
    assert all(v.n == 3 and v.ci_low < v.mean < v.ci_high for s in h.series for v in s.values)


def test_identical_stored_reruns_show_no_change_point(tmp_path):
    with StoreWriter(tmp_path / "r.db") as st:
        _reruns(st, [10.0] * 6, seed=3)
        h = history(st, "s")
    assert h.changes == [] and len(h.reruns) == 6


def test_history_refuses_what_it_cannot_tell(tmp_path):
    with StoreWriter(tmp_path / "r.db") as st:
        _reruns(st, [10.0] * 2)
        with pytest.raises(NettuneError, match="no finished study named 'x'"):
            history(st, "x")
        h = history(st, "s")
        g = gate(h, 5.0, strict=True)
    assert h.notes and "2 rerun(s)" in h.notes[0]
    assert {s.verdict for s in g.series} == {"inconclusive"} and g.exit_code == 3 and gate(h, 5.0).exit_code == 0


def test_history_from_postgresql(pg_url):
    with store_at(pg_url) as st:
        ids = _reruns(st, [10.0] * 4 + [8.0] * 3, seed=5)
        h = history(st, "s")
    assert [r.study_id for r in h.reruns] == ids
    assert all(len(s.changes) >= 1 and abs(s.changes[0].step.at - 4) <= 1 for s in h.series)
    _saves_and_replaces(pg_url, ids)


def _saves_and_replaces(db: str, ids: list[int]) -> None:
    """`history --save` stores every change point (what the JSON shows), a second save
    replaces them, and a failed one leaves them."""
    r = CliRunner().invoke(app, ["history", "s", "--db", db, "-f", "json", "--save"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    want = [(s["label"], c["study_after"], c["step"], c["changed"]) for s in doc["series"] for c in s["changes"]]
    assert want and f"stored {len(want)} change point(s) of s" in r.stderr
    for _ in range(2):
        with store_at(db) as st:
            saved = st.change_points("s")
        assert sorted((c["series"], c["study_after"], c["step"], c["changed"]) for c in saved) == sorted(want)
        assert all(c["metric"] == doc["metric"] and c["unit"] == doc["unit"] and c["study_after"] in ids for c in saved)
        assert r.exit_code == 0
        r = CliRunner().invoke(app, ["history", "s", "--db", db, "--save"])  # again: replaced, not doubled
    r = CliRunner().invoke(app, ["history", "nosuch", "--db", db, "--save"])
    assert r.exit_code != 0
    with store_at(db) as st:
        assert len(st.change_points("s")) == len(want)


def test_history_save_on_sqlite(tmp_path):
    db = str(tmp_path / "r.db")
    with StoreWriter(db) as st:
        ids = _reruns(st, [10.0] * 4 + [8.0] * 3, seed=5)
    _saves_and_replaces(db, ids)


def test_check_history_exit_codes_and_json(tmp_path):
    """Exit 1 and the JSON (stdout = --out) on a regression, 0 on no change, 2 on an error:
    through the real CLI; the other verdicts in process (CliRunner: a subprocess costs
    seconds of imports on a loaded CI machine)."""
    db = tmp_path / "r.db"
    with StoreWriter(db) as st:
        _reruns(st, [10.0] * 6 + [9.0] * 2, seed=1, name="down")
        _reruns(st, [10.0] * 6 + [11.0] * 2, seed=1, name="up")
        _reruns(st, [10.0] * 6, seed=1, name="flat")
        _reruns(st, [10.0] * 7 + [8.5], seed=1, name="last")
    out = tmp_path / "c.json"
    p = nettune("check", "down", "--history", "--db", str(db), "--format", "json", "--out", str(out))
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc == json.loads(out.read_text()) and doc["verdict"] == "regressed" and doc["exit_code"] == 1
    assert {s["verdict"] for s in doc["series"]} == {"regressed"} and doc["series"][0]["change"]["step_pct"] < -5
    p = nettune("check", "flat", "--history", "--db", str(db), "--out", str(out))
    assert p.returncode == 0 and "PASS" in p.stdout and {s["verdict"] for s in json.loads(out.read_text())["series"]} == {"no change"}
    p = nettune("check", "nope", "--history", "--db", str(db), "--out", str(out))
    assert p.returncode == 2 and "no finished study named 'nope'" in p.stderr and "Traceback" not in p.stderr
    assert json.loads(out.read_text())["verdict"] == "error"

    def run(*args: str) -> tuple[int, dict]:
        r = CliRunner().invoke(app, ["check", *args, "--db", str(db), "--out", str(out)], env={"COLUMNS": "200"})
        return r.exit_code, json.loads(out.read_text())

    code, doc = run("up", "--history")
    assert code == 0 and {s["verdict"] for s in doc["series"]} == {"improved"}
    code, doc = run("down", "--history", "--tolerance", "20%")
    assert code == 0 and {s["verdict"] for s in doc["series"]} == {"within tolerance"}
    code, doc = run("last", "--history")  # one rerun after the step: the latest rerun alone is outside its interval
    assert code == 1 and {s["change"]["kind"] for s in doc["series"]} == {"latest"}
    code, doc = run("down", "--history", "--window", "1")  # the step is 2 reruns back, outside a window of 1
    assert code == 0 and {s["verdict"] for s in doc["series"]} == {"no change"}
    code, doc = run("down", "--history", "--baseline", str(db))
    assert code == 2 and "without --baseline" in doc["error"]
    code, doc = run("down")
    assert code == 2 and "--history" in doc["error"]


def test_history_cli_text_and_json(tmp_path):
    db = tmp_path / "r.db"
    with StoreWriter(db) as st:
        _reruns(st, [10.0] * 5 + [9.0] * 4, kernels=["Linux 6.1"] * 5 + ["Linux 6.6"] * 4)
    p = nettune("history", "s", "--db", str(db))
    assert p.returncode == 0, p.stderr
    assert "9 reruns" in p.stdout and "a step between" in p.stdout and "Linux 6.1 -> Linux 6.6" in p.stdout
    r = CliRunner().invoke(app, ["history", "s", "--db", str(db), "-f", "json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and len(doc["reruns"]) == 9 and all(s["changes"] for s in doc["series"])
    r = CliRunner().invoke(app, ["history", "s", "--db", str(db), "-f", "yaml"])
    assert r.exit_code == 2 and "--format 'yaml'" in r.output
