"""nettune ceiling: each configuration on this machine's loopback, -P 1..N, each test
repeated, every run stored per machine and path class as a host fact; engine = "auto"
picks by it on a loopback study, and analyze never judges a loopback study by its own
loopback ceiling (circular). What ceilings may judge, on constructed evidence:
tests/test_instrument_verdicts.py."""
import json

from nettune import Store
from nettune.analysis.data import load

from conftest import needs_iperf2, needs_iperf3, nettune


@needs_iperf3
@needs_iperf2
def test_ceiling_is_measured_with_repeats_stored_and_used(tmp_path):
    db = tmp_path / "r.db"
    out = nettune("ceiling", "--duration", "1", "--max-streams", "2", "--runs", "2", "--db", str(db), check=True).stdout
    assert "ceiling iperf2:" in out and "ceiling iperf3:" in out and "2 run(s) each" in out
    with Store(db) as s:
        rows = s.ceiling_rows()
    machine = rows[0]["machine"]
    got = {(r["config"], r["streams"]) for r in rows}
    assert {("iperf3", 1), ("iperf3", 2), ("iperf3 x2", 2), ("iperf2", 1), ("iperf2", 2)} <= got
    assert all(r["path"] == "loopback" and r["bps"] and r["bps"] > 0 for r in rows)
    assert all(r["runs"] == 2 and r["ci_low"] <= r["bps"] <= r["ci_high"] for r in rows)  # a mean with its interval
    # a study on this machine afterwards: its hosts name the machine; auto picks by the ceiling
    f = tmp_path / "l.toml"
    f.write_text('name = "nettune-t-ceil"\n[target]\nkind = "local"\n[workload]\nduration = 1\nparallel = 2\n')
    nettune("run", str(f), "--db", str(db), check=True)
    with Store(db) as s:
        data = load(s, "nettune-t-ceil")
        run = data.runs[0]
    facts = data.facts["client"]
    assert facts["machine"] == machine and "iperf2" in facts["loopback_ceiling"] and len(facts["ceilings"]["loopback"]["iperf2"]["2"]) == 2
    why = run.extra["engine_choice"]["reason"]  # shown faster there, or the ceilings said to be too close to tell
    assert ("fastest on this host's loopback ceiling at -P 2" in why and "shown faster" in why) or \
        ("loopback ceilings at -P 2 cannot tell" in why and "by the rules" in why), why
    text = nettune("analyze", "nettune-t-ceil", "--db", str(db), "--format", "json", check=True).stdout
    findings = " ".join(json.loads(text)["findings"])
    assert "circular" in findings and "within noise of the ceiling" not in findings  # a loopback study is its ceiling's own path


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


def test_each_ceiling_line_names_its_interval_and_its_runs_range():
    # seen: "iperf3 -P 1: 15.36 Gbit/s (13.02 to 17.69, N=2)" read as the ceiling's interval, while
    # the interval stored and judged with was -14.3 to 45.0 (two runs) and 13.02/17.69 the runs
    from nettune.commands.ceiling import row_line

    two = {"config": "iperf3", "streams": 1, "values": [13.02e9, 17.69e9], "errors": []}
    assert row_line(two) == "iperf3 -P 1: 15.36 Gbit/s (95% CI -14.31 to 45.02; runs 13.02 to 17.69, N=2)"
    assert row_line({**two, "values": [15e9]}) == "iperf3 -P 1: 15.00 Gbit/s (one run: no interval)"
    assert row_line({**two, "values": [], "errors": ["server busy"]}) == "iperf3 -P 1: failed: server busy"
