"""Reading iperf2's human-readable report (`-i N`, with or without `-e`) into the same
rows as its CSV (engines.iperf2_reader.Row), so one parser serves both.

Why: iperf 2.1.8 ignores -e together with -y C, so its CSV has no write/read counts,
retries, cwnd, RTT; its enhanced text has them (checked on this machine, see
tests/fixtures/iperf2/text_* and live_*). What the text looks like:
- a connection line per stream: "[  1] local A port P connected with B port Q (flags)";
  its flags say "(reverse)" (-R, or -d's connection back), "(full-duplex)";
- report lines "[ ID] a-b sec  X Bytes  Y bits/sec  <extras>": with -e a sender's
  extras are "W/E Rtry Cwnd/RTT(var) us NetPwr" (TCP) or "W/E PPS" (UDP), a receiver's
  "Reads=Dist" (TCP) or "Jitter Lost/Total (%) ..." (UDP); without -e there are none,
  or only the UDP receiver's jitter/loss;
- [SUM] lines are iperf2's totals over the streams (its bytes over the whole test, not the
  sum of each stream's rate over its own, longer, final interval): kept as sum rows (id -1,
  as 2.2's CSV prints them) when the side's streams all go one way; with --full-duplex
  and -d a [SUM] adds both ways, so there the streams are summed; [FD1] (a full-duplex
  stream's two ways), [SUM-2] and [ CT] lines are left out;
- "[ *1]": the stream's other way (the reading side of -R or --full-duplex);
- a UDP client prints each stream's "Server Report:" (the receiver's final line, relayed)
  and "N datagrams received out-of-order" lines.
Units: -f b prints exact bytes and bits/sec; otherwise K/M/G Bytes are powers of 1024
and K/M/G bits powers of 1000, three significant digits; -f K/M/G print rates in
KBytes/sec (powers of 1024 bytes).

A row's ports are written sender first, as 2.1.8's CSV does (engines.iperf2 reads the
direction from that order).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .iperf2_reader import Row

_BYTES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_BITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}

# "[  1]", "[ *1]", "[SUM]"; with --permit-key the key is printed around the id: "[KEY(*1)]"
_ID = r"^\[\s*(?:[^\]\s(]*\()?(?P<star>\*?)(?P<id>\d+|SUM(?:-\d+)?|FD\d+)\)?\]"
REPORT = re.compile(
    _ID + r"\s+(?P<a>\d+(?:\.\d+)?)\s*-\s*(?P<b>\d+(?:\.\d+)?)\s+sec\s+"
    r"(?P<x>\d+(?:\.\d+)?)\s+(?P<xu>[KMGT]?)Bytes\s+(?P<y>\d+(?:\.\d+)?)\s+(?P<yu>[KMGT]?)(?P<yk>bits|Bytes)/sec(?P<rest>.*)$"
)
CONNECTED = re.compile(_ID + r"\s+local\s+\S+\s+port\s+(?P<local>\d+)\s+connected with\s+\S+\s+port\s+(?P<peer>\d+)(?P<flags>.*)$")
OUT_OF_ORDER = re.compile(_ID + r"\s+\S+\s+sec\s+(?P<n>\d+)\s+datagrams received out-of-order")
SERVER_REPORT = re.compile(_ID + r"\s+Server Report:")
CONNECTS_TO = re.compile(r"^Client connecting to \S+, (?:TCP|UDP) port (?P<port>\d+)")
LISTENS = re.compile(r"^Server listening on (?:TCP|UDP) ports? (?P<ports>[\d-]+)")

TCP_WRITE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+)(?:\s+(\d+)K/(\d+)\((\d+)\)\s*us)?")
TCP_READ = re.compile(r"^\s*(\d+)=[\d:]+")
UDP_READ = re.compile(r"^\s*(\d+(?:\.\d+)?)\s+ms\s+(\d+)/\s*(\d+)\s+\(([\d.eE+-]+)%\)")
UDP_WRITE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+)\s+pps")


@dataclass
class _Conn:
    local: int
    peer: int
    reverse: bool
    full_duplex: bool
    accepted: bool  # this side accepted it (a client's -d listener, or any server connection)


def _rate(m: re.Match[str]) -> float:
    """bits/s of a report line's rate: -f k/m/g (and the default) print bits, powers of
    1000; -f K/M/G print bytes, powers of 1024 ("3054728 KBytes/sec" is 25.0 Gbit/s)."""
    return float(m["y"]) * (_BITS[m["yu"]] if m["yk"] == "bits" else 8 * _BYTES[m["yu"]])


def is_text(text: str) -> bool:
    """Whether `text` is iperf2's human-readable report (rather than -y C rows)."""
    return any(REPORT.match(ln.strip()) for ln in (text or "").splitlines())


