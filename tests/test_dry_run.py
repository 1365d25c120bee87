"""`nettune run --dry-run` prints what the run would start: the engine's own command
lines, for the tool version installed here (lab and local hosts run this machine's
binaries), and for an ssh target no version-dependent option it cannot know yet."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from nettune import parse_study
from nettune.engines import get_engine
from nettune.engines.access import Access
from nettune.plan.points import expand_and_check
from nettune.targets.lab.labnet import study_layout

from conftest import nettune

STUDY = """name = "nettune-t-dry"
[target]
kind = "{kind}"
{hosts}
[workload]
duration = 2
parallel = "{{streams}}"
auth = false
[sweep]
streams = [1, 3]
"""
SSH_HOSTS = '[target.hosts.server]\naddress = "192.0.2.10"\n[target.hosts.client]\naddress = "192.0.2.11"\n'


def installed_iperf3() -> str:
    """This machine's iperf3 version, read here independently of nettune's dry run."""
    engine = get_engine("iperf3")
    r = subprocess.run(engine.version_argv(), capture_output=True, text=True, timeout=10)
    return engine.version(r.stdout + r.stderr)


def printed(out: str, side: str) -> list[str]:
    """The command lines of one side ("server" or "client"), as shell words."""
    return [shlex.split(line.split("]", 1)[1]) for line in out.splitlines() if line.strip().startswith(f"{side} [")]


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="needs iperf3 installed")
@pytest.mark.parametrize("kind", ["local", "lab"])
def test_dry_run_commands_are_the_engines_for_the_installed_version(tmp_path: Path, kind: str) -> None:
    text = STUDY.format(kind=kind, hosts="").replace("duration = 2", 'engine = "iperf3"\nduration = 2')  # auto may pick iperf2 at -P 3
    f = tmp_path / "s.toml"
    f.write_text(text)
    p = nettune("run", str(f), "--dry-run", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "2000"})
    assert p.returncode == 0, p.stderr
    study = parse_study(text, str(f))
    address = study_layout(study).address("server") if kind == "lab" else "127.0.0.1"
    version = installed_iperf3()
    engine = get_engine("iperf3")
    want_server, want_client = [], []
    for rp in expand_and_check(study, text, str(f)):
        access = Access(bind=address)  # auth = false: bound, no credentials
        want_server.append(engine.server_argv(rp.workload, 5201, version, access))
        want_client.append(engine.client_argv(rp.workload, address, 5201, version, access))
    if kind == "local":  # the run asks the kernel for a free port when each test starts: not known yet
        want_server = [[a if a != "5201" else "<port>" for a in argv] for argv in want_server]
        want_client = [[a if a != "5201" else "<port>" for a in argv] for argv in want_client]
    assert printed(p.stdout, "server") == want_server
    assert printed(p.stdout, "client") == want_client
    assert ("--idle-timeout" in p.stdout) == ("--idle-timeout" in want_server[0])
    assert not (tmp_path / "r.db").exists()


def test_dry_run_of_an_ssh_study_leaves_out_what_the_version_decides(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(STUDY.format(kind="ssh", hosts=SSH_HOSTS))
    p = nettune("run", str(f), "--dry-run", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "2000"})
    assert p.returncode == 0, p.stderr
    assert "version unknown until connected" in p.stdout
    assert "--idle-timeout" not in p.stdout
    assert printed(p.stdout, "server")[0][:6] == ["iperf3", "-s", "-1", "-J", "-p", "<port>"]  # the first free from 5201 on, when connected
    assert "-B" in printed(p.stdout, "server")[0] and "192.0.2.10" in printed(p.stdout, "client")[0]


@pytest.mark.skipif(shutil.which("iperf") is None, reason="needs iperf (iperf2) installed")
def test_dry_run_shows_the_warm_up_the_run_makes(tmp_path: Path) -> None:
    """iperf2 TCP: the run warms each fresh server with a short test (engines/iperf2.py); the dry
    run said nothing of it. Its command is the one the run stores; UDP has none. Real iperf2, 1 s:
    run isolated (/work/isolated.sh)."""
    import json
    import sqlite3

    text = ('name = "nettune-t-warm"\n[target]\nkind = "local"\n[workload]\nengine = "iperf2"\nduration = 1\nauth = false\n'
            'protocol = "{proto}"\nparallel = 2\n[sweep]\nproto = ["tcp", "udp"]\n')
    f = tmp_path / "w.toml"
    f.write_text(text)
    p = nettune("run", str(f), "--dry-run", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "2000"})
    assert p.returncode == 0, p.stderr
    said = [ln.split("(docs/engines.md): ", 1)[1] for ln in p.stdout.splitlines() if "warm-up test, not measured" in ln]
    assert len(said) == 1  # the TCP point only
    nettune("run", str(f), "--db", str(tmp_path / "r.db"), check=True)
    with sqlite3.connect(tmp_path / "r.db") as db:
        stored = [json.loads(x).get("warm_up") for (x,) in db.execute(
            "SELECT extra_json FROM runs r JOIN points p ON p.id = r.point_id ORDER BY p.idx")]
    argv = stored[0]["argv"]
    port = argv[argv.index("-p") + 1]
    assert shlex.split(said[0]) == [a if a != port else "<port>" for a in argv]
    assert stored[1] is None


def test_dry_run_with_cross_check_says_what_follows_the_study(tmp_path: Path) -> None:
    # `run --cross-check --dry-run` printed the study's plan only: the re-runs after it went unsaid
    f = tmp_path / "c.toml"
    f.write_text(STUDY.format(kind="local", hosts=""))
    with_check = nettune("run", str(f), "--dry-run", "--cross-check", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "2000"})
    without = nettune("run", str(f), "--dry-run", "--db", str(tmp_path / "r.db"), env={"COLUMNS": "2000"})
    assert with_check.returncode == 0 and without.returncode == 0, with_check.stderr
    assert "--cross-check: after the study" in with_check.stdout and "not in the expected time above" in with_check.stdout
    assert "--cross-check" not in without.stdout
    assert not (tmp_path / "r.db").exists()
