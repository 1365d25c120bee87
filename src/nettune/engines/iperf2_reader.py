"""Reading iperf2's CSV (-y C) report rows, in the 2.0/2.1 positional layout and the
2.2 layout with header rows (what each looks like: engines.iperf2's docstring)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Column names after bytes,speed when there is no header row (2.0/2.1 positional layout).
_UDP_EXT = ("jitter", "errors", "datagrams", "errpercent", "outoforder")
_TCP_WRITE_EXT = ("writecnt", "writeerr", "tcpretry", "tcpcwnd", "tcprtt", "tcprttvar")


def parse_version(text: str) -> str:
    """'iperf version 2.1.8 (12 August 2022) pthreads' -> '2.1.8'."""
    m = re.search(r"iperf\s+version\s+(\d+\.\d+(?:\.\d+)?)", text or "") or re.search(r"\b(2\.\d+(?:\.\d+)?)\b", text or "")
    return m.group(1) if m else ""


@dataclass
class Row:
    src_port: int
    dst_port: int
    tid: int  # transfer id; < 0 on sum rows
    start: float
    end: float
    nbytes: int
    bps: float
    ext: dict[str, float] = field(default_factory=dict)
    side: str = ""
    direction: str = ""  # "c2s" or "s2c"
    key: Any = None  # the stream: the client's port, or ("id", side, tid)


def _num(x: str) -> float:
    return float(x.strip())


def parse_rows(text: str, udp: bool) -> tuple[list[Row], int]:
    """All report rows of one side's output, and how many non-empty lines were not rows."""
    rows: list[Row] = []
    headers: dict[int, list[str]] = {}  # 2.2 prints one header per report layout
    bad = 0
    for line in (text or "").splitlines():
        f = [x.strip() for x in line.strip().split(",")]
        if len(f) < 8:
            bad += bool(line.strip())
            continue
        if f[0].lower() == "time":
            headers[len(f)] = [x.lower() for x in f]
            continue
        try:
            rows.append(_row_named(f, headers[len(f)]) if len(f) in headers else _row_positional(f, udp))
        except (ValueError, IndexError, KeyError):
            bad += 1
    return rows, bad


def _row_positional(f: list[str], udp: bool) -> Row:
    if "-" in f[6][1:]:  # "0.0-1.0" (2.0/2.1)
        a, b = f[6].split("-", 1)
        start, end, rest = _num(a), _num(b), f[7:]
    else:  # istart,iend in two columns (2.2)
        start, end, rest = _num(f[6]), _num(f[7]), f[8:]
    ext = rest[2:]
    names = _UDP_EXT if udp else (_TCP_WRITE_EXT if len(ext) == len(_TCP_WRITE_EXT) else ())
    return Row(int(f[2]), int(f[4]), int(f[5]), start, end, int(_num(rest[0])), _num(rest[1]), _ext(names, ext))


def _row_named(f: list[str], names: list[str]) -> Row:
    g = dict(zip(names, f))
    if "istart" in g:
        start, end = _num(g["istart"]), _num(g["iend"])
    else:
        a, b = g["interval"].split("-", 1)
        start, end = _num(a), _num(b)
    skip = {"time", "srcaddress", "srcport", "dstaddr", "dstport", "transferid", "istart", "iend", "interval", "bytes", "speed"}
    rest = [(k, v) for k, v in g.items() if k not in skip]
    ext = _ext(tuple(k for k, _ in rest), [v for _, v in rest])
    return Row(int(g["srcport"]), int(g["dstport"]), int(g["transferid"]), start, end, int(_num(g["bytes"])), _num(g["speed"]), ext)


def _ext(names: tuple[str, ...], values: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in zip(names, values):
        try:
            out[k] = _num(v)
        except ValueError:
            pass  # a non-numeric extra column is not worth failing the row
    return out
