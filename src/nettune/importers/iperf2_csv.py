"""iperf2 `-y C` outputs (2.0.x and 2.1.x rows, 2.2.x with a header row): one side's
report, both sides' rows in one file, a UDP client's rows with the server's relayed
report, a server's log of several clients (one test each). iperf2_csv_rows.py sorts the
rows out; the engine's parser (engines.iperf2) reads them, as for a live test."""
from __future__ import annotations

from pathlib import Path

from ..engines.iperf2 import Iperf2Engine, parse_rows
from ..engines.iperf2_reader import Row
from ..engines.result import TestResult
from ..errors import NettuneError
from ..studyfile.models import Workload
from .base import Hints, ImporterBase, side, workload
from .iperf2_csv_rows import TIMESTAMP, CsvRow, as_int, data_rows, layout, one_after_the_other, own_header, tests
from .one_side import SEQUENTIAL, one_side


def _user_header(text: str) -> str:
    """The first line, when it is a header a user added (not iperf2's own)."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    f = first.split(",")
    return first if len(f) >= 8 and not own_header(f) and not TIMESTAMP.fullmatch(f[0].strip()) else ""


class Iperf2CsvImporter(ImporterBase):
    name = "iperf2-csv"
    describes = "iperf2 CSV (-y C)"

    def detect(self, text: str) -> bool:
        data = data_rows(text)
        return bool(data) and all(TIMESTAMP.fullmatch(r.f[0]) for r in data[:3])

    def split(self, text: str) -> list[tuple[str, str]]:
        """A server's log of several clients (or a log appended to test after test): one
        test each, with the file's header lines (a user's, 2.2's) in front of each."""
        rows = data_rows(text)
        groups = tests(rows)
        if len(groups) <= 1:
            return [("", text)]
        head = "".join(ln + "\n" for ln in text.splitlines() if ln.count(",") >= 7 and (own_header(ln.split(",")) or ln == _user_header(text)))
        return [("", head + "".join(r.line + "\n" for r in g)) for g in groups]

    def read(self, path: Path, text: str, hints: Hints) -> TestResult:
        rows = data_rows(text)
        header = next((ln.split(",") for ln in text.splitlines() if ln.count(",") >= 7 and own_header(ln.split(","))), None)
        # the protocol from every row, not the first: UDP rows have 14 (2.x) or 17 fields
        udp = any("jitter" in x.lower() for x in header) if header else any(len(r.f) in (14, 17) for r in rows)
        user = _user_header(text)
        if not text.rstrip(" \t").endswith("\n"):
            raise NettuneError(f"{path}: cut off: the last line has no newline at its end (if the file is complete, add one)")
        lay = layout(rows, udp)
        head = "".join(ln + "\n" for ln in text.splitlines() if ln.count(",") >= 7 and own_header(ln.split(",")))
        cli = head + "".join(r.line + "\n" for r in lay.client)
        srv = head + "".join(r.line + "\n" for r in lay.server)
        for part in (cli, srv):
            _check_side(path, part, udp, hints)
        parsed, _ = parse_rows(text, udp)
        end = max((r.end for r in parsed), default=0.0)
        wl = workload(path, "iperf2", hints, protocol="udp" if udp else None, bidir=True if lay.both else None, port=lay.port,
                      duration=max(1, round(end)) if end else None)
        eng = Iperf2Engine()
        if lay.client and lay.server:  # both sides' rows: each side's numbers from its own rows
            res = eng.parse(wl, side(path, cli), side(path, srv, role="server"))
        else:
            res = _one_side(path, eng, wl, cli or srv, udp, lay.client or lay.server)
        if lay.both and one_after_the_other(rows, lay.port):
            res.warnings.append(SEQUENTIAL)
        if lay.relayed:
            res.warnings.append(f"{lay.relayed} receiver report(s) relayed to the client (the server's): its numbers are the receiver's")
        if user:
            res.warnings.append(f"line 1 ({user[:60]!r}) is not an iperf2 row: read as a header and left out")
        if end:
            res.duration = float(end)  # what the report covers, not the workload's default
        res.client, res.server = side(path, text), None
        return res


def _one_side(path: Path, eng: Iperf2Engine, wl: Workload, text: str, udp: bool, rows: list[CsvRow]) -> TestResult:
    """One side's report only (the usual case for old logs). TCP delivers what was sent,
    so its rows stand for both sender and receiver, and the run says so. A UDP receiver's
    rows (jitter, loss) leave the sender's rate unknown; a UDP sender's rows alone have no
    receiver's numbers at all, and are refused."""
    last = {(r.ports, r.f[5]): r for r in rows if as_int(r.f[5]) >= 0}  # each stream's final row is its last
    if udp and all(_sender(r) for r in last.values()):
        raise NettuneError(f"{path}: a UDP sender's report only (iperf2's client CSV leaves out the server's report): the "
                           "receiver's rate, loss and jitter are not in it; import the server's output (or both in one file)")
    res = eng.parse(wl, side(path, text), side(path, "", role="server"))
    if not res.ok and res.sender_bps is not None or not res.ok and udp:
        res = eng.parse(wl, side(path, text), side(path, text, role="server"))
        if res.ok:
            one_side(res, udp, path)
    return res


def _sender(r: CsvRow) -> bool:
    d = r.datagrams()
    return d is None or d < 0


def _check_side(path: Path, text: str, udp: bool, hints: Hints) -> None:
    """A side's report cut off at a line's end: a stream's interval rows without a final
    row after them, streams with different numbers of rows, or (with --set duration) a
    report too short. Receiver reports relayed to a client are final rows only: their
    side is checked on its own."""
    rows, _ = parse_rows(text, udp)
    if not rows:
        return  # the parser says what is wrong
    end = max(r.end for r in rows)
    own: dict[tuple[int, int, int], list[Row]] = {}
    for r in rows:  # a stream is one socket's rows
        own.setdefault((r.src_port, r.dst_port, r.tid), []).append(r)
    # its final row runs from 0 to its own end: a stream whose last write finished late
    # prints a "2.0-3.0" row and a "0.0-3.0" final while the others end at 2.0 (2.1.8 -P)
    finals = {k: max((r for r in rs if r.start < 0.05 and r.end >= max(x.end for x in rs) - 0.5), key=lambda r: r.end, default=None)
              for k, rs in own.items()}
    unfinished = sum(1 for f in finals.values() if f is None)
    if unfinished:
        raise NettuneError(f"{path}: cut off: {unfinished} stream(s) have interval rows but no final report")
    common = min(f.end for f in finals.values() if f is not None) + 0.5
    # every stream of a whole report has one interval row per interval of the test's common part
    counts = {k: sum(1 for r in rs if r is not finals[k] and r.end <= common) for k, rs in own.items()}
    if len(set(counts.values())) > 1:
        raise NettuneError(f"{path}: cut off: its streams have {min(counts.values())} to {max(counts.values())} interval rows, a whole report has as many for each")
    want = hints.get("duration")
    if isinstance(want, (int, float)) and not isinstance(want, bool) and end < 0.75 * want:
        raise NettuneError(f"{path}: the report covers {end:g}s but --set duration={want}; is the file cut off, or is --set wrong?")


IMPORTER = Iperf2CsvImporter()
