"""A file's bytes as the text of a report: compressed files unpacked, the encodings editors
and shells write (a UTF-8 BOM, UTF-16 from PowerShell's `>`) read, anything else named.

iperf3 and iperf2 write ASCII. A log that went through Windows PowerShell's `>` is UTF-16
with a BOM; one that was archived is gzip (`.gz`), bzip2 or xz, all read here through
Python's own modules with the same size bound as a plain file. A zip, zstd, PNG or PDF
is named in the refusal, never called "binary data" alone.
"""
from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import NettuneError

NOT_A_REPORT = "not an iperf3 -J log or iperf2 -y C output"

# magic bytes -> (name, opener reading the decompressed stream), in the order checked
_PACKED: dict[bytes, tuple[str, Callable[[io.BytesIO], Any]]] = {
    b"\x1f\x8b": ("gzip", lambda f: gzip.GzipFile(fileobj=f)), b"BZh": ("bzip2", bz2.BZ2File), b"\xfd7zXZ\x00": ("xz", lzma.LZMAFile)}
_OTHER = {b"PK\x03\x04": "a zip archive (unzip it first)", b"\x28\xb5\x2f\xfd": "zstd-compressed (run unzstd first)",
          b"\x89PNG": "a PNG image", b"%PDF": "a PDF document", b"\x7fELF": "a program (ELF)"}


def unpack(path: Path, data: bytes, limit: int) -> tuple[bytes, str]:
    """The bytes of the report and how it was packed ("" when it was not)."""
    for magic, (name, opener) in _PACKED.items():
        if data.startswith(magic):
            try:
                with opener(io.BytesIO(data)) as f:
                    out = f.read(limit + 1)
            except (OSError, EOFError, lzma.LZMAError, zlib.error) as e:
                raise NettuneError(f"{path}: a {name} file that cannot be unpacked ({e}); is it cut off?") from None
            if len(out) > limit:
                raise NettuneError(f"{path}: unpacks to more than {limit >> 20} MiB, not an iperf report")
            return out, name
    return data, ""


def text_of(path: Path, data: bytes) -> tuple[str, list[str]]:
    """The report's text and what was done to read it (warnings for the run)."""
    notes: list[str] = []
    for magic, what in _OTHER.items():
        if data.startswith(magic):
            raise NettuneError(f"{path}: {what}, {NOT_A_REPORT}")
    if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) or _utf16_without_bom(data):
        enc = "utf-16" if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else _utf16_without_bom(data)
        try:
            text = data.decode(enc)
        except UnicodeDecodeError as e:
            raise NettuneError(f"{path}: looks like UTF-16 text but byte {e.start} is not ({e.reason}); save it as UTF-8") from None
        notes.append(f"the file is UTF-16 text ({'with a BOM' if enc == 'utf-16' else enc.upper()}, as Windows PowerShell's > writes): read as such")
        return text.removeprefix("\ufeff"), notes
    nul = data.find(b"\0")
    if nul >= 0:
        raise NettuneError(f"{path}: binary data (a NUL byte at offset {nul}), {NOT_A_REPORT}")
    try:
        return data.removeprefix(codecs.BOM_UTF8).decode("utf-8"), notes
    except UnicodeDecodeError as e:
        at = e.start + (3 if data.startswith(codecs.BOM_UTF8) else 0)
        raise NettuneError(f"{path}: not text (byte 0x{data[at]:02x} at offset {at} is not UTF-8), {NOT_A_REPORT}") from None


def _utf16_without_bom(data: bytes) -> str:
    """"utf-16-le"/"utf-16-be" when ASCII text was written as UTF-16 without a BOM: every
    other byte of the first ones is NUL, and only those."""
    head = data[:200] if len(data) % 2 == 0 else data[:199]
    if len(head) < 8:
        return ""
    even, odd = head[0::2], head[1::2]
    if not even.count(0) and odd.count(0) == len(odd):
        return "utf-16-le"
    if not odd.count(0) and even.count(0) == len(even):
        return "utf-16-be"
    return ""
