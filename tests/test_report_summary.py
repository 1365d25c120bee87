"""Issue 34: the report opens with at most five lines (best, what mattered, the recommended
point, how sure, what next), then the results table in its own scrolling box (sortable),
then every verdict grouped under throughput, cost, noise and instrument. Headless Chromium
at 1280x800 checks the summary is on the first screen and the table does not widen the page."""
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.analysis.digest import SECTIONS
from nettune.store import Store
from nettune.store.writer import StoreWriter

from study_builders import DG, DP, build, study_a
from test_report import make, needs_chromium, probe


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        study_a(s)  # 14 points, 3 runs each, every CPU side: the widest results table
        build(s, "D", [({"parallel": p}, g) for p, g in zip(DP, DG)], engine="iperf2", version="2.1.8")
    return path


def test_summary_answers_the_five_questions(db):
    with Store(db) as s:
        a = analyze(load(s, "A"))
    assert 1 <= len(a.summary) <= 5
    best, mattered, recommended, sure, nxt = a.summary
    assert best == a.headline[0] and "95% CI" in best and "N=3" in best
    assert mattered.startswith("mattered: queues")  # the parameter the effects said mattered most
    rec = next(f for f in a.efficiency if f.cost == "cpu_host")  # the frontier's own recommendation, quoted
    assert recommended.startswith("recommended: " + ", ".join(f"{k}={v}" for k, v in rec.point.items()))
    assert sure.startswith("how sure: N=3 per point")
    assert nxt.startswith("next: ")


def test_verdicts_grouped_each_once(db):
    with Store(db) as s:
        a = analyze(load(s, "A"))
    assert list(a.sections) == [sec for sec in SECTIONS if sec in a.sections]  # in the fixed order
    assert sorted(f for found in a.sections.values() for f in found) == sorted(a.findings)  # a partition of the findings
    assert any("recommended" in f for f in a.sections["cost"])
    assert a.sections["noise"] and "cost" in a.sections and "throughput" in a.sections
    assert not any("recommended" in f for f in a.sections["throughput"])


def test_a_tool_bound_best_point_is_said_once_instead_of_what_mattered(tmp_path):
    with StoreWriter(tmp_path / "old.db") as s:  # iperf3 3.12, several streams on one thread at 99.5% of a core
        build(s, "old", [({"parallel": p}, g) for p, g in ((1, 20.0), (2, 26.0), (4, 27.0))], version="3.12",
              cpu=lambda p, g: (99.5, 70.0, 10.0))
    with Store(tmp_path / "old.db") as s:
        a = analyze(load(s, "old"))
    limit = [line for line in a.summary if "bottleneck" in line]
    assert len(limit) == 1 and a.summary[1] == limit[0] and limit[0] in a.headline  # the instrument's own words, once
    assert a.summary[-1].startswith("next: measure the path, not the tool")
    assert not any(line.startswith("mattered:") for line in a.summary)
    assert set(a.sections["instrument"]) == set(a.instrument)


def test_single_runs_say_so(tmp_path):
    with StoreWriter(tmp_path / "one.db") as s:
        build(s, "D1", [({"parallel": p}, g) for p, g in zip(DP, DG)], runs=1)
    with Store(tmp_path / "one.db") as s:
        a = analyze(load(s, "D1"))
    assert a.summary[0].endswith("(N=1, single run)")
    assert any(line.startswith("how sure: single runs (N=1 per point)") for line in a.summary)


def test_markdown_opens_with_the_summary(db, tmp_path):
    md = make(db, tmp_path / "rep").markdown.read_text()
    assert md.index("## Summary") < md.index("## Results") < md.index("## Verdicts")
    block = md[md.index("## Summary"):md.index("## Results")]
    assert 1 <= block.count("\n- ") <= 5 and "- best: " in block
    verdicts = md[md.index("## Verdicts"):]
    assert verdicts.index("### Throughput") < verdicts.index("### Cost") < verdicts.index("### Noise")


PROBE = """<script>
window.addEventListener('load', function () {
  var d = document.getElementById('digest').getBoundingClientRect(), t = document.getElementById('summary');
  var out = {digestBottom: d.bottom, digestTop: d.top, viewH: window.innerHeight, viewW: document.documentElement.clientWidth,
             pageW: document.documentElement.scrollWidth, tableW: t.scrollWidth, boxW: t.parentNode.clientWidth,
             boxOverflow: getComputedStyle(t.parentNode).overflowX, lines: document.querySelectorAll('#digest li').length,
             groups: Array.prototype.map.call(document.querySelectorAll('#findings h3'), function (h) { return h.textContent; })};
  var head = t.tHead.rows[0].cells, col = Array.prototype.findIndex.call(head, function (th) { return th.textContent === 'Gbit/s'; });
  head[col].click();
  out.sorted = Array.prototype.map.call(t.tBodies[0].rows, function (r) { return parseFloat(r.cells[col].getAttribute('data-v')); });
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


@needs_chromium
def test_chromium_first_screen_and_table_box(db, tmp_path):
    out = probe(make(db, tmp_path / "rep").html, PROBE, tmp_path, "1280,800")
    assert 1 <= out["lines"] <= 5
    assert 0 <= out["digestTop"] and out["digestBottom"] <= out["viewH"] <= 800  # the summary on the first screen
    assert out["tableW"] > out["boxW"]  # this table is wider than the page...
    assert out["pageW"] <= out["viewW"] and out["boxOverflow"] == "auto"  # ...and scrolls in its own box, not the page
    assert out["sorted"] == sorted(out["sorted"])  # the headers still sort
    assert out["groups"][0] == "Throughput" and len(out["groups"]) >= 3
