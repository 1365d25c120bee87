"""The state directory trusts nothing it finds (issue 33): it is created 0700 and checked
(owner, mode, not a symbolic link) before use, records are created with O_EXCL and
O_NOFOLLOW, and `remove_stale_dirs` deletes only this user's own directories that a
record may name. Planted links and records are made as another user where that matters
(root gives them away); one test runs nettune as nobody (docs/development.md)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nettune.errors import NettuneError
from nettune.targets import procs

from conftest import IS_ROOT

NOBODY = 65534


def test_a_new_state_directory_is_private(tmp_path):
    d = tmp_path / "run" / "procs"
    assert procs.private_dirs(d)
    assert (d.stat().st_mode & 0o777) == 0o700 and (d.parent.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("how", ["other owner", "group writable", "symlink", "a file"])
def test_a_planted_state_directory_is_refused_with_the_fix(tmp_path, how):
    if how == "other owner" and not IS_ROOT:
        pytest.skip("needs root to give the directory to another user")
    d = tmp_path / "nettune-x"
    if how == "symlink":
        (tmp_path / "theirs").mkdir(mode=0o700)
        d.symlink_to(tmp_path / "theirs")
    elif how == "a file":
        d.write_text("")
    else:
        d.mkdir(mode=0o700)
        if how == "other owner":
            os.chown(d, NOBODY, NOBODY)
        else:
            d.chmod(0o770)
    with pytest.raises(NettuneError) as e:
        procs.private_dir(d)
    msg = str(e.value)
    assert "\n" not in msg and ("remove it" in msg or "chmod 700" in msg)


def test_a_process_record_is_never_written_through_a_planted_link(tmp_path, monkeypatch):
    monkeypatch.setattr(procs, "PROC_DIR", tmp_path / "run" / "procs")
    procs.private_dirs(procs.PROC_DIR)
    victim = tmp_path / "victim"
    victim.write_text("KEEP")
    child = subprocess.Popen(["sleep", "30"])
    try:
        (procs.PROC_DIR / str(child.pid)).symlink_to(victim)  # planted before nettune records the PID
        procs.record_pid(child.pid)
        assert victim.read_text() == "KEEP"
        rec = procs.PROC_DIR / str(child.pid)
        assert not rec.is_symlink() and rec.read_text().startswith(procs.start_time(child.pid) or "?")
        assert (rec.stat().st_mode & 0o777) == 0o600
    finally:
        child.kill()
        child.wait()


@pytest.fixture()
def dir_records(tmp_path, monkeypatch) -> Path:
    records = tmp_path / "run" / "dirs"
    monkeypatch.setattr(procs, "DIR_RECORDS", records)
    procs.private_dirs(records)
    return records


def test_a_planted_record_never_deletes_another_runs_directory(tmp_path, dir_records):
    prefix = str(tmp_path / "auth.")
    dead = "999999999 1"
    theirs = Path(prefix + "aaaaaaaaaaaa")  # another user's directory
    theirs.mkdir()
    (theirs / "key").write_text("x")
    linked = Path(prefix + "bbbbbbbbbbbb")  # a link to a directory of ours
    target = tmp_path / "important"
    target.mkdir()
    (target / "data").write_text("x")
    linked.symlink_to(target)
    mine = Path(prefix + "cccccccccccc")
    mine.mkdir()
    if IS_ROOT:
        os.chown(theirs, NOBODY, NOBODY)
    (dir_records / theirs.name).write_text(f"{theirs}\n{dead}")
    (dir_records / linked.name).write_text(f"{linked}\n{dead}")
    (dir_records / "other-name").write_text(f"{mine}\n{dead}")  # a record named for another directory
    removed = procs.remove_stale_dirs(prefix)
    assert (target / "data").exists() and linked.is_symlink() and mine.exists()
    if IS_ROOT:
        assert removed == [] and (theirs / "key").exists()
    else:  # without root it cannot be another user's: it is this user's own stale directory
        assert removed == [str(theirs)]
    assert list(dir_records.iterdir()) == []  # the planted records are dropped


def test_a_stale_directory_of_a_killed_run_is_still_removed(tmp_path, dir_records):
    prefix = str(tmp_path / "auth.")
    d = Path(prefix + "dddddddddddd")
    d.mkdir(mode=0o700)
    (dir_records / d.name).write_text(f"{d}\n999999999 1")
    assert procs.remove_stale_dirs(prefix) == [str(d)] and not d.exists()


def test_a_record_already_there_is_refused(tmp_path, dir_records):
    d = str(tmp_path / "auth.eeeeeeeeeeee")
    (dir_records / Path(d).name).write_text(f"{d}\n999999999 1")
    with pytest.raises(NettuneError, match="did not write it"):
        procs.record_dir(d)


@pytest.mark.skipif(not IS_ROOT or not shutil.which("setpriv"), reason="runs nettune as nobody: needs root to switch users, and setpriv")
@pytest.mark.parametrize("plant", ["owned by root", "symlink"])
def test_as_nobody_a_state_directory_someone_else_made_is_refused(tmp_path, plant):
    """A user's nettune finds its state directory already made by someone else (a planted
    directory, or a link to one): it starts no process and says what to do."""
    runtime = tmp_path / "xdg"
    runtime.mkdir()
    os.chown(runtime, NOBODY, NOBODY)
    planted = runtime / "nettune"
    if plant == "symlink":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        os.chown(elsewhere, NOBODY, NOBODY)
        planted.symlink_to(elsewhere)
        os.lchown(planted, NOBODY, NOBODY)
    else:
        planted.mkdir(mode=0o755)  # root's: nobody's nettune must not use it
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    tmp_path.chmod(0o755)
    src = Path(__file__).resolve().parent.parent / "src"
    code = "from nettune.targets.procs import LocalProc\nLocalProc(['true'])\n"
    r = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=+dac_read_search",
                        "--ambient-caps=+dac_read_search", "env", "-u", "NETTUNE_RUN_DIR", f"HOME={home}", f"XDG_RUNTIME_DIR={runtime}", f"PYTHONPATH={src}",
                        sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "NettuneError" in r.stderr, r.stdout + r.stderr
    assert "state directory" in r.stderr and ("symbolic link" in r.stderr if plant == "symlink" else "belongs to uid 0" in r.stderr)
    assert not any((runtime / "nettune").iterdir()) if plant != "symlink" else not any(elsewhere.iterdir())
