"""examples/study-b.toml rehearsed on the lab (issue 19): one study, the pair chosen by the
sweep, knobs only on the hosts of each point's pair, interval = 2 giving about duration/2
stored intervals per run, and `analyze --by os` naming a different knob effect per group."""
from __future__ import annotations

import json
import re

from conftest import EXAMPLES, lab_leftovers, needs_iperf2, needs_root, nettune

pytestmark = [needs_root, needs_iperf2]
DURATION = 8  # interval = 2: four per run, the fewest a stability verdict uses (analysis/stability.py)
MAX_RUNS = 6


def test_study_b_example_on_the_lab(tmp_path):
    text = (EXAMPLES / "study-b.toml").read_text().replace('name = "study-b"', 'name = "nt-studyb"')
    text = re.sub(r"duration = \d+", f"duration = {DURATION}", text)
    # the freebsd stand-in (64K socket buffers) is noisy on a busy 2-core machine: one outlier
    # in 3 runs can leave a 3x effect "not shown" over 8 tests. Adaptive repeats (3 to 6 runs,
    # until the 95% margin is within 5%) give each point what it needs, as a user would
    text, n = re.subn(r"(?m)^runs = 3\b.*$", f"min_runs = 3\nmax_runs = {MAX_RUNS}\ntarget_margin = 0.05", text)
    assert n == 1
    study = tmp_path / "study-b.toml"
    study.write_text(text)
    db = tmp_path / "r.db"
    try:
        out = nettune("run", str(study), "--db", str(db), timeout=900)
    finally:
        nettune("lab", "down", "nt-studyb")
    assert out.returncode == 0, out.stdout + out.stderr
    from nettune.store import Store

    with Store(db) as store:
        recs = store.runs(store.find_study("nt-studyb")["id"])
        sides = {r.id: {o["side"]: o["host"] for o in store.raw_outputs(r.id)} for r in recs}
    per_point: dict = {}
    for r in recs:
        per_point[json.dumps(r.point, sort_keys=True)] = per_point.get(json.dumps(r.point, sort_keys=True), 0) + 1
    assert len(per_point) == 8 and all(3 <= n <= MAX_RUNS for n in per_point.values()) and all(r.ok for r in recs), per_point
    for r in recs:
        os_ = r.point["os"]
        assert sides[r.id] == {"server": f"{os_}-a", "client": f"{os_}-b"}  # the pair the sweep chose
        knobs = r.settings.get("knobs", {})
        assert {h for h, vals in knobs.items() if "mtu" in vals} == {f"{os_}-a", f"{os_}-b"}  # only this point's pair
        # the stand-ins were asked for on the freebsd pair only
        assert not any(k.startswith("sockbuf") for h, vals in knobs.items() if h.startswith("debian") for k in vals)
        assert not any(k == "qdisc" for h, vals in knobs.items() if h.startswith("freebsd") for k in vals)
        fwd = [i for i in r.intervals if i.get("direction", "forward") == "forward"]
        assert DURATION // 2 - 1 <= len(fwd) <= DURATION // 2 + 1  # interval = 2
    res = json.loads(nettune("analyze", "nt-studyb", "--by", "os", "--format", "json", "--db", str(db), check=True).stdout)
    inter = {i["param"]: i for i in res["groups"]["interactions"]}
    said = "\n".join(res["findings"])
    assert set(inter) == {"mtu", "offload"}, said
    assert any(i["depends"] for i in inter.values()), said  # some knob acts differently per OS
    heads = [i["effects"] for i in inter.values()]
    for fb, deb in heads:
        # the lab's freebsd stand-in is noisy: with 3 runs and a 5% error over all 8 tests of
        # the --by analysis, a knob may be "no difference shown" there, but never slower
        assert fb["group"] == "freebsd" and fb["verdict"] in ("faster", "inconclusive"), said
        assert deb["group"] == "debian" and abs(deb["ratio"] - 1) < 0.1, said  # at its "line rate" either way
    assert any(fb["verdict"] == "faster" for fb, _ in heads), said
    print(said)  # shown with pytest -s: the rehearsal's verdicts
    assert len(res["stability"]) == len(recs)
    assert not lab_leftovers()
