"""Issue 30 on the real lab: a lab brought up by hand is the user's (a run uses it and
leaves it up); over-rate UDP on a shaped link is dropped at the bottleneck, not held back
in the sender's socket; the dry run's engine is the run's."""
import subprocess

from pyroute2 import netns

from conftest import lab_leftovers, nettune, needs_iperf2, needs_iperf3, needs_root

pytestmark = [needs_root, needs_iperf3]

LAB_STUDY = """
name = "{name}"
[target]
kind = "lab"
mtu = 1500
[workload]
engine = "iperf3"
duration = 1
"""
OWN = LAB_STUDY.format(name="nettune-t-own")


def test_a_lab_brought_up_by_hand_is_used_and_left_up_and_only_a_runs_own_lab_is_removed(tmp_path):
    f, db = tmp_path / "own.toml", tmp_path / "r.db"
    f.write_text(OWN)
    ns = "nettune-nettune-t-own-server"
    try:
        nettune("lab", "up", str(f), check=True)
        user = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"])  # the user's own process in their lab
        # the run changes the MTU and shapes the links
        f.write_text(OWN.replace("mtu = 1500", 'mtu = "{mtu}"\n[target.link]\nrate = "5G"') + "[sweep]\nmtu = [9000]\n")
        r = nettune("run", str(f), "--db", str(db), check=True)
        assert "1 tests" in r.stdout
        assert ns in netns.listnetns() and user.poll() is None  # the lab and the user's process are still there
        mtu = subprocess.run(["ip", "netns", "exec", ns, "cat", "/sys/class/net/" + _nic(ns) + "/mtu"], capture_output=True, text=True).stdout
        assert mtu.strip() == "1500"  # put back as `lab up` left it: unshaped too
        from pyroute2 import IPRoute

        from nettune import parse_study
        from nettune.targets.lab import lab_shaping
        from nettune.targets.lab.labnet import study_layout

        with IPRoute() as ipr:
            switch_end = study_layout(parse_study(OWN)).root_if("server")
            assert not {"htb", "tbf"} & {q["kind"] for q in lab_shaping.qdiscs(ipr, switch_end)}
        assert "nettune-t-own" in nettune("lab", "status", check=True).stdout
        nettune("lab", "down", "nettune-t-own", check=True)
        assert ns not in netns.listnetns()
        user.wait(timeout=10)
        # without `lab up`, the run creates its lab and removes it
        nettune("run", str(f), "--db", str(db), check=True)
        assert ns not in netns.listnetns()
    finally:
        nettune("lab", "down", "nettune-t-own", "--force")
    assert not any("nettune-t-own" in n for n in lab_leftovers().get("namespaces", []))


def _nic(ns: str) -> str:
    out = subprocess.run(["ip", "netns", "exec", ns, "ls", "/sys/class/net"], capture_output=True, text=True).stdout.split()
    return next(n for n in out if n != "lo")


AUTO = """
name = "nettune-t-auto-same"
[target]
kind = "local"
[workload]
duration = 1
parallel = "{streams}"
[sweep]
streams = [1, 2]
"""


def _choices(out: str) -> list[tuple[str, str]]:
    """(configuration, point) of each 'engine auto: ...' line, across the terminal's wrapping."""
    import re

    text = " ".join(out.split())
    return sorted(re.findall(r"engine auto: (iperf\S* [\d.]+(?: x\d+ processes)?) at (streams=\d+)", text))


@needs_iperf2
def test_the_dry_run_chooses_the_engine_the_run_uses_with_and_without_stored_ceilings(tmp_path):
    from nettune.store.writer import StoreWriter
    from nettune.engines.choice import config_label

    f = tmp_path / "a.toml"
    f.write_text(AUTO)
    for case in ("no ceilings", "ceilings"):
        db = tmp_path / f"{case.replace(' ', '-')}.db"
        if case == "ceilings":  # made-up ceilings under which fan-out wins: the dry run must read them as the run does
            machine = subprocess.run(["uname", "-n"], capture_output=True, text=True).stdout.strip()
            with StoreWriter(db) as s:
                s.add_ceilings(machine, [{"config": config_label(c, n), "engine": c, "processes": n, "streams": p,
                                            "values": [bps * 0.98, bps, bps * 1.02]}
                                           for p in (1, 2) for c, n, bps in (("iperf3", 1, 10e9), ("iperf3", 2, 90e9), ("iperf2", 1, 20e9))])
        dry = nettune("run", str(f), "--dry-run", "--db", str(db), check=True).stdout
        run = nettune("run", str(f), "--db", str(db), check=True).stdout
        assert len(_choices(dry)) == 2 and _choices(dry) == _choices(run), (case, dry, run)
        with StoreWriter(db) as s:
            runs = s.runs(s.find_study("nettune-t-auto-same")["id"])
        at2 = next(r for r in runs if r["point"]["streams"] == 2)["extra"]["engine_choice"]
        if case == "ceilings":
            assert (at2["engine"], at2["processes"]) == ("iperf3", 2) and "ceiling" in at2["reason"]
        else:
            assert (at2["engine"], at2["processes"]) == ("iperf2", 1)


CEIL = LAB_STUDY.format(name="nettune-t-labceil")


def test_ceiling_of_a_lab_study_measures_its_lab_path_and_judges_its_shaped_points(tmp_path):
    import json

    from nettune.store.writer import StoreWriter

    f, db = tmp_path / "c.toml", tmp_path / "r.db"
    f.write_text(CEIL)
    out = nettune("ceiling", str(f), "--duration", "1", "--max-streams", "1", "--runs", "2", "--db", str(db), check=True).stdout
    assert "lab of nettune-t-labceil" in out and "lab tests of 1s, 2 run(s) each" in out
    with StoreWriter(db) as s:
        rows = s.ceiling_rows()
    assert rows and {r["path"] for r in rows} == {"lab mtu=1500 queues=1"} and all(r["runs"] == 2 for r in rows)
    assert not any("labceil" in n for n in lab_leftovers().get("namespaces", []))  # its own lab, removed
    # a shaped lab study of the same MTU and queues is judged by it; an unshaped one is its own path
    f.write_text(CEIL.replace('mtu = 1500', 'mtu = 1500\n[target.link]\nrate = "300M"') + "[repeat]\nruns = 2\n")
    nettune("run", str(f), "--db", str(db), check=True)
    text = json.loads(nettune("analyze", "nettune-t-labceil", "--db", str(db), "--format", "json", check=True).stdout)
    said = [x for x in text["findings"] if "lab mtu=1500 queues=1 ceiling for iperf3 at -P 1" in x]
    # 300M shaped, far below what iperf3 does on the unshaped lab: never "at the ceiling"; below it, or
    # (a noisy ceiling of 2 runs on a shared machine) too noisy to tell, or (a run that failed on
    # a busy machine left one) no verdict
    assert len(said) == 1 and "within noise" not in said[0], said
    assert any(w in said[0] for w in ("below the ceiling", "too noisy", "no verdict")), said
    assert not lab_leftovers()
