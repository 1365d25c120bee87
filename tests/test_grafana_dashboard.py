"""contrib/grafana/nettune-history.json, the Grafana dashboard for the PostgreSQL store.

Grafana itself cannot be installed here (not in Debian's archive; the server is AGPL and not
on PyPI), so the dashboard is not loaded through Grafana's provisioning. What is checked:
- the JSON against Grafana's dashboard schema (the JSON Schema the Grafana Foundation SDK
  generates from Grafana's own CUE kinds, tests/fixtures/grafana/real/), and each time series
  panel's options and field config against that SDK's timeseries panel schema;
- every panel's and annotation's SQL, with Grafana's macros ($__unixEpochFilter, $study)
  expanded as Grafana's PostgreSQL data source expands them, run against the throwaway
  PostgreSQL cluster holding stored reruns: the columns Grafana's formats need (time, metric,
  value for a time series; time, text, tags for annotations) and the values nettune itself
  computes for the same reruns.
"""
import json
import re
from pathlib import Path

import jsonschema
import pytest

from nettune.analysis.costs import costs
from nettune.analysis.data import METRICS, load
from nettune.analysis.history import history
from nettune.store.locate import store_at

from study_builders import build

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "contrib" / "grafana" / "nettune-history.json"
SCHEMAS = Path(__file__).parent / "fixtures" / "grafana" / "real"
POINTS = [{"parallel": 1}, {"parallel": 4}]


