"""`nettune compare` with published numbers (issue 12): a side given as N, mean and sd
(`--a-stats`, `--b-stats`) or a summary table (`--a-table`), Welch's verdict on it, and
"borderline" for 0.05 <= p < 0.10."""
import json
from pathlib import Path

import pytest
from scipy import stats as sst

from nettune.analysis.compare import SideStats, compare_stats, compare_values
from nettune.errors import NettuneError
from nettune.store.writer import StoreWriter

from conftest import nettune
from study_builders import study_a


def test_welch_from_summaries_matches_scipy_and_the_runs():
    a, b = [9.1, 9.5, 9.3, 9.8, 9.4], [10.2, 9.9, 10.6, 10.1]
    from_runs = compare_values(a, b)
    sa = SideStats(5, sum(a) / 5, float(sst.tstd(a)))
    sb = SideStats(4, sum(b) / 4, float(sst.tstd(b)))
    from_stats = compare_stats(sa, sb)
    want = sst.ttest_ind_from_stats(sa.mean, sa.sd, sa.n, sb.mean, sb.sd, sb.n, equal_var=False).pvalue
    assert from_stats.p_value == pytest.approx(want) == pytest.approx(from_runs.p_value)
    assert from_stats.verdict == from_runs.verdict == "faster" and from_stats.text == from_runs.text


def test_borderline_between_5_and_10_percent():
    # t = 2 on about 8 degrees of freedom: p ~ 0.08
    c = compare_stats(SideStats(5, 10.0, 1.0), SideStats(5, 11.265, 1.0))
    assert 0.05 <= c.p_value < 0.10
    assert c.verdict == "inconclusive" and c.borderline and c.text.startswith("borderline: b looks")
    assert "faster" in c.text and "more runs would settle it" in c.text
    clear = compare_stats(SideStats(5, 10.0, 1.0), SideStats(5, 10.2, 1.0))
    assert clear.p_value >= 0.10 and not clear.borderline and "borderline" not in clear.text
    sig = compare_stats(SideStats(5, 10.0, 1.0), SideStats(5, 12.0, 1.0))
    assert sig.p_value < 0.05 and not sig.borderline and sig.verdict == "faster"


def test_summary_needs_two_runs_and_a_real_sd():
    with pytest.raises(NettuneError, match="N >= 2"):
        compare_stats(SideStats(1, 10.0, 0.0), SideStats(5, 11.0, 1.0))


def test_cli_both_sides_published():
    p = nettune("compare", "--a-stats", "5,9.41,0.30", "--b-stats", "5,10.2,0.35", "--format", "json", check=True)
    out = json.loads(p.stdout)
    want = sst.ttest_ind_from_stats(9.41, 0.30, 5, 10.2, 0.35, 5, equal_var=False).pvalue
    assert out["verdict"] == "faster" and out["p_value"] == pytest.approx(want)
    assert out["mean_a"] == pytest.approx(9.41e9) and out["n_b"] == 5  # Gbit/s given, stored as bit/s
    text = nettune("compare", "--a-stats", "5,9.41,0.30", "--b-stats", "5,10.2,0.35", check=True).stdout
    assert "a (published: 5,9.41,0.30)" in text and "faster" in text


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    with StoreWriter(path) as s:
        study_a(s)
    return path


def test_cli_published_side_against_a_study(db):
    p = nettune("compare", "A", "--a-stats", "3,72.0,1.0", "--b", "queues=40,mult=2", "--db", str(db), "--format", "json", check=True)
    out = json.loads(p.stdout)
    assert out["b"] == "A queues=40,mult=2" and out["n_b"] == 3 and out["verdict"] in ("faster", "no-difference")
    assert out["mean_b"] == pytest.approx(77 * 1.02 * 1e9, rel=0.03)


def test_cli_summary_table_row_by_row(db, tmp_path):
    table = tmp_path / "published.csv"
    table.write_text("queues,mult,n,mean,sd\n8,1,5,55.5,0.5\n16,1,5,60.0,0.5\n99,1,5,1.0,0.1\n")
    p = nettune("compare", "A", "--a-table", str(table), "--db", str(db), "--format", "json", check=True)
    rows = {c["point"]: c for c in json.loads(p.stdout)["comparisons"]}
    assert set(rows) == {"queues=8, mult=1", "queues=16, mult=1"}  # a row without a point of the study is left out
    assert rows["queues=16, mult=1"]["verdict"] == "faster"  # the study's 72.7 Gbit/s against a published 60
    bad = tmp_path / "bad.csv"
    bad.write_text("queues,mean,sd\n8,55,1\n")
    p = nettune("compare", "A", "--a-table", str(bad), "--db", str(db))
    assert p.returncode == 2 and "no N column" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("args,msg", [
    (["--a-stats", "5,9.4", "--b-stats", "5,10,1"], "write N,MEAN,SD"),
    (["--a-stats", "1,9.4,0.3", "--b-stats", "5,10,1"], "N must be >= 2"),
    (["A", "--a-stats", "5,9.4,0.3", "--b-stats", "5,10,1"], "0 study here"),
])
def test_cli_bad_summaries_are_one_line_errors(db, args, msg):
    p = nettune("compare", *args, "--db", str(db))
    assert p.returncode == 2 and msg in p.stderr and "Traceback" not in p.stderr


def test_a_p_value_is_never_printed_as_a_threshold_it_is_not():
    """0.0502 printed at two digits read "p=0.05 ... not significant" (found in a search's
    answer); the digits grow until the text is on the right side of 0.05 and 0.10."""
    from nettune.analysis.sweep import pval

    assert pval(0.0502) == "p=0.0502" and pval(0.0498) == "p=0.0498" and pval(0.0996) == "p=0.0996"
    assert pval(0.05) == "p=0.05" and pval(0.23) == "p=0.23" and pval(0.004) == "p=0.004" and pval(0.0004) == "p<0.001"
    for p in (0.0449, 0.04999, 0.0501, 0.0549, 0.095, 0.1049, 0.2):
        shown = float(pval(p).removeprefix("p="))
        assert (shown < 0.05) == (p < 0.05) and (shown < 0.1) == (p < 0.1), (p, pval(p))
