"""The rows of an iperf2 `-y C` file, sorted out before the engine's parser reads them:
which port is the server's, which rows are a receiver's report of a stream whose sender
rows are also there, which tests a file holds, and whether a report was cut off.

What the real files look like (tests/fixtures/iperf2/real, SOURCES.md; and 2.1.8 here):
- 2.0.x writes each row local address first; 2.1.8 writes the sender first and stamps a
  server's final rows 19700101000000. A 2.0.x UDP client prints its own 9-field rows, then
  the server's report relayed to it: one 14-field row with the server's address first
  (jitter, lost/total datagrams). That row is the receiver's report of the same stream,
  not a second direction.
- `-d` (dual test): the server connects back to the client's listener; those rows touch
  neither end of the server's port.
- a server's log holds every client it served: each client address (and, where the rows
  carry real time stamps, each stretch of time) is one test.
"""
from __future__ import annotations

import calendar
import re
import time
from collections import Counter
from dataclasses import dataclass, field

TIMESTAMP = re.compile(r"\d{8,}(\.\d+)?")  # the first field of every iperf2 CSV data row
SERVER_STAMP = "19700101"  # 2.1.8's server does not read its clock for its final rows
EPHEMERAL = (32768, 60999)  # Linux's default ip_local_port_range: clients' ports
SLACK = 2.0  # seconds: two connections this close in time belong to one test


@dataclass
class CsvRow:
    line: str  # as written (no newline)
    f: list[str]

    @property
    def ports(self) -> tuple[int, int]:
        return as_int(self.f[2]), as_int(self.f[4])

    @property
    def addrs(self) -> tuple[str, str]:
        return self.f[1].strip(), self.f[3].strip()

    @property
    def span(self) -> tuple[float, float]:
        a, _, b = self.f[6].partition("-")
        try:
            return float(a), float(b or self.f[7])
        except ValueError:
            return 0.0, 0.0

    @property
    def server_stamp(self) -> bool:
        return self.f[0].strip().startswith(SERVER_STAMP)

    def datagrams(self) -> float | None:
        """A UDP report's total datagrams (-1: a client's suppressed relay); None: no UDP columns."""
        if len(self.f) < 14:
            return None
        try:
            return float(self.f[11])
        except ValueError:
            return None

    def swapped(self) -> "CsvRow":
        """The same report written with its two ends the other way round."""
        g = list(self.f)
        g[1], g[2], g[3], g[4] = self.f[3], self.f[4], self.f[1], self.f[2]
        return CsvRow(",".join(g), g)


@dataclass
class Layout:
    """One test's rows as the engine's parser wants them: each side's own, sender first."""

    client: list[CsvRow] = field(default_factory=list)
    server: list[CsvRow] = field(default_factory=list)  # receivers' reports: 2.1.8's server rows, relayed UDP reports
    port: int | None = None  # the server's
    both: bool = False  # two directions (--full-duplex, -d)
    relayed: int = 0  # receiver reports found beside their stream's sender rows


def own_header(f: list[str]) -> bool:
    return f[0].strip().lower() == "time"  # 2.2's header row


def data_rows(text: str) -> list[CsvRow]:
    """The report rows (not 2.2's header rows, not a header line a user put first)."""
    rows = [CsvRow(ln.rstrip("\r"), [x.strip() for x in ln.rstrip("\r").split(",")]) for ln in text.splitlines() if ln.count(",") >= 7]
    rows = [r for r in rows if not own_header(r.f)]
    if rows and not TIMESTAMP.fullmatch(rows[0].f[0]):
        rows = rows[1:]
    return rows


def server_port(rows: list[CsvRow]) -> int | None:
    """The port every connection to the server has at one end: the one in the most
    connections (a -d connection back to the client's listener has its own two). With one
    connection, the one outside Linux's ephemeral range (where clients' ports come from),
    else the first row's second port (2.1.8 writes the sender, a 2.0.x client itself, first)."""
    pairs = {frozenset(p for p in r.ports if p) for r in rows if as_int(r.f[5]) >= 0}
    seen = Counter(p for pair in pairs for p in pair)
    if not seen:
        return None
    best = max(seen.values())
    tied = {p for p, n in seen.items() if n == best}
    if best > 1 and len(tied) == 1:
        return tied.pop()
    if best > 1:  # -d with -P: the server's port and the client's listener, as many connections each;
        # the connection iperf2 numbered first is the client's own to the server
        first = min((r for r in rows if as_int(r.f[5]) >= 0 and tied & set(r.ports)), key=lambda r: as_int(r.f[5]))
        return min(tied & set(first.ports))
    first = next(r.ports for r in rows if as_int(r.f[5]) >= 0 and all(r.ports)) if any(all(r.ports) for r in rows) else rows[0].ports
    fixed = [p for p in first if not EPHEMERAL[0] <= p <= EPHEMERAL[1]]
    return fixed[0] if len(fixed) == 1 else first[1]


