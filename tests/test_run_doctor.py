"""`nettune run` audits the hosts before the first point (the doctor's checks, nothing
changed), stores the findings with the host facts, and the report lists them; `--doctor
off` skips it. Real lab, real iperf3."""
from __future__ import annotations

from nettune import parse_study
from nettune.store.writer import StoreWriter
from nettune.run.study import run_study
from nettune.run.study import NoProgress

from conftest import lab_leftovers, needs_iperf3, needs_root, nettune

pytestmark = [needs_root, needs_iperf3]
STUDY = ('name = "{name}"\n[target]\nkind = "lab"\nhosts = ["server", "client"]\n'
         '[workload]\nengine = "iperf3"\nserver = "server"\nclient = "client"\nduration = 1\n')


def test_findings_are_stored_and_reported(tmp_path):
    db = tmp_path / "r.db"
    said = []

    class Progress(NoProgress):
        def message(self, text):
            said.append(text)

    with StoreWriter(db) as store:
        out = run_study(parse_study(STUDY.format(name="nettune-t-rundoc")), store, progress=Progress())
        facts = store.facts(out.study_id)
    assert out.status == "done" and out.failed == 0
    assert any(m.startswith("doctor: ") and "warning(s) on the hosts" in m for m in said)
    server = {f["check"]: f for f in facts["server"]["doctor"]}
    assert "GRO off" in server["nic.offloads"]["seen"]  # the lab veths as the run found them
    assert "cpu.mitigations" in {f["check"] for f in facts["this machine"]["doctor"]}
    assert "path.mtu" in server and "measured to client" in server["net.buffers"]["evidence"]
    nettune("report", "nettune-t-rundoc", "--db", str(db), "--out", str(tmp_path / "rep"), check=True)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Host audit" in md and "| warn | server | nic.offloads |" in md
    assert 'id="audit"' in (tmp_path / "rep" / "report.html").read_text()
    assert not lab_leftovers()


def test_doctor_off_skips_the_audit(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(STUDY.format(name="nettune-t-rundoc-off"))
    r = nettune("run", str(f), "--db", str(tmp_path / "r.db"), "--doctor", "off", check=True)
    assert "doctor:" not in r.stdout
    with StoreWriter(tmp_path / "r.db") as store:
        facts = store.facts(store.studies()[0]["id"])
    assert all("doctor" not in v for v in facts.values())
    assert nettune("run", str(f), "--db", str(tmp_path / "r.db"), "--doctor", "maybe").returncode == 2
