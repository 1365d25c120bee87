"""One self-contained report.html: interactive charts drawn by plotly.js inlined in the
file (report/interactive.py), the other charts as data: URIs, the analysis as embedded JSON,
a table sortable and filterable by a few lines of inline JS. No external file, font or
script, so it opens offline and can be mailed as one attachment.
"""
from __future__ import annotations

import base64
import datetime as dt
import html
import json
from typing import Any

from ..analysis import emulation
from ..analysis.data import StudyData, jsonable
from ..analysis.digest import SECTION_TITLES
from ..analysis.verdicts import Analysis
from .audit_section import audit_rows
from .charts import Chart
from .interactive import CONFIG, Plot, plotly_js

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:75em;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td.l,th.l{text-align:left}
img{max-width:100%;border:1px solid #eee}
pre{background:#f7f7f7;padding:1em;overflow:auto}
li{margin:.2em 0}
.meta{color:#666}
#filter{margin:.5em 0;padding:.2em .4em;min-width:20em}
.plot{width:100%}figure{margin:1em 0}
.scroll{overflow-x:auto;max-width:100%}
.scroll table{margin:0}
#digest{border-left:4px solid #4a7;background:#f4faf6;padding:.5em 1em;margin:1em 0}
#digest li{list-style:none;margin:.15em 0}
#digest ul{padding:0;margin:0}
"""

# Click a header to sort by it; click again to reverse. Cells carry data-v (the raw
# number) so "9.5" sorts below "10.2"; empty cells always go last.
SORT_JS = """
(function(){
  var t=document.getElementById('summary'); if(!t) return;
  var ths=t.tHead.rows[0].cells;
  function key(td){var v=td.getAttribute('data-v'); if(v===null||v==='') return null;
    var n=parseFloat(v); return isNaN(n)?v.toLowerCase():n;}
  function sortBy(i){
    var th=ths[i], asc=th.getAttribute('aria-sort')!=='ascending';
    for(var k=0;k<ths.length;k++) ths[k].removeAttribute('aria-sort');
    th.setAttribute('aria-sort', asc?'ascending':'descending');
    var body=t.tBodies[0], rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){var x=key(a.cells[i]), y=key(b.cells[i]);
      if(x===null) return y===null?0:1; if(y===null) return -1;
      if(typeof x!==typeof y){x=String(x);y=String(y);}
      return (x<y?-1:x>y?1:0)*(asc?1:-1);});
    rows.forEach(function(r){body.appendChild(r);});
  }
  for(var i=0;i<ths.length;i++) (function(i){ths[i].addEventListener('click',function(){sortBy(i);});})(i);
  window.nettuneSort=sortBy;
  // the filter box: rows matching every word typed: "name=value" the cell of that column
  // exactly, any other word some cell's text (case-insensitive)
  var f=document.getElementById('filter'), shown=document.getElementById('shown');
  var names=Array.prototype.map.call(ths,function(th){return th.textContent.toLowerCase();});
  function match(row,w){var eq=w.indexOf('='), i=eq>0?names.indexOf(w.slice(0,eq)):-1;
    if(i>=0) return row.cells[i].textContent.toLowerCase()===w.slice(eq+1);
    return Array.prototype.some.call(row.cells,function(c){return c.textContent.toLowerCase().indexOf(w)>=0;});}
  function filter(){var words=f.value.toLowerCase().split(/\\s+/).filter(Boolean), n=0, rows=t.tBodies[0].rows;
    for(var r=0;r<rows.length;r++){var ok=words.every(function(w){return match(rows[r],w);}); rows[r].hidden=!ok; n+=ok?1:0;}
    shown.textContent=n+' of '+rows.length+' rows';}
  if(f){f.addEventListener('input',filter); filter();}
  var d=document.getElementById('download'), data=document.getElementById('nettune-data');
  if(d&&data) d.href='data:application/json;charset=utf-8,'+encodeURIComponent(data.textContent);
})();
"""


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def _sort_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v).lower()
    return repr(v) if isinstance(v, float) else str(v)


def _img(c: Chart) -> str:
    b64 = base64.b64encode(c.png.read_bytes()).decode("ascii")
    return (f'<figure id="chart-{_e(c.name)}"><img alt="{_e(c.title)}" src="data:image/png;base64,{b64}">'
            f"<figcaption>{_e(c.title)}</figcaption></figure>")


def _charts(charts: list[Chart], plots: list[Plot]) -> list[str]:
    """Each chart as its interactive plot where there is one (and the static image too when
    it shows more, e.g. watts beside CPU), else as the static image."""
    by_name = {p.name: p for p in plots}
    out = []
    for c in charts:
        p = by_name.get(c.name)
        if p is not None:
            out.append(f'<figure><div id="plot-{_e(p.name)}" class="plot" role="img" aria-label="{_e(p.title)}"></div></figure>')
        if p is None or not p.replaces:
            out.append(_img(c))
    return out


def _script_json(obj: Any) -> str:
    # "</" inside a <script> would end it early; the JSON stays valid with "<\/".
    return json.dumps(jsonable(obj), default=str, allow_nan=False).replace("</", "<\\/")


def render_html(data: StudyData, analysis: Analysis, head: list[str], rows: list[list[tuple[str, Any]]],
                charts: list[Chart], point_label: str | None, pairs: tuple[list[str], list[list[str]]] = ([], []),
                search: list[str] | None = None, plots: list[Plot] | None = None) -> str:
    s = data.study
    nparams = len(data.params)
    started = dt.datetime.fromtimestamp(s["started"]).strftime("%Y-%m-%d %H:%M") if s.get("started") else "?"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>nettune report: {_e(s['name'])}</title><style>{CSS}</style></head><body>",
           f"<h1>{_e(s['name'])}</h1>"]
    if s.get("description"):
        out.append(f"<p>{_e(s['description'])}</p>")
    out.append(f'<p class="meta">Study #{_e(s["id"])}, {_e(s["status"])}, started {_e(started)}, target '
               f'{_e(s.get("target_kind") or "?")}. Means of counted runs with 95% intervals: {_e(analysis.interval)}. '
               'Click a column header to sort; type in the box to filter rows. Charts: hover a point for its value, N and '
               'interval; click a legend entry to hide or show a series; drag to zoom, double-click to reset. <a id="download" download="nettune-analysis.json" href="#">Analysis as JSON</a></p>')
    emulated = emulation.note(data.facts)
    if emulated:  # the VM lab under TCG: numbers show behaviour only
        out.append(f'<p class="meta"><strong>{_e(emulated)}.</strong></p>')
    out.append('<h2>Summary</h2><div id="digest"><ul>' + "".join(f"<li>{_e(line)}</li>" for line in analysis.summary) + "</ul></div>")
    out.append('<h2>Results</h2><p><input id="filter" type="search" placeholder="filter rows: words of a row, e.g. queues=16" '
               'aria-label="filter rows"> <span id="shown" class="meta"></span></p>')
    out.append('<div class="scroll"><table id="summary"><thead><tr>')  # wide tables scroll in their own box
    out += [f'<th class="{"l" if i < nparams else ""}">{_e(h)}</th>' for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = "".join(f'<td class="{"l" if i < nparams else ""}" data-v="{_e(_sort_value(v))}">{_e(t)}</td>'
                        for i, (t, v) in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table></div>")
    if pairs[1]:  # a study over host pairs: each link with its own N and CI
        out.append('<h2>Pairs</h2><div class="scroll"><table id="pairs"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in pairs[0]) + "</tr></thead><tbody>")
        out += ["<tr>" + "".join(f'<td class="l">{_e(c)}</td>' for c in row) + "</tr>" for row in pairs[1]]
        out.append("</tbody></table></div>")
    out.append('<h2>Verdicts</h2><div id="findings">')  # grouped: throughput, cost, noise, instrument
    out += [f'<h3>{_e(SECTION_TITLES[sec])}</h3><ul id="findings-{sec}">' + "".join(f"<li>{_e(f)}</li>" for f in found) + "</ul>"
            for sec, found in analysis.sections.items()]
    out.append("</div>")
    if search:  # [search]: its answer (docs/search.md)
        out.append('<h2>Search</h2><ul id="search">' + "".join(f"<li>{_e(x)}</li>" for x in search) + "</ul>")
    if charts:
        out.append("<h2>Charts</h2>")
        if point_label:
            out.append(f'<p class="meta">Time series shown for {_e(point_label)}.</p>')
        out += _charts(charts, plots or [])
    if any("doctor" in f for f in data.facts.values()):
        rows = audit_rows(data.facts)
        out.append('<h2>Host audit</h2><p class="meta">What nettune doctor found on the hosts before the first test (nothing was changed).</p>')
        out.append('<table id="audit"><thead><tr>' + "".join(f"<th>{h}</th>" for h in ("severity", "host", "check", "seen", "fix")) + "</tr></thead><tbody>"
                   + "".join("<tr>" + "".join(f'<td class="l">{_e(c)}</td>' for c in r) + "</tr>" for r in rows) + "</tbody></table>"
                   if rows else "<p>Nothing above info.</p>")
    out.append("<h2>Host facts</h2>")
    if data.facts:
        for host, facts in ((h, {k: v for k, v in f.items() if k != "doctor"}) for h, f in data.facts.items()):
            out.append(f"<h3>{_e(host)}</h3><table><tbody>")
            out += [f'<tr><td class="l">{_e(k)}</td><td class="l">{_e(json.dumps(v) if isinstance(v, (dict, list)) else v)}</td></tr>'
                    for k, v in facts.items()]
            out.append("</tbody></table>")
    else:
        out.append("<p>(none recorded)</p>")
    text = s.get("spec_text") or json.dumps(data.spec(), indent=2)
    out.append(f"<h2>Study file</h2><pre>{_e(text)}</pre>")
    out.append(f'<script type="application/json" id="nettune-data">{_script_json(analysis.to_dict())}</script>')
    out.append(f"<script>{SORT_JS}</script>")
    if plots:  # plotly.js inlined (a few MB), then one call per chart
        out.append(f"<script>{plotly_js()}</script>")
        out.append("<script>" + "\n".join(f"Plotly.newPlot('plot-{p.name}', {_script_json(p.figure['data'])}, "
                                           f"{_script_json(p.figure['layout'])}, {_script_json(CONFIG)});" for p in plots) + "</script>")
    out.append("</body></html>")
    return "\n".join(out)