def _extras(rest: str) -> tuple[dict[str, float], bool | None]:
    """The -e columns after the rate, and whether they are a sender's (None: no extras)."""
    if m := UDP_READ.match(rest):
        return {"jitter": float(m[1]), "errors": float(m[2]), "datagrams": float(m[3]), "errpercent": float(m[4])}, False
    if m := UDP_WRITE.match(rest):
        return {"writecnt": float(m[1]), "writeerr": float(m[2])}, True
    if m := TCP_WRITE.match(rest):
        ext = {"writecnt": float(m[1]), "writeerr": float(m[2]), "tcpretry": float(m[3])}
        if m[4] is not None:
            ext |= {"tcpcwnd": float(m[4]), "tcprtt": float(m[5]), "tcprttvar": float(m[6])}
        return ext, True
    if m := TCP_READ.match(rest):
        return {"readcnt": float(m[1])}, False
    return {}, None


def log_role(text: str) -> str:
    """Whose log this is, "client" or "server" ("" when no banner says): the first banner's
    role, except a client's -d/-r log, which opens with its own listener ("Server listening
    on ... port L", or "ports L-S"): it also connects out, and no connection of it says
    "(reverse)", which a server's connection back to the client always does."""
    heads = [m for ln in (text or "").splitlines() if (m := CONNECTS_TO.match(ln.strip()) or LISTENS.match(ln.strip()))]
    if not heads:
        return ""
    if "port" in heads[0].groupdict() or "-" in heads[0]["ports"]:
        return "client"
    flags = [m["flags"] for ln in text.splitlines() if (m := CONNECTED.match(ln.strip()))]
    dual = any("port" in m.groupdict() for m in heads[1:])
    return "client" if dual and not any("(reverse)" in f for f in flags) else "server"


def parse_text_rows(text: str) -> tuple[list[Row], int]:
    """The report rows of one side's text output (relayed UDP server reports carry
    ext["relay"] = 1), and how many report lines could not be placed (no connection line)."""
    primary = ""  # "client" or "server": the role of the first block this side printed
    role = log_role(text)  # the side whose log this is
    connects_to: set[int] = set()
    listens: set[int] = set()
    conns: dict[int, _Conn] = {}
    rows: list[Row] = []
    last: dict[int, Row] = {}
    relay: set[int] = set()
    sums: list[Row] = []  # [SUM] lines: the totals over a side's streams
    ways: set[bool] = set()  # whether this side sends, receives, or both (-d)
    unplaced = 0
    for raw in (text or "").splitlines():
        line = raw.strip()
        if m := CONNECTS_TO.match(line):
            primary = primary or "client"
            connects_to.add(int(m["port"]))
            continue
        if m := LISTENS.match(line):
            # a client's -d listener with -L prints "ports L-S" first: it is still the client
            primary = primary or ("client" if "-" in m["ports"] else "server")
            a, _, b = m["ports"].partition("-")
            listens.update({int(a), int(b or a)})
            continue
        if m := CONNECTED.match(line):
            local, peer, flags = int(m["local"]), int(m["peer"]), m["flags"]
            # with -P a client may print its first connection line before its "Client
            # connecting to" banner: a connection before any banner is its own
            accepted = local in listens or bool(connects_to) and peer not in connects_to
            # -d: the server's connection back to the client says "(reverse)" but sends,
            # as every connection a side makes does; -R's "(reverse)" turns the roles
            reverse = "(reverse)" in flags and not (role == "server" and not accepted)
            conns[int(m["id"])] = _Conn(local, peer, reverse, "(full-duplex)" in flags, accepted)
            continue
        if m := SERVER_REPORT.match(line):
            relay.add(int(m["id"]))
            continue
        if m := OUT_OF_ORDER.match(line):
            r = last.get(int(m["id"]))
            if r is not None:
                r.ext["outoforder"] = float(m["n"])
            continue
        m = REPORT.match(line)
        if m is None or m["id"].startswith("FD") or m["id"].startswith("SUM-"):
            continue  # headers, a full-duplex stream's two ways ([FD1]), connect times
        if m["id"] == "SUM":
            sums.append(Row(0, 0, -1, float(m["a"]), float(m["b"]), int(round(float(m["x"]) * _BYTES[m["xu"]])), _rate(m)))
            continue
        sid = int(m["id"])
        conn = conns.get(sid)
        if conn is None:
            unplaced += 1
            continue
        ext, writer = _extras(m["rest"])
        is_relay = sid in relay
        if is_relay:
            relay.discard(sid)
            sends = True  # the server's view of what this (client) side sent
            ext["relay"] = 1.0
        elif writer is not None:
            sends = writer
        else:
            sends = not conn.accepted
            if conn.reverse:
                sends = not sends
            if conn.full_duplex and m["star"]:
                sends = not sends
        src, dst = (conn.local, conn.peer) if sends else (conn.peer, conn.local)
        nbytes = int(round(float(m["x"]) * _BYTES[m["xu"]]))
        bps = _rate(m)
        # The direction, from who sends: the test's client sends client->server. The ports
        # cannot tell it for -d without -L, whose connection back goes to the client's
        # listener on the server's port number (src ephemeral, dst the server's port, like
        # the forward connection).
        way = "c2s" if sends == (role == "client") else "s2c"
        row = Row(src, dst, sid, float(m["a"]), float(m["b"]), nbytes, bps, ext, direction=way if role else "")
        rows.append(row)
        last[sid] = row
        ways.add(sends)
    if len(ways) == 1 and not any(c.full_duplex for c in conns.values()):
        rows += sums  # iperf2's own totals, when this side's streams all go one way
    return rows, unplaced
