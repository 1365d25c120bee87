"""`nettune report`: report.md, PNG/SVG charts, and a self-contained report.html that
headless Chromium renders offline (table rows, loaded data: images, working sort)."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nettune.analysis.data import load
from nettune.errors import NettuneError
from nettune.report.build import build_report
from nettune.store.writer import StoreWriter

from conftest import nettune
from study_builders import DG, DP, study_a, build

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        study_a(s)
        build(s, "D", [({"parallel": p}, g) for p, g in zip(DP, DG)], stream_skew=0.5, engine="iperf2", version="2.1.8")
    return path


def make(db: Path, out: Path, name: str = "A", **kw):
    with StoreWriter(db) as s:
        return build_report(load(s, name), out, **kw)


def test_markdown_report(db, tmp_path):
    rep = make(db, tmp_path / "rep")
    md = rep.markdown.read_text()
    header = next(ln for ln in md.splitlines() if ln.startswith("| queues"))
    for col in ("queues", "mult", "streams", "N", "Gbit/s", "± 95%", "95% CI", "client CPU (% of 1 core)", "server CPU (% of 1 core)", "host CPU (% of 8 cores)"):  # units in the headers (issue 12)
        assert f"| {col} |" in header
    assert md.count("\n| 16 | 2 | 32 | 3 |") == 1  # one row per point, N=3
    assert "## Verdicts" in md and "saturates at queues=16" in md
    assert "## Host facts" in md and "| cpu_count | 8 |" in md
    assert "## Study file" in md and 'name = "A"' in md
    for name in ("throughput", "cpu", "intervals", "streams"):
        png, svg = tmp_path / "rep" / "charts" / f"{name}.png", tmp_path / "rep" / "charts" / f"{name}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and svg.read_text().lstrip().startswith("<?xml")
        assert f"(charts/{name}.png)" in md


def test_streams_chart_and_chosen_point(db, tmp_path):
    rep = make(db, tmp_path / "d", "D", point={"parallel": "2"})
    assert {c.name for c in rep.charts} == {"throughput", "cpu", "intervals", "streams", "stability"}
    assert "parallel=2" in next(c for c in rep.charts if c.name == "intervals").title
    with pytest.raises(NettuneError, match="no point matches"):
        make(db, tmp_path / "x", "D", point={"parallel": "3"})


def test_html_is_self_contained(db, tmp_path):
    html = make(db, tmp_path / "rep").html.read_text()
    srcs = re.findall(r'\b(?:src|href)="([^"]*)"', html)
    assert srcs and all(s.startswith("data:") or s == "#" for s in srcs)
    assert "http://" not in html and "https://" not in html
    data = re.search(r'<script type="application/json" id="nettune-data">(.*?)</script>', html, re.S).group(1)
    assert json.loads(data.replace("<\\/", "</"))["study"] == "A"


PROBE = """<script>
window.addEventListener('load', function () {
  var t = document.getElementById('summary'), head = t.tHead.rows[0].cells, out = {};
  var imgs = Array.prototype.slice.call(document.images);
  out.images = imgs.length;
  out.loaded = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 && i.src.indexOf('data:image/png;base64,') === 0; }).length;
  out.rows = t.tBodies[0].rows.length;
  var col = Array.prototype.findIndex.call(head, function (th) { return th.textContent === 'Gbit/s'; });
  function column() { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return parseFloat(r.cells[col].getAttribute('data-v')); }); }
  head[col].click(); out.asc = column(); out.ascMark = head[col].getAttribute('aria-sort');
  head[col].click(); out.desc = column(); out.descMark = head[col].getAttribute('aria-sort');
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script></body>"""


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--host-resolver-rules=MAP * ~NOTFOUND",  # the report must not need the network
           f"--user-data-dir={tmp_path / 'chrome-profile'}", "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@needs_chromium
def test_chromium_renders_table_charts_and_sorts(db, tmp_path):
    rep = make(db, tmp_path / "rep")
    probe = tmp_path / "rep" / "probe.html"
    probe.write_text(rep.html.read_text().replace("</body>", PROBE, 1))
    p = chromium(tmp_path, "--dump-dom", probe.as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', p.stdout, re.S)
    assert m, f"no probe output; chromium said: {p.stderr[-2000:]}"
    out = json.loads(m.group(1))
    assert out["rows"] == 14  # 7 queue counts x 2 multipliers
    assert out["images"] == len(rep.charts) == out["loaded"]
    assert out["asc"] == sorted(out["asc"]) and out["desc"] == sorted(out["asc"], reverse=True)
    assert (out["ascMark"], out["descMark"]) == ("ascending", "descending")


@needs_chromium
def test_chromium_screenshot(db, tmp_path):
    rep = make(db, tmp_path / "rep")
    shot = tmp_path / "shot.png"
    p = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2400", rep.html.as_uri())
    assert shot.exists(), p.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000  # not a blank page


def test_report_cli(db, tmp_path):
    out = tmp_path / "cli"
    p = nettune("report", "A", "--out", str(out), "--point", "queues=8,mult=1", "--db", str(db), check=True)
    assert (out / "report.md").exists() and (out / "report.html").exists()
    assert "queues=8, mult=1" in (out / "report.html").read_text()
    p = nettune("report", "A", "--out", str(out), "--point", "queues=8", "--db", str(db))
    assert p.returncode == 2 and "matches 2 points" in p.stderr
