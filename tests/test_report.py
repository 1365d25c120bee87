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
from nettune.report.interactive import plotly_js
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
    bundle = f"<script>{plotly_js()}</script>"
    assert html.count(bundle) == 1  # plotly.js inlined whole, once (its own text names plotly.com: not loaded)
    rest = html.replace(bundle, "")
    srcs = re.findall(r'\b(?:src|href)="([^"]*)"', rest)
    assert srcs and all(s.startswith("data:") or s == "#" for s in srcs)
    assert "http://" not in rest and "https://" not in rest
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|@import|url\(", html.replace(plotly_js(), ""))
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


def probe(html: Path, script: str, tmp_path: Path, size: str) -> dict:
    """Open the report with `script` added before </body> (it leaves JSON in <pre id="probe">)
    in headless Chromium; that JSON."""
    page = html.parent / "probe.html"
    page.write_text(html.read_text().replace("</body>", script, 1))
    p = chromium(tmp_path, f"--window-size={size}", "--dump-dom", page.as_uri())
    m = re.search(r'<pre id="probe">(.*?)</pre>', p.stdout, re.S)
    assert m, f"no probe output; chromium said: {p.stderr[-2000:]}"
    return json.loads(m.group(1))


@needs_chromium
def test_chromium_renders_table_charts_and_sorts(db, tmp_path):
    rep = make(db, tmp_path / "rep")
    out = probe(rep.html, PROBE, tmp_path, "800,600")
    assert out["rows"] == 14  # 7 queue counts x 2 multipliers
    # throughput, cpu and intervals are interactive plots; streams and stability stay images
    assert out["images"] == len(rep.charts) - 3 == out["loaded"]
    assert out["asc"] == sorted(out["asc"]) and out["desc"] == sorted(out["asc"], reverse=True)
    assert (out["ascMark"], out["descMark"]) == ("ascending", "descending")


def test_report_cli(db, tmp_path):
    out = tmp_path / "cli"
    p = nettune("report", "A", "--out", str(out), "--point", "queues=8,mult=1", "--db", str(db), check=True)
    assert (out / "report.md").exists() and (out / "report.html").exists()
    assert "queues=8, mult=1" in (out / "report.html").read_text()
    p = nettune("report", "A", "--out", str(out), "--point", "queues=8", "--db", str(db))
    assert p.returncode == 2 and "matches 2 points" in p.stderr


# After plotly has drawn: a real mouse move over the first point of the throughput chart (at
# its pixel position), a click on a legend entry, a click on the CPU chart's unit button, a
# drag across the plot area, and words typed in the table's filter box; then what the page
# shows, and every resource the page loaded.
INTERACT = """<script>
window.addEventListener('load', function () {
  var out = {}, tp = document.getElementById('plot-throughput'), cpu = document.getElementById('plot-cpu');
  function ev(el, type, x, y) { el.dispatchEvent(new MouseEvent(type, {clientX: x, clientY: y, bubbles: true, cancelable: true, view: window, buttons: type === 'mouseup' ? 0 : 1})); }
  function at(gd, trace, i) {  // the page position of a point
    var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.querySelector('.nsewdrag').getBoundingClientRect();
    return [box.left + xa.d2p(gd._fullData[trace].x[i]), box.top + ya.d2p(gd._fullData[trace].y[i])];
  }
  function filterRows(text) { var f = document.getElementById('filter'); f.value = text; f.dispatchEvent(new Event('input'));
    return Array.prototype.filter.call(document.getElementById('summary').tBodies[0].rows, function (r) { return !r.hidden; }).length; }
  out.plots = Array.prototype.map.call(document.querySelectorAll('.plot'), function (d) { return [d.id, d.querySelectorAll('.scatterlayer .point').length]; });
  var p = at(tp, 0, 0), drag = tp.querySelector('.nsewdrag');
  ev(drag, 'mousemove', p[0], p[1]);
  setTimeout(function () {
    var tip = tp.querySelector('.hoverlayer .hovertext');
    out.tooltip = tip ? Array.prototype.map.call(tip.querySelectorAll('text tspan.line'), function (t) { return t.textContent; }).join('|') : null;
    out.point = [tp._fullData[0].x[0], tp._fullData[0].y[0]];
    var toggle = tp.querySelectorAll('.legend .traces .legendtoggle')[1];
    ev(toggle, 'mousedown', 0, 0); ev(toggle, 'mouseup', 0, 0);
    out.cpuBefore = [cpu.layout.yaxis.title.text, cpu.data[0].y[0]];
    cpu.querySelectorAll('.updatemenu-button')[1].dispatchEvent(new MouseEvent('click', {bubbles: true}));
    var b = drag.getBoundingClientRect(); out.rangeBefore = tp._fullLayout.yaxis.range.slice();
    ev(drag, 'mousedown', b.left + b.width * 0.2, b.top + b.height * 0.2);
    ev(document, 'mousemove', b.left + b.width * 0.6, b.top + b.height * 0.6);
    ev(document, 'mouseup', b.left + b.width * 0.6, b.top + b.height * 0.6);
    setTimeout(function () {
      out.visible = tp._fullData.map(function (t) { return t.visible; });
      out.cpuAfter = [cpu.layout.yaxis.title.text, cpu.data[0].y[0]];
      out.rangeAfter = tp._fullLayout.yaxis.range.slice();
      out.filtered = [filterRows('queues=16'), filterRows('queues=16 mult=2'), filterRows('nosuchvalue'), filterRows('')];
      out.shown = document.getElementById('shown').textContent;
      out.resources = performance.getEntriesByType('resource').map(function (e) { return e.name; });
      var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    }, 1500);
  }, 500);
});
</script></body>"""


@needs_chromium
def test_chromium_charts_answer_hover_legend_unit_zoom_and_the_table_filters(db, tmp_path):
    out = probe(make(db, tmp_path / "rep").html, INTERACT, tmp_path, "1200,2400")
    drawn = dict(out["plots"])
    assert set(drawn) == {"plot-throughput", "plot-cpu", "plot-intervals"} and all(n > 0 for n in drawn.values())
    # the tooltip: the point's value, its N and its interval (study A: 3 counted runs a point)
    tip = out["tooltip"]
    hit = re.search(r"queues=1, mult=\d, streams=\d+\|([\d.]+) Gbit/s\|N=3, 95% CI \[([\d.]+), ([\d.]+)\] \(t\)", tip or "")
    assert hit, tip  # the point nearest the mouse (two series meet at queues=1)
    assert float(hit.group(2)) < float(hit.group(1)) < float(hit.group(3))
    assert out["visible"][0] is True and out["visible"][1] == "legendonly"  # the legend click hid series 2
    assert out["cpuBefore"][0] == "CPU (cores)" and out["cpuAfter"][0] == "CPU (% of one core)"
    assert out["cpuAfter"][1] == pytest.approx(out["cpuBefore"][1] * 100)
    assert out["rangeAfter"] != out["rangeBefore"] and out["rangeAfter"][1] - out["rangeAfter"][0] < out["rangeBefore"][1] - out["rangeBefore"][0]  # zoomed in
    assert out["filtered"] == [2, 1, 0, 14] and out["shown"] == "14 of 14 rows"
    assert not [r for r in out["resources"] if not r.startswith(("data:", "file:"))]  # nothing fetched from anywhere


def _blue_pixels(png: Path) -> int:
    """Pixels of plotly's (and matplotlib's) first series colour, #1f77b4."""
    import matplotlib.image

    px = (matplotlib.image.imread(png)[..., :3] * 255).round()
    return int(((abs(px[..., 0] - 31) <= 2) & (abs(px[..., 1] - 119) <= 2) & (abs(px[..., 2] - 180) <= 2)).sum())


@needs_chromium
def test_chromium_screenshot_shows_the_interactive_charts_drawn(db, tmp_path):
    """With the static images hidden, the first series' colour is on the screenshot only if
    plotly drew the charts: the same page without plotly.js shows none of it."""
    html = make(db, tmp_path / "rep").html.read_text().replace("<img ", "<img hidden ")
    counts = []
    for name, page in (("drawn", html), ("control", html.replace(plotly_js(), ""))):
        f, shot = tmp_path / "rep" / f"{name}.html", tmp_path / f"{name}.png"
        f.write_text(page)
        p = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,4000", f.as_uri())
        assert shot.exists(), p.stderr[-2000:]
        counts.append(_blue_pixels(shot))
    assert counts[1] == 0 and counts[0] > 500, counts