def _dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _validator(name: str, definition: str | None = None) -> jsonschema.Draft7Validator:
    schema = json.loads((SCHEMAS / f"{name}.jsonschema.json").read_text())
    if definition:  # one definition of the file (its $refs resolve inside the same document)
        schema = {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
    return jsonschema.Draft7Validator(schema)


def test_the_dashboard_follows_grafanas_dashboard_schema():
    d = _dashboard()
    errors = [f"{list(e.path)}: {e.message}" for e in _validator("dashboard").iter_errors(d)]
    assert not errors
    broken = json.loads(json.dumps(d)) | {"refresh_rate": "5s"}  # not a dashboard field: the schema must say so
    broken["panels"][0]["gridPos"]["w"] = "wide"
    assert len(list(_validator("dashboard").iter_errors(broken))) >= 2


def test_the_time_series_panels_follow_grafanas_panel_schema():
    options, field = _validator("timeseries", "Options"), _validator("timeseries", "FieldConfig")
    panels = [p for p in _dashboard()["panels"] if p["type"] == "timeseries"]
    assert len(panels) == 2
    for p in panels:
        assert not [e.message for e in options.iter_errors(p["options"])]
        assert not [e.message for e in field.iter_errors(p["fieldConfig"]["defaults"]["custom"])]
    assert list(options.iter_errors({"legend": {"displayMode": "list"}, "tooltip": {"mode": "multi", "sort": "desc"}}))


def grafana_sql(sql: str, study: str, start: float, end: float) -> str:
    """The query Grafana's PostgreSQL data source sends: $__unixEpochFilter(col) as
    `col >= FROM AND col <= TO` (epoch seconds), a single-value variable as its text with
    quotes doubled (the query puts it in quotes)."""
    out = re.sub(r"\$__unixEpochFilter\(([^)]+)\)", rf"\1 >= {start!r} AND \1 <= {end!r}", sql)
    out = out.replace("$study", study.replace("'", "''"))
    left = re.findall(r"[$][\w{]+|\[\[\w+", out)
    assert not left, f"a macro or variable this test does not expand: {left}"
    return out


def _query(url: str, sql: str) -> tuple[list[str], list[tuple]]:
    import psycopg

    with psycopg.connect(url) as conn:
        cur = conn.execute(sql)
        return [c.name for c in cur.description], cur.fetchall()


@pytest.fixture
def reruns(pg_url):
    """Four reruns of study "g" on PostgreSQL: the kernel changes at the second, iperf3's
    version at the fourth; warm-up and failed runs that the panels must not count."""
    kernels = ["Linux 6.1", "Linux 6.6", "Linux 6.6", "Linux 6.6"]
    versions = ["3.16", "3.16", "3.16", "3.17"]
    with store_at(pg_url) as st:
        ids = [build(st, "g", [(p, 10.0 + 2 * p["parallel"] + i) for p in POINTS], runs=3, warmup=1, failed=1, seed=i,
                     version=versions[i], facts={"client": {"cpu_count": 8, "kernel": kernels[i]}},
                     cpu=lambda p, g: (30.0 + p["parallel"], 45.0, 20.0))
               for i in range(4)]
        build(st, "other", [(POINTS[0], 5.0)])  # another study: never in g's panels
        data = {sid: load(st, sid) for sid in ids}
    return pg_url, ids, data


def _panel(title_start: str) -> str:
    return next(p for p in _dashboard()["panels"] if p["title"].startswith(title_start))["targets"][0]["rawSql"]


def test_the_throughput_panel_gives_nettunes_means_per_point_and_rerun(reruns):
    url, ids, data = reruns
    cols, rows = _query(url, grafana_sql(_panel("Throughput"), "g", 0, 4e9))
    assert cols == ["time", "metric", "value"]  # Grafana's time series format
    assert len(rows) == len(ids) * len(POINTS) and [r[0] for r in rows] == sorted(r[0] for r in rows)
    for sid, d in data.items():
        started = d.study["started"]
        for p in d.points:
            want = sum(p.values(METRICS["total"])) / len(p.values(METRICS["total"])) * 1e-9
            got = [r[2] for r in rows if abs(r[0].timestamp() - started) < 1e-3 and json.loads(r[1]) == p.params]
            assert got == [pytest.approx(want)]
    # the time filter: a window from the third rerun on keeps the last two
    later = data[ids[2]].study["started"] - 1e-4
    _, rows = _query(url, grafana_sql(_panel("Throughput"), "g", later, 4e9))
    assert len(rows) == 2 * len(POINTS)


def test_the_cpu_panel_gives_cores_as_nettune_converts_them(reruns):
    url, ids, data = reruns
    cols, rows = _query(url, grafana_sql(_panel("CPU"), "g", 0, 4e9))
    assert cols == ["time", "metric", "value"] and len(rows) == len(ids) * len(POINTS) * 2
    for d in data.values():
        by_key = {c.key: c for c in costs(d)}
        for p in d.points:
            for side, key in (("client", "cpu_client"), ("server", "cpu_server")):
                want = sum(by_key[key].values(p)) / len(by_key[key].values(p))
                got = [float(r[2]) for r in rows if abs(r[0].timestamp() - d.study["started"]) < 1e-3
                       and r[1].split(" ", 1)[0] == side and json.loads(r[1].split(" ", 1)[1]) == p.params]
                assert got == [pytest.approx(want)]
    assert {round(float(r[2]), 3) for r in rows if r[1].startswith("server")} == {0.45}  # 45% of one core


def test_the_annotations_mark_the_reruns_whose_context_changed(reruns):
    url, ids, data = reruns
    anno = _annotation("context")
    cols, rows = _query(url, grafana_sql(anno, "g", 0, 4e9))
    assert cols == ["time", "text", "tags"]
    assert [r[0].timestamp() for r in rows] == pytest.approx([data[ids[1]].study["started"], data[ids[3]].study["started"]], abs=1e-3)
    assert rows[0][1] == "kernels client Linux 6.1 -> client Linux 6.6"
    assert rows[1][1] == "tools iperf3 3.16 -> iperf3 3.17"
    _, none = _query(url, grafana_sql(anno, "other", 0, 4e9))
    assert none == []


def _annotation(name_start: str) -> str:
    return next(a for a in _dashboard()["annotations"]["list"] if a["name"].startswith(name_start))["target"]["rawSql"]


def test_the_annotations_show_the_change_points_history_saved(pg_url):
    """Seven reruns stepping from 10 to 8 Gbit/s at the fifth, the kernel changing with it;
    `nettune history --save`'s rows come back as one annotation each, at the rerun after the
    step, naming the point, the step with its interval, and what changed."""
    with store_at(pg_url) as st:
        ids = [build(st, "s", [(p, 10.0 if i < 4 else 8.0) for p in POINTS], runs=3, seed=40 + i,
                     facts={"client": {"cpu_count": 8, "kernel": "Linux 6.1" if i < 4 else "Linux 6.6"}}) for i in range(7)]
        h = history(st, "s")
        st.save_change_points(h.study, h.metric, h.unit, h.saved_rows())
        saved = st.change_points("s")
    assert len(saved) == len(POINTS) and all(c["study_after"] == ids[4] for c in saved)
    cols, rows = _query(pg_url, grafana_sql(_annotation("change points"), "s", 0, 4e9))
    assert cols == ["time", "text", "tags"] and len(rows) == len(saved)
    for (time, text, tags), c in zip(rows, sorted(saved, key=lambda c: c["series"])):
        assert time.timestamp() == pytest.approx(c["at_time"], abs=1e-3) and tags == "nettune,change point,step"
        assert text.startswith(f"{c['series']}, total: ") and f"(step {c['step']:.3f}, 95% interval {c['ci_low']:.3f} to " in text
        assert "changed: " in text and "Linux 6.1 -> Linux 6.6" in text
        assert -2.2 < c["step"] < -1.8 and c["ci_low"] < c["step"] < c["ci_high"]
    _, rows = _query(pg_url, grafana_sql(_annotation("change points"), "s", 0, h.reruns[3].started))  # before the step
    assert rows == []


def test_the_study_variable_lists_the_stored_studies(reruns):
    url, _, _ = reruns
    var = next(v for v in _dashboard()["templating"]["list"] if v["name"] == "study")
    _, rows = _query(url, var["query"])
    assert [r[0] for r in rows] == ["g", "other"]
