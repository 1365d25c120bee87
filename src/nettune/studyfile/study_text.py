"""A study file's bytes as text: bounded in size, never blocking on a pipe, UTF-8 (a BOM
dropped), or a one-line SpecError saying why not. Read before the models see anything
(load.py), and for an ssh target's inventory file (ssh_hosts.py)."""
from __future__ import annotations

import codecs
import os
from pathlib import Path

from ..errors import SpecError

MAX_STUDY_BYTES = 1 << 20  # a study is a page of TOML; a bigger file is the wrong file


def read_study_text(path: str | Path, what: str = "a study TOML file (see examples/)") -> str:
    """The file's text: UTF-8, at most MAX_STUDY_BYTES, or a SpecError saying why not.
    `what` the file should be, for the fix (an ssh target's inventory is read this way too)."""
    path = Path(path)
    try:
        data = read_bytes(path, MAX_STUDY_BYTES + 1)
    except FileNotFoundError:
        raise SpecError(str(path), "", f"no such file; give the path of {what}") from None
    except IsADirectoryError:
        raise SpecError(str(path), "", f"is a directory; give the path of {what}") from None
    except OSError as e:
        raise SpecError(str(path), "", f"cannot read: {e.strerror}") from None
    if len(data) > MAX_STUDY_BYTES:
        raise SpecError(str(path), "", f"larger than {MAX_STUDY_BYTES >> 20} MiB, too big to be {what}")
    if not data.strip():
        raise SpecError(str(path), "", f"empty file; give the path of {what}")
    return decode_study(data, str(path))


def read_bytes(path: Path, limit: int) -> bytes:
    """At most `limit` bytes, never waiting forever: /dev/zero stops at the limit, and a
    named pipe nobody writes to reads as empty instead of blocking in open()."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)  # a pipe that has a writer (bash's <(...)) is read to its end
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)


def decode_study(data: bytes, file: str = "<study>") -> str:
    """UTF-8 text (a leading BOM, as some editors write, is dropped)."""
    try:
        return data.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as e:
        at = e.start + (len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0)
        line = data.count(b"\n", 0, at) + 1
        col = at - (data.rfind(b"\n", 0, at) + 1) + 1
        utf16 = " (it looks like UTF-16)" if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else ""
        raise SpecError(file, "", f"not UTF-8 text: byte 0x{data[at]:02x} at column {col}{utf16}; save the file as UTF-8", line) from None
