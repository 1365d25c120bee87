"""`nettune hosts` and the dry run as a user runs them: what an ssh_config's `Match exec`
does (issue 33: a dry run runs nothing, and says what it did not run; a real run runs it as
ssh does and says so), `--format json`, and full values when the output is piped (issue
32). Only loopback: the one connection made goes to a closed port on 127.0.0.1."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import nettune


def _files(tmp_path: Path, marker: Path, long_dir: str = "") -> Path:
    keys = tmp_path / (long_dir or "k")
    keys.mkdir(parents=True, exist_ok=True)
    (keys / "id_ed25519").write_text("not a real key\n")
    (keys / "id_ed25519").chmod(0o600)
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host lo1 lo2\n  HostName 127.0.0.1\n  Port 1\n  IdentityFile {keys}/id_ed25519\n"
                   f'Match host 127.0.0.1 exec "echo %n >> {marker}"\n  User fromexec\n')
    study = tmp_path / "s.toml"
    study.write_text(f'name = "t"\n[target]\nkind = "ssh"\nssh_config = "{cfg}"\nconnect_timeout = 3\n'
                     '[target.hosts.lo1]\n[target.hosts.lo2]\n[workload]\nserver = "lo1"\nclient = "lo2"\nduration = 1\n')
    return study


def test_dry_run_shows_match_exec_and_runs_nothing_unless_asked(tmp_path):
    marker = tmp_path / "ran"
    study = _files(tmp_path, marker)
    r = nettune("run", str(study), "--dry-run")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not marker.exists(), "the dry run ran the Match exec command"
    out = " ".join(r.stdout.split())
    assert "lo1: Match exec" in out and "lo2: Match exec" in out and "not run" in out and "--run-config-commands" in out
    r = nettune("run", str(study), "--dry-run", "--run-config-commands")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(marker.read_text().split()) == ["lo1", "lo2"]  # %n: the name as typed, once per host
    assert "ran Match exec" in " ".join(r.stdout.split())


def test_hosts_connecting_runs_match_exec_as_ssh_and_says_so(tmp_path):
    marker = tmp_path / "ran"
    study = _files(tmp_path, marker)
    r = nettune("hosts", str(study), "--no-connect")
    assert not marker.exists() and "not run" in r.stdout
    r = nettune("hosts", str(study))  # connects: a real run's reading (the port is closed: it fails, fast)
    assert r.returncode == 1
    assert marker.exists() and "ran Match exec" in " ".join(r.stdout.split()) and "fromexec@127.0.0.1" in " ".join(r.stdout.split())


def test_hosts_json_has_every_field(tmp_path):
    study = _files(tmp_path, tmp_path / "ran")
    r = nettune("hosts", str(study), "--no-connect", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    lo1 = next(h for h in doc["hosts"] if h["name"] == "lo1")
    assert (lo1["address"], lo1["port"], lo1["jump"], doc["connected"]) == ("127.0.0.1", 1, "direct", False)
    assert lo1["key"].startswith(str(tmp_path)) and lo1["unresolved"] and lo1["source"].startswith("ssh_config")


def test_hosts_piped_keeps_every_value_whole(tmp_path):
    long_dir = "keys-" + "x" * 90
    study = _files(tmp_path, tmp_path / "ran", long_dir)
    r = nettune("hosts", str(study), "--no-connect", env={"COLUMNS": "80"})  # `| cat`: not a terminal, 80 columns
    assert r.returncode == 0, r.stderr
    assert f"{tmp_path}/{long_dir}/id_ed25519" in r.stdout and "…" not in r.stdout
