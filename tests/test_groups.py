"""analyze --by (issue 19): each group's own knob effects with CIs, the interaction in one
sentence, efficiency compared across groups; and study B's published table, imported with
`nettune import --columns`, analyzes to its author's verdict."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nettune.analysis.analyze import analyze
from nettune.analysis.data import load
from nettune.errors import NettuneError
from nettune.store.writer import StoreWriter

from conftest import nettune
from study_builders import build

PUBLISHED = Path(__file__).parent / "fixtures" / "study_b" / "published.csv"


def test_published_study_b_table_imports_and_gives_the_interaction(tmp_path):
    db = tmp_path / "b.db"
    nettune("import", str(PUBLISHED), "--study", "study-b", "--columns", "os,mtu,lro,buffers,gbps=receiver_gbps",
            "--db", str(db), check=True)
    # a published table of single values: the author's ratios, but no noise to judge them against,
    # so no verdict (issue 29: never a fixed threshold standing in for a noise estimate)
    out = nettune("analyze", "study-b", "--by", "os", "--db", str(db), check=True).stdout
    said = "mtu: x3.7 on freebsd, +0.0% on debian (single runs: whether it depends on os cannot be told without repeats)"
    assert said in " ".join(out.split())
    res = json.loads(nettune("analyze", "study-b", "--by", "os", "--format", "json", "--db", str(db), check=True).stdout)
    by = {i["param"]: i for i in res["groups"]["interactions"]}
    assert by["mtu"]["depends"] is False
    fb, deb = by["mtu"]["effects"]
    assert (fb["group"], fb["verdict"], round(fb["ratio"], 2)) == ("freebsd", "untested", 3.73)
    assert fb["fixed"] == {"lro": "off", "buffers": "default"} and fb["ci_low"] is None  # single runs: no interval
    assert (deb["group"], deb["verdict"], deb["ratio"]) == ("debian", "untested", 1.0)
    assert by["lro"]["text"] == "lro: x5.4 on freebsd, not varied on debian (single runs: no verdict)"
    assert by["buffers"]["text"] == "buffers: -10% on freebsd, not varied on debian (single runs: no verdict)"
    assert not any("depends on os)" in h for h in res["headline"])


def _two_os(store: StoreWriter, debian_mtu: float = 1.0) -> StudyData:  # noqa: F821 - annotation only
    pts = []
    for os_, base, cpu in (("freebsd", 1.34, 30.0), ("debian", 9.5, 60.0)):
        for mtu in (1500, 9000):
            gain = 3.7 if os_ == "freebsd" else debian_mtu
            pts.append(({"os": os_, "mtu": mtu}, base * (gain if mtu == 9000 else 1.0)))
    cpus = {"freebsd": 30.0, "debian": 95.0}
    build(store, "b", pts, runs=4, noise=0.02, cpu=lambda p, g: (cpus[p["os"]], cpus[p["os"]] * 0.8, 20.0))
    return load(store, "b")


def test_welch_per_group_with_intervals_and_efficiency_across_groups(tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        data = _two_os(store)
    res = analyze(data, by="os")
    (it,) = res.groups.interactions
    assert it.param == "mtu" and it.depends
    fb, deb = it.effects
    assert fb.verdict == "faster" and fb.ci_low is not None and fb.ci_low > 3.0 and fb.ci_high < 4.5 and fb.p_value < 0.001
    assert deb.verdict == "inconclusive" and deb.ci_low < 1.0 < deb.ci_high
    assert re.match(r"mtu: x3\.[5-9] on freebsd, no difference shown on debian \(the effect depends on os\)$", it.text)
    assert "adjusted over 2 tests" in fb.text  # one family: mtu's test in each group
    eff = {(e.group, e.side): e for e in res.groups.efficiency}
    assert eff[("freebsd", "client")].gbps_per_core > eff[("debian", "client")].gbps_per_core
    line = next(f for f in res.findings if "efficiency, server CPU" in f)
    assert "freebsd gets" in line and "debian's throughput per server core" in line


def test_an_effect_alike_in_both_groups_is_not_an_interaction(tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        data = _two_os(store, debian_mtu=3.7)
    (it,) = analyze(data, by="os").groups.interactions
    assert not it.depends and it.text.endswith("(not shown to depend on os)")  # overlapping intervals are not "alike"
    assert [e.verdict for e in it.effects] == ["faster", "faster"]


def test_by_an_unknown_or_constant_parameter_is_one_line(tmp_path):
    with StoreWriter(tmp_path / "r.db") as store:
        data = _two_os(store)
    with pytest.raises(NettuneError, match="--by 'queue': b has no parameter 'queue'; its parameters are: os, mtu"):
        analyze(data, by="queue")
    fb_only = type(data)(data.study, [p for p in data.points if p.params["os"] == "freebsd"], data.facts, ["mtu"], [])
    with pytest.raises(NettuneError, match="every point has os=freebsd"):
        analyze(fb_only, by="os")
