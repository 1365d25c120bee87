"""nettune run --cross-check on the real lab: a point re-measured with the other engine and
with iperf3 fanned out, side by side with a verdict, in the run's outcome, the database,
analyze and the report; the CLI cross-checks exactly the points analysis marks tool-bound."""

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.analysis.data import load
from nettune.analysis.instrument import tool_bound_points
from nettune.run.cross_check import verdict

from conftest import lab_leftovers, needs_iperf2, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3, needs_iperf2]

STUDY = """
name = "nettune-t-xcheck"
[target]
kind = "lab"
[workload]
engine = "iperf3"
parallel = "{p}"
duration = 1
[sweep]
p = [1, 4]
"""


def test_cross_check_of_a_chosen_point_side_by_side(tmp_path):
    db = tmp_path / "r.db"
    with StoreWriter(db) as s:
        out = run_study(parse_study(STUDY), s, cross_check=[1])  # the p=4 point, whatever its CPU was
        stored = s.cross_checks(out.study_id)
        names = {x["name"]: x for x in s.studies()}
    assert out.status == "done" and len(out.cross_checks) == 1 and stored[0]["label"] == "p=4"
    rows = stored[0]["rows"]
    assert [r["config"] for r in rows][0] == "iperf3" and "iperf2" in [r["config"] for r in rows]
    assert all(r["gbps"] and r["gbps"] > 0 and r["n"] == 1 for r in rows), rows
    assert "iperf3 x2" in [r["config"] for r in rows] or len(__import__("os").sched_getaffinity(0)) == 1
    text = stored[0]["verdict"]
    assert text.startswith("iperf3 3.12 single process: ") and "->" in text
    # the re-runs are stored whole in a study of their own
    assert names["nettune-t-xcheck.cross-check"]["status"] == "done"
    with StoreWriter(db) as s:
        check = s.runs(names["nettune-t-xcheck.cross-check"]["id"])
    assert sorted(r["engine"] for r in check) == sorted(r["engine"] for r in rows[1:])
    assert all(r.ok and r.point["cross_check"] in [x["config"] for x in rows] for r in check)
    # analyze and the report show it
    analysis = nettune("analyze", "nettune-t-xcheck", "--db", str(db), check=True).stdout
    assert "cross-check at p=4" in analysis.replace("\n", " ").replace("  ", " ")
    nettune("report", "nettune-t-xcheck", "--db", str(db), "--out", str(tmp_path / "rep"), check=True)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Instrument cross-check" in md and "| iperf2 2.1.8 |" in md and f"Verdict: {text}" in md
    assert not lab_leftovers()


def test_the_other_engine_is_protected_like_the_study(tmp_path):
    """auth = "auto" made iperf3 credentials for the study; the cross-check's iperf2 (-P 1,
    TCP: a permit key holds) gets its own key instead of running an open server."""
    with StoreWriter(tmp_path / "r.db") as s:
        out = run_study(parse_study(STUDY.replace("p = [1, 4]", "p = [1]")), s, cross_check=[0])
        check = next(x for x in s.studies() if x["name"].endswith(".cross-check"))
        iperf2 = [r for r in s.runs(check["id"]) if r.engine == "iperf2"]
        cmds = [o["command"] for r in iperf2 for o in s.raw_outputs(r.id)]
    assert out.status == "done" and iperf2 and all(r.ok for r in iperf2)
    assert len(cmds) == 2 and all(any(a.startswith("--permit-key=") for a in c) for c in cmds)  # server and client
    assert not lab_leftovers()


def test_cli_cross_checks_exactly_the_tool_bound_points(tmp_path):
    db, f = tmp_path / "r.db", tmp_path / "x.toml"
    f.write_text(STUDY)
    out = nettune("run", str(f), "--cross-check", "--db", str(db), check=True).stdout
    with StoreWriter(db) as s:
        sid = s.find_study("nettune-t-xcheck")["id"]
        data = load(s, str(sid))
        checked = [c["point_idx"] for c in s.cross_checks(sid)]
    bound = tool_bound_points(data, data.params)[2]
    assert checked == bound
    if bound:  # the summary says each verdict once: in the headline, or on its own line after it
        flat = " ".join(out.split())
        with StoreWriter(db) as s:
            for c in s.cross_checks(sid):
                assert flat.count(" ".join(c["verdict"].split())) == 1, c["verdict"]
    else:
        assert "no point was tool-bound" in out
    assert not lab_leftovers()


def test_verdict_words():
    """Single runs give no verdict; runs give the spread with its interval (the words on
    constructed runs: tests/test_instrument_verdicts.py)."""
    a = {"label": "iperf3 3.12 single process", "engine": "iperf3", "gbps": 32.7, "n": 1, "values": [32.7]}
    b = {"label": "iperf3 3.12 x4 processes", "engine": "iperf3", "gbps": 281.0, "n": 1, "values": [281.0]}
    c = {"label": "iperf2 2.1.8", "engine": "iperf2", "gbps": 286.0, "n": 1, "values": [286.0]}
    text = verdict([a, b, c])
    assert text.startswith("iperf3 3.12 single process: 32.7 (N=1); iperf3 3.12 x4 processes: 281.0 (N=1); iperf2 2.1.8: 286.0 (N=1) -> ")
    assert "no verdict" in text and "runs = 3" in text
    runs = verdict([dict(a, gbps=32.5, n=3, values=[32.0, 32.7, 32.8]), dict(c, gbps=285.0, n=3, values=[280.0, 286.0, 289.0])])
    assert "95% CI" in runs and runs.endswith("the first number measured iperf3, not the path")
    assert "failed" in verdict([a, dict(c, gbps=None)]) and "no comparison" in verdict([a, dict(c, gbps=None)])