def layout(rows: list[CsvRow], udp: bool) -> Layout:
    out = Layout(port=server_port(rows))
    # only 2.0.x relays the server's report, after its own 9-field rows; beside 2.1.8's
    # sender rows (datagrams -1) a row the other way round is --full-duplex's other direction
    senders = {frozenset(r.ports): r for r in rows if udp and not r.server_stamp and r.datagrams() is None}
    for r in rows:
        mate = senders.get(frozenset(r.ports)) if udp and not _sender_report(r) else None
        if mate is not None and r.ports != mate.ports:
            # a receiver's report written the other way round: the server's, relayed to the
            # client (2.0.x), of the stream whose sender rows are beside it
            out.server.append(r.swapped())
            out.relayed += 1
        elif r.server_stamp:
            out.server.append(r)
        else:
            out.client.append(r)
    out.both = two_way(out.client) or two_way(out.server)
    return out


def _sender_report(r: CsvRow) -> bool:
    """A UDP row of the sending side: no UDP columns (2.0.x's client) or datagrams -1 (2.1.8's)."""
    d = r.datagrams()
    return d is None or d < 0


def two_way(rows: list[CsvRow]) -> bool:
    """One side's rows show both directions: --full-duplex (a port that is a source in some
    rows and a destination in others, or 2.1.8's "::,0" receive rows) or -d (two listening
    ports whose connections share no port)."""
    pairs = [r.ports for r in rows if as_int(r.f[5]) >= 0]
    if not pairs:
        return False
    srcs, dsts = {a for a, _ in pairs}, {b for _, b in pairs if b}
    if (srcs & dsts) - {0} or any(b == 0 for _, b in pairs):
        return True
    return len(dsts) >= 2 and len(srcs) >= 2


def tests(rows: list[CsvRow]) -> list[list[CsvRow]]:
    """The rows of each test in a file: a server's log of several client addresses is one
    test per address, and rows with real time stamps split where the connections do not
    overlap in time (a log appended to test after test). Connections from one address at
    the same time stay one test: iperf2's CSV does not tell -P streams from clients."""
    port = server_port(rows)
    conns: dict[frozenset[int], list[CsvRow]] = {}
    for r in rows:
        conns.setdefault(frozenset(r.ports), []).append(r)
    groups: list[tuple[str, float, float, list[CsvRow]]] = []  # (peer address, from, to, rows)
    back: list[list[CsvRow]] = []
    for pair, rs in conns.items():
        if port is not None and port not in pair or 0 in pair or len(pair) < 2:
            back.append(rs)  # -d's connection back, 2.1.8's "::,0" receive rows: go with their test below
            continue
        peer = next((a for r in rs for a, p in zip(r.addrs, r.ports) if p != port), "")
        t0, t1 = _when(rs)
        groups.append((peer, t0, t1, rs))
    merged: list[tuple[str, float, float, list[CsvRow]]] = []
    for g in sorted(groups, key=lambda g: (g[0], g[1])):
        last = merged[-1] if merged else None
        if last and last[0] == g[0] and (g[1] <= last[2] + SLACK or g[1] != g[1]):
            merged[-1] = (last[0], last[1], max(last[2], g[2]), last[3] + g[3])
        else:
            merged.append(g)
    for rs in back:  # with the test of the same client address at the same time
        t0, _ = _when(rs)
        addrs = {a for r in rs for a in r.addrs}
        home = next((m for m in merged if m[0] in addrs and (t0 != t0 or m[1] - SLACK <= t0 <= m[2] + SLACK)), merged[0] if merged else None)
        if home is None:
            merged.append(("", t0, t0, rs))
        else:
            home[3].extend(rs)
    order = {id(r): n for n, r in enumerate(rows)}
    return [sorted(m[3], key=lambda r: order[id(r)]) for m in sorted(merged, key=lambda m: min(order[id(r)] for r in m[3]))]


def one_after_the_other(rows: list[CsvRow], port: int | None) -> bool:
    """-r (tradeoff): the connection back to the client started once the client's own had
    ended, by the rows' time stamps (False when they are not real)."""
    fwd = [r for r in rows if port in r.ports]
    back = [r for r in rows if port not in r.ports and 0 not in r.ports]
    if not fwd or not back:
        return False
    (_, f1), (b0, _) = _when(fwd), _when(back)
    return b0 == b0 and f1 == f1 and b0 >= f1 - 0.5


def _when(rs: list[CsvRow]) -> tuple[float, float]:
    """When a connection ran, by its rows' time stamps (NaN when they are not real: 2.1.8's
    server rows, or stamps that do not read as a date)."""
    ends = [_epoch(r.f[0]) for r in rs]
    ends = [t for t in ends if t == t]
    if not ends:
        return float("nan"), float("nan")
    longest = max((r.span[1] - r.span[0] for r in rs), default=0.0)
    return max(ends) - longest, max(ends)


def _epoch(stamp: str) -> float:
    if stamp.startswith(SERVER_STAMP):
        return float("nan")
    head, _, frac = stamp.partition(".")
    try:
        t = calendar.timegm(time.strptime(head[:14], "%Y%m%d%H%M%S"))
    except ValueError:
        return float("nan")
    return t + (float("0." + frac) if frac.isdigit() else 0.0)


def as_int(x: str) -> int:
    try:
        return int(x.strip())
    except ValueError:
        return -1
