"""Files nettune creates with what it measured are private to their owner (mode 0600,
or stricter where the umask says so): the results database (and SQLite's -wal and -shm
next to it, which SQLite creates with the database's mode), exports and reports. They
hold host names, addresses, the study file and the hosts' facts; who should read them is
the owner's decision (chmod), not the default umask's. A file that exists already keeps
its mode: the owner chose it. docs/security.md lists every file and its mode.
"""
from __future__ import annotations

import os
from pathlib import Path


def private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 if it does not exist (never through a symbolic
    link), so that what writes it next (SQLite, an exporter) keeps that mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    except OSError:
        return  # a directory that does not exist or is not writable: the writer says so in its own words
    os.close(fd)


def write_private(path: Path, text: str) -> None:
    """Write a text file that is created 0600 (an existing file keeps its mode)."""
    private_file(path)
    path.write_text(text)
