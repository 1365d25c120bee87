"""nettune ceiling: each engine on this machine's loopback, stored per machine as a host
fact; engine = "auto" picks by it, and analyze says when a result is within 10% of it."""
import json

from nettune.store.writer import StoreWriter
from nettune.analysis.analyze import analyze
from nettune.analysis.data import load

from conftest import needs_iperf2, needs_iperf3, nettune
from study_builders import build

NEAR = "the instrument, not the path, is the limit here"


@needs_iperf3
@needs_iperf2
def test_ceiling_is_measured_stored_and_used(tmp_path):
    db = tmp_path / "r.db"
    out = nettune("ceiling", "--duration", "1", "--max-streams", "2", "--db", str(db), check=True).stdout
    assert "ceiling iperf2:" in out and "ceiling iperf3:" in out
    with StoreWriter(db) as s:
        rows = s.ceiling_rows()
    machine = rows[0]["machine"]
    got = {(r["config"], r["streams"]) for r in rows}
    assert {("iperf3", 1), ("iperf3", 2), ("iperf2", 1), ("iperf2", 2)} <= got
    assert all(r["bps"] and r["bps"] > 0 for r in rows)
    # a study on this machine afterwards: its hosts name the machine; auto picks by the ceiling
    f = tmp_path / "l.toml"
    f.write_text('name = "nettune-t-ceil"\n[target]\nkind = "local"\n[workload]\nduration = 1\nparallel = 2\n')
    nettune("run", str(f), "--db", str(db), check=True)
    with StoreWriter(db) as s:
        data = load(s, "nettune-t-ceil")
        run = data.runs[0]
    assert data.facts["client"]["machine"] == machine and "iperf2" in data.facts["client"]["loopback_ceiling"]
    assert "loopback ceiling at -P 2" in run.extra["engine_choice"]["reason"]
    ceil = {(r["config"], r["streams"]): r["bps"] for r in rows}
    config = run.engine + (f" x{run.extra['processes']}" if run.extra.get("processes", 1) > 1 else "")
    near = run.total_bps >= 0.9 * ceil[(config, 2)]
    text = nettune("analyze", "nettune-t-ceil", "--db", str(db), "--format", "json", check=True).stdout
    assert (NEAR in " ".join(json.loads(text)["findings"])) == near


def test_analyze_says_when_a_result_is_within_ten_percent_of_the_ceiling(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        facts = {"client": {"cpu_count": 8, "machine": "m1"}}
        build(s, "near", [({"streams": 1}, 10.0), ({"streams": 4}, 30.0)], facts=facts, noise=0.001)
        s.add_ceilings("m1", [{"config": "iperf3", "engine": "iperf3", "processes": 1, "streams": 1, "bps": 10.5e9},
                                  {"config": "iperf3", "engine": "iperf3", "processes": 1, "streams": 4, "bps": 60e9}])
        a = analyze(load(s, "near"))
    near = [f for f in a.findings if NEAR in f]
    assert len(near) == 1 and near[0].startswith("at streams=1: 10.0 Gbit/s is 95% of m1's loopback ceiling for iperf3 at -P 1")
    assert not any("limit: the instrument" in h for h in a.headline)  # the best point (streams=4) is at half its ceiling


def test_best_point_near_its_ceiling_is_in_the_headline(tmp_path):
    with StoreWriter(tmp_path / "r.db") as s:
        build(s, "top", [({"streams": 1}, 10.0), ({"streams": 4}, 30.0)], facts={"client": {"cpu_count": 8, "machine": "m2"}}, noise=0.001)
        s.add_ceilings("m2", [{"config": "iperf3", "engine": "iperf3", "processes": 1, "streams": 4, "bps": 31e9}])
        a = analyze(load(s, "top"))
    assert any(h.startswith("limit: the instrument, not the path: at streams=4: 30.0 Gbit/s") for h in a.headline)


def test_ceiling_refuses_what_it_cannot_measure(tmp_path):
    inv = tmp_path / "inv.toml"  # an inventory, so the name is never looked up anywhere else
    inv.write_text('[hosts.web-1]\naddress = "198.18.250.10"\n')
    r = nettune("ceiling", "some-remote-host", "--inventory", str(inv), "--db", str(tmp_path / "r.db"))
    assert r.returncode != 0 and r.stderr.startswith("error: ceiling some-remote-host") and "Traceback" not in r.stderr
    assert not (tmp_path / "r.db").exists()


@needs_iperf3
def test_each_host_is_asked_its_machine_name_once(tmp_path, monkeypatch):
    """hosts_to_measure asks `uname -n` to keep one host per machine; plan() reuses that answer
    (it asked again), and a host dropped as a second view of the machine is asked nothing else."""
    from typer.testing import CliRunner

    import nettune.targets.local as local
    from nettune.cli.main import app

    asked: list[tuple[int, tuple[str, ...]]] = []

    class CountingHost(local.LocalHost):
        def run(self, argv, timeout=30.0):
            asked.append((id(self), tuple(argv)))
            return super().run(argv, timeout)

    monkeypatch.setattr(local, "LocalHost", CountingHost)
    study = tmp_path / "l.toml"  # a local study: this machine again, so measured once
    study.write_text('name = "nettune-t-ceil-once"\n[target]\nkind = "local"\n')
    r = CliRunner().invoke(app, ["ceiling", "localhost", str(study), "--duration", "1", "--max-streams", "1", "--db", str(tmp_path / "r.db")])
    assert r.exit_code == 0, r.output
    assert r.output.count("loopback tests of 1s") == 1
    hosts = list(dict.fromkeys(h for h, _ in asked))
    assert len(hosts) == 2  # this machine, then the study's view of it
    for h in hosts:
        assert [a for i, a in asked if i == h].count(("uname", "-n")) == 1
    assert [a for i, a in asked if i == hosts[1]] == [("uname", "-n")]
