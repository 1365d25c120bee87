"""`nettune knobs list|show`, `nettune restore`, `nettune persist`, and `nettune run` with knobs."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyroute2 import netns

from nettune.knobs.journal import Journal
from nettune.knobs.registry import KINDS

from conftest import hostwide, needs_iperf3, needs_root, nettune

pytestmark = hostwide


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_knobs_list_json_is_the_catalog():
    rows = json.loads(nettune("knobs", "list", "--format", "json", check=True).stdout)
    assert {r["kind"] for r in rows} >= set(KINDS) | {"never"}
    for r in rows:
        assert all(r[k] for k in ("kind", "key", "scope", "what", "restart", "risk"))
    rmem = next(r for r in rows if "rmem_max" in r["key"])
    assert rmem["scope"] == "host-wide" and "256 MiB" in rmem["tuned"]
    assert "kind" in nettune("knobs", "list", check=True).stdout


def test_knobs_show_reads_this_machine():
    rows = json.loads(nettune("knobs", "show", "--format", "json", check=True).stdout)
    by_knob = {r["knob"]: r for r in rows}
    assert by_knob["sysctl:net.core.rmem_max"]["value"] == Path("/proc/sys/net/core/rmem_max").read_text().strip()
    assert by_knob["cc"]["value"] == Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    assert by_knob["mtu"]["device"]


def test_restore_with_nothing_to_do():
    r = nettune("restore", check=True)
    assert "nothing to restore" in r.stdout


def _crash_local(tmp_path: Path) -> Path:
    """A local study with a command knob on a file, applied by a process that then dies."""
    f = tmp_path / "setting"
    f.write_text("orig")
    spec = tmp_path / "local.toml"
    spec.write_text(textwrap.dedent(f"""
        name = "tk-cli-local"
        [target]
        kind = "local"
        [workload]
        duration = 1
        [knobs]
        "command:f" = {{value = "changed", read = ["cat", "{f}"], apply = 'printf %s "$1" > {f}'}}
        """))
    code = textwrap.dedent(f"""
        import os
        from nettune.knobs.apply import KnobSession
        from nettune.plan.points import expand_and_check
        from nettune import load_study
        from nettune.targets import make_target
        study = load_study({str(spec)!r})
        KnobSession(study, make_target(study), 1).apply_point(expand_and_check(study)[0])
        os._exit(9)
    """)
    assert subprocess.run([sys.executable, "-c", code], env=os.environ, timeout=60).returncode == 9
    assert f.read_text() == "changed"
    return spec


@needs_iperf3
def test_run_refuses_over_an_unrestored_journal_then_restore_first(tmp_path):
    spec = _crash_local(tmp_path)
    db = tmp_path / "r.db"
    r = nettune("run", str(spec), "--db", str(db))
    assert r.returncode == 2 and "nettune restore" in r.stderr and "--restore-first" in r.stderr
    assert (tmp_path / "setting").read_text() == "changed"
    r = nettune("run", str(spec), "--db", str(db), "--restore-first", check=True)
    assert "restore-first: restored" in r.stdout
    assert (tmp_path / "setting").read_text() == "orig"  # restored first, then the run set and restored it again
    assert Journal().open_sessions() == []


def test_restore_command_after_a_crash(tmp_path):
    _crash_local(tmp_path)
    r = nettune("restore", check=True)
    assert "restored" in r.stdout and "changed -> orig" in r.stdout
    assert (tmp_path / "setting").read_text() == "orig"
    assert "nothing to restore" in nettune("restore", check=True).stdout


LAB = """
name = "tk-cli"
[target]
kind = "lab"
mtu = 9000
[workload]
duration = 1
[sweep]
gro = ["on", "off"]
[knobs]
"sysctl:net.core.rmem_max" = "{rmem}"
"sysctl:net.ipv4.tcp_rmem" = "4096 131072 6000000"
"offload:gro" = "{gro}"
"txqueuelen" = 4000
"mtu" = MTU
"""


@needs_root
def test_bad_knob_value_aborts_before_anything_changes(tmp_path):
    rmem = Path("/proc/sys/net/core/rmem_max").read_text().strip()
    spec = tmp_path / "study.toml"
    spec.write_text(LAB.replace("{rmem}", str(int(rmem) + 4096)).replace("MTU", "70000"))
    db = tmp_path / "r.db"
    r = nettune("run", str(spec), "--db", str(db))
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "study.toml:" in err and "knobs.mtu" in err and "70000" in err
    assert Path("/proc/sys/net/core/rmem_max").read_text().strip() == rmem
    assert not [n for n in netns.listnetns() if n.startswith("nettune-tk-cli") or n.startswith("nettune-probe")]
    assert not [x for x in Journal().records() if x["op"] == "change"]
    if db.exists():
        from nettune import Store

        with Store(db) as s:
            assert s.studies() == []


@needs_root
@needs_iperf3
def test_run_with_knobs_records_them_and_persist_writes_files(tmp_path):
    rmem = Path("/proc/sys/net/core/rmem_max").read_text().strip()
    new = str(int(rmem) + 4096)
    spec = tmp_path / "study.toml"
    spec.write_text(LAB.replace("{rmem}", new).replace("MTU", "1500"))
    db = tmp_path / "r.db"
    r = nettune("run", str(spec), "--db", str(db), check=True)
    assert "host-wide" in r.stdout
    assert Path("/proc/sys/net/core/rmem_max").read_text().strip() == rmem
    assert Journal().open_sessions() == []
    recs = json.loads(nettune("results", "tk-cli", "--db", str(db), "--format", "json", check=True).stdout)
    by_gro = {x["point"]["gro"]: x["settings"]["knobs"] for x in recs}
    assert by_gro["off"]["server"]["offload:gro"] == "off" and by_gro["on"]["client"]["offload:gro"] == "on"
    assert by_gro["on"]["machine"] == {"sysctl:net.core.rmem_max": new}

    out = tmp_path / "persist"
    r = nettune("persist", "tk-cli", "--point", "gro=off", "--out", str(out), "--db", str(db), check=True)
    assert "nothing was applied" in r.stdout
    assert Path("/proc/sys/net/core/rmem_max").read_text().strip() == rmem
    assert f"net.core.rmem_max = {new}" in (out / "machine" / "99-nettune-tk-cli.conf").read_text()
    server = out / "server"
    assert "net.ipv4.tcp_rmem = 4096 131072 6000000" in (server / "99-nettune-tk-cli.conf").read_text()
    tuned = (server / "tuned" / "nettune-tk-cli" / "tuned.conf").read_text()
    assert "[sysctl]" in tuned and "features=gro off" in tuned and "txqueuelen=4000" in tuned and "mtu=1500" in tuned
    rules = (server / "70-nettune-tk-cli.rules").read_text()
    assert 'ATTR{mtu}="1500"' in rules and "ethtool -K" in rules and "gro off" in rules
    assert "ethtool.feature-gro off" in (server / "nm-tk-cli.sh").read_text()
    sh = (server / "apply.sh").read_text()
    assert "ethtool -K $IFACE gro off" in sh and "ip link set dev $IFACE txqueuelen 4000" in sh
    assert os.access(server / "apply.sh", os.X_OK)
    assert (out / "README.txt").exists()
    by_file = tmp_path / "persist-by-file"  # the study file names its study (it said: no study '.../study.toml')
    nettune("persist", str(spec), "--point", "gro=off", "--out", str(by_file), "--db", str(db), check=True)
    assert (by_file / "server" / "apply.sh").read_text() == sh
    r = nettune("persist", "tk-cli", "--point", "gro=maybe", "--out", str(out), "--db", str(db))
    assert r.returncode == 2 and "no point" in r.stderr


@needs_root
def test_knobs_show_a_study_on_its_lab(tmp_path):
    from nettune import load_study
    from nettune.targets.lab.lab import LabTarget

    spec = tmp_path / "study.toml"
    spec.write_text(LAB.replace("{rmem}", "4194304").replace("MTU", "1500").replace('name = "tk-cli"', 'name = "tk-show"'))
    rows = json.loads(nettune("knobs", "show", str(spec), "--format", "json", check=True).stdout)
    assert {r["host"] for r in rows} == {"server", "client", "machine"}
    assert all("lab not up" in r["value"] for r in rows if r["host"] != "machine")
    target = LabTarget(load_study(spec))
    target.up(9000, 1)
    try:
        rows = json.loads(nettune("knobs", "show", str(spec), "--host", "server", "--format", "json", check=True).stdout)
        by = {r["knob"]: r["value"] for r in rows}
        assert by["mtu"] == "9000" and by["txqueuelen"] == "1000" and by["sysctl:net.ipv4.tcp_rmem"].startswith("4096 ")
        assert {r["host"] for r in rows} == {"server", "machine"}  # what server sees: its own and host-wide values
    finally:
        target.close()


def test_unreachable_remote_change_stays_pending_until_forgotten():
    j = Journal()
    j.append({"op": "begin", "session": "r", "study": "remote", "pid": 999999999, "pid_start": "1", "time": 1.0})
    j.change("r", 1, "remote", "vm1", {"key": "mtu", "kind": "mtu", "arg": None, "device": "eth0"},
             {"type": "remote", "label": "vm1", "key": "remote:vm1", "address": "192.0.2.10"}, 1500, 9000)
    r = nettune("restore")  # a record without `reach` (older nettune): never connected to
    assert r.returncode == 1 and "cannot reach vm1 (192.0.2.10)" in r.stdout and "how to reach it" in r.stdout
    assert "ip link set dev eth0 mtu 1500" in r.stdout
    assert len(Journal().open_sessions()) == 1  # still pending: never marked restored
    r = nettune("restore", "--forget", check=True)
    assert "ip link set dev eth0 mtu 1500" in r.stdout and "forgotten" in r.stdout
    assert Journal().open_sessions() == []
