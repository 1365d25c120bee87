"""`nettune import`: old iperf3/iperf2 logs (JSON, CSV, text) and hand-made tables become
runs of a study, so results taken by hand get the same statistics, verdicts and charts.

Each test is one run (a member's `split` cuts a file holding several); its point is the
--set values, then what --param-from-name finds in the file's name (params.py), then what
--param-from-header finds in the lines before the test. The first member of the importer
family (importers.base) whose `detect` recognises a file reads it (a table only when the
user names its columns), through the same parsers as live tests where there is one
(engines.iperf3 / engines.iperf2), and the test's text is kept verbatim as the run's raw
output. Every file is read and checked before the
database is opened: a file that cannot be read, is not text, or is a cut-off report is
rejected with its reason on one line and the others are still imported; when no file
is usable nothing is created. Importing again under the same study name adds to that
imported study (a new point for new --set values), so a sweep can be assembled from
several directories of logs.
"""
from __future__ import annotations

import json
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..engines.result import TestResult
from ..errors import NettuneError
from ..studyfile.load import read_bytes
from ..studyfile.models import Workload
from ..store.base import ResultStore
from ..store.locate import is_url, store_at
from .base import WORKLOAD_HINTS, Importer, importers
from ..record.fields import FIELDS
from .decode import text_of, unpack
from .params import from_header, from_name, parse_value

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_BYTES = 64 * 1024 * 1024  # a log bigger than this is not an iperf report


class ImportTarget(BaseModel):
    kind: Literal["import"] = "import"


class ImportedStudy(BaseModel):
    """What begin_study stores as spec_json for an imported study."""

    name: str
    description: str = ""
    target: ImportTarget = Field(default_factory=ImportTarget)
    sweep: dict[str, list[Any]] = Field(default_factory=dict)


@dataclass
class FileOutcome:
    path: str
    ok: bool
    message: str  # "run 3 at queues=8" or why it was rejected
    run_id: int | None = None
    warnings: list[str] = field(default_factory=list)  # what the import had to assume or leave out


@dataclass
class ImportOutcome:
    study_id: int
    study: str
    files: list[FileOutcome] = field(default_factory=list)

    @property
    def imported(self) -> int:
        return sum(1 for f in self.files if f.ok)

    @property
    def rejected(self) -> list[FileOutcome]:
        return [f for f in self.files if not f.ok]


def parse_sets(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            k, sep, v = part.partition("=")
            if not sep or not k.strip():
                raise NettuneError(f"--set {item!r}: write KEY=VAL (e.g. --set parallel=8,mtu=9000)")
            out[k.strip()] = parse_value(v)
    return out


def check_args(study: str, params: dict[str, Any]) -> None:
    """The --study name and the --set values that guide the parser, checked once up front."""
    if not NAME.match(study):
        raise NettuneError(f"--study {study!r}: use letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)")
    try:
        Workload.model_validate({k: params[k] for k in WORKLOAD_HINTS if k in params})
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"] if x in WORKLOAD_HINTS) or ", ".join(k for k in WORKLOAD_HINTS if k in params)
        raise NettuneError(f"--set {where}: {err['msg'].removeprefix('Value error, ')}") from None


Read = tuple[str, "TestResult | None", str, dict[str, Any]]  # (source, result, why not, point parameters)


def read_file(path: Path, hints: dict[str, Any]) -> TestResult:
    """Parse a file holding one test into a result; NettuneError (one line) if it is not usable."""
    runs = read_runs(path, hints)
    if len(runs) != 1:
        raise NettuneError(f"{path}: {len(runs)} tests in one file")
    _, res, why, _ = runs[0]
    if res is None:
        raise NettuneError(why)
    return res


def _load(path: Path) -> tuple[str, list[str]]:
    """The file's text and what was done to read it (unpacked, UTF-16): notes for its runs."""
    try:
        if stat.S_ISDIR(path.stat().st_mode):
            raise NettuneError(f"{path}: is a directory; give the files (e.g. {path}/*.json)")
        data = read_bytes(path, MAX_BYTES + 1)  # bounded, and a named pipe cannot block
    except FileNotFoundError:
        raise NettuneError(f"{path}: no such file") from None
    except OSError as e:
        raise NettuneError(f"{path}: cannot read ({e.strerror})") from None
    if len(data) > MAX_BYTES:
        raise NettuneError(f"{path}: larger than {MAX_BYTES >> 20} MiB, not an iperf report")
    data, packed = unpack(path, data, MAX_BYTES)
    text, notes = text_of(path, data)
    if packed:
        notes.insert(0, f"read from the {packed} file")
    if not text.strip():
        raise NettuneError(f"{path}: empty file" + (f" (once unpacked from {packed})" if packed else ""))
    return text, notes


def read_runs(path: Path, params: dict[str, Any], name_rules: list[re.Pattern[str]] | None = None,
              header_rules: list[re.Pattern[str]] | None = None, member: Importer | None = None) -> list[Read]:
    """Every test in one file with its point parameters (--set, then the file's name, then
    the lines before the test); NettuneError (one line) when the file itself is unusable.
    A test that cannot be read is (source, None, reason, params)."""
    text, notes = _load(path)
    members = importers()
    if member is None:
        member = next((m for m in members if m.auto and m.detect(text)), None)
    if member is None:
        raise NettuneError(f"{path}: neither {' nor '.join(m.describes for m in members if m.auto)} output" + _hint(text))
    base = params | from_name(path, name_rules or [])
    pieces = member.split(text)
    out: list[Read] = []
    for n, (header, body) in enumerate(pieces, 1):
        where = path if len(pieces) == 1 else Path(f"{path} (test {n} of {len(pieces)})")
        point = base
        try:
            point = base | member.point(body) | (from_header(path, n, header, body, header_rules) if header_rules else {})
            res = member.read(where, body, point)
            if not res.ok:
                raise NettuneError(f"{where}: {res.error}")
            if member.logs:
                if res.receiver_bps is None:
                    raise NettuneError(f"{where}: no throughput in this report")
                _check_streams(where, res, point)
                res.warnings += _zero_receiver(res)
            res.warnings[:0] = notes
            out.append((str(where), res, "", point))
        except NettuneError as e:
            out.append((str(where), None, str(e), point))
    return out


def _zero_receiver(res: TestResult) -> list[str]:
    """A receiver that reports nothing while its sender sent data: the receiver's numbers
    are missing (iperf3 prints 0 when the server's counts did not come back), not zero."""
    if res.receiver_bytes == 0 or res.receiver_bps == 0:
        sent = f" while the sender sent {res.sender_bytes} bytes" if res.sender_bytes else ""
        return [f"the receiver reports 0 bytes{sent}: its numbers are missing from this report, not a measured zero; "
                "throughput 0 is what is stored"]
    return []


def _hint(text: str) -> str:
    """A file that is a table made by hand says how to import it."""
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    cols = [c.strip() for c in first.split(",")]
    if len(cols) >= 2 and not any(c.replace(".", "").isdigit() for c in cols):
        return (f" (line 1 is a table header: {', '.join(cols[:8])}; import a table with --columns {','.join(cols[:8])} "
                "and METRIC after each measured column, e.g. gbps=receiver_gbps; see docs/importing.md)")
    return ""


def _check_streams(path: Path, res: TestResult, hints: dict[str, Any]) -> None:
    """With --set parallel=N, a report with fewer streams was cut off (or N is wrong)."""
    want = hints.get("parallel")
    if not isinstance(want, int) or isinstance(want, bool) or res.engine == "iperf3" and want > 128:  # iperf3 clips -P at 128
        return
    for direction in ("forward", "reverse") if hints.get("bidir") is True else ("forward",):
        have = sum(1 for st in res.streams if st.direction == direction)
        if have != want:
            raise NettuneError(f"{path}: {have} {direction} stream(s) in the report but --set parallel={want}; is the file cut off, or is --set wrong?")


def read_files(files: list[Path], params: dict[str, Any], name_rules: list[re.Pattern[str]] | None = None,
               header_rules: list[re.Pattern[str]] | None = None, member: Importer | None = None) -> list[Read]:
    """Every test of every file: (source, result, "", params) for each usable one, and for
    each file with unusable tests one (FILE, None, "FILE: reason", params): one line per
    file, however many tests it holds (docs/results.md)."""
    results: list[Read] = []
    seen: dict[str, str] = {}  # iperf3's cookie of each test read -> where
    for f in files:
        try:
            runs = [_once(r, seen) for r in read_runs(f, params, name_rules, header_rules, member)]
        except NettuneError as e:
            results.append((str(f), None, str(e), params))
            continue
        results += [r for r in runs if r[1] is not None]
        bad = [r for r in runs if r[1] is None]
        if len(runs) == 1 or not bad:
            results += bad
            continue
        results.append((str(f), None, _failed_tests(f, runs, bad), params))
    return results


def _once(read: Read, seen: dict[str, str]) -> Read:
    """A test already read (the same iperf3 cookie: a log written twice, or kept in two
    files) is refused, so no run is counted twice."""
    src, res, why, point = read
    cookie = res.tool.iperf3_cookie if res is not None else None
    if not isinstance(cookie, str):
        return read
    if cookie in seen:
        return src, None, f"{src}: the same test as {seen[cookie]} (iperf3 cookie {cookie}); not imported twice", point
    seen[cookie] = src
    return read


def _failed_tests(path: Path, runs: list[Read], bad: list[Read]) -> str:
    """One line for the unusable tests of a file holding several: how many, and why."""
    reasons: dict[str, list[int]] = {}
    for n, (src, res, why, _) in enumerate(runs, 1):
        if res is None:
            reasons.setdefault(why.removeprefix(f"{src}: "), []).append(n)
    shown = "; ".join(f"test{'s' if len(ns) > 1 else ''} {_numbers(ns)}: {why}" for why, ns in list(reasons.items())[:3])
    more = f"; {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    what = f"none of its {len(runs)} tests is usable" if len(bad) == len(runs) else f"{len(bad)} of its {len(runs)} tests not imported"
    return f"{path}: {what}: {shown}{more}"


def _numbers(ns: list[int]) -> str:
    return ", ".join(map(str, ns)) if len(ns) <= 4 else f"{ns[0]}, {ns[1]}, ... {ns[-1]} ({len(ns)} tests)"


def import_files(store: ResultStore, files: list[Path], study: str, params: dict[str, Any], description: str = "",
                 name_rules: list[re.Pattern[str]] | None = None, header_rules: list[re.Pattern[str]] | None = None,
                 member: Importer | None = None) -> ImportOutcome:
    """Read every file, then store the usable tests (NettuneError when there is none)."""
    check_args(study, params)
    if not files:
        raise NettuneError("give at least one file to import")
    results = read_files(files, params, name_rules, header_rules, member)
    if not any(r is not None for _, r, _, _ in results):
        raise NettuneError("nothing imported: " + "; ".join(msg for _, _, msg, _ in results))
    return store_files(store, results, study, description)


@contextmanager
def import_store(db: str | Path) -> Iterator[ResultStore]:
    """The database to import into, created if needed, the whole import in one transaction:
    a failed import adds nothing to it (on PostgreSQL and SQLite alike), and when it created
    a SQLite file, the file goes again with its -wal/-shm/-journal files beside it: a failed
    import leaves no database behind (an existing one is kept)."""
    path = Path(str(db))
    existed = is_url(db) or path.exists()
    try:
        with store_at(db) as store, store.transaction():
            yield store
    except BaseException:
        if not existed:
            for f in (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))):
                f.unlink(missing_ok=True)
        raise


def store_files(store: ResultStore, results: list[Read], study: str, description: str = "") -> ImportOutcome:
    """Add the read tests as runs of the imported study `study` (created if needed), each
    at the point of its parameters."""
    out: ImportOutcome | None = None
    for source, res, msg, params in results:
        if res is None:
            if out is not None:
                out.files.append(FileOutcome(source, False, msg))
            continue
        sid, point_id, run = _study_and_point(store, study, params, description)
        out = out or ImportOutcome(sid, study)
        run_id = store.add_run(sid, point_id, run, False, res, {"imported_from": source})
        where = ", ".join(f"{k}={v}" for k, v in params.items()) or "the single point"
        out.files.append(FileOutcome(source, True, f"run {run} at {where}: {measured(res)}", run_id, list(res.warnings)))
    if out is None:
        raise NettuneError("nothing imported: " + "; ".join(msg for _, _, msg, _ in results))
    # rejected ones read before the first usable one
    out.files = [FileOutcome(src, False, msg) for src, res, msg, _ in results[: next(i for i, r in enumerate(results) if r[1] is not None)]] + out.files
    _log_files(store, out.study_id, [x for x in out.files if x.ok])
    store.finish_study(out.study_id, "imported")
    return out


def measured(res: TestResult) -> str:
    """What an imported run measured, for the line that reports it."""
    if res.total_bps is not None:
        return f"{res.total_bps / 1e9:.2f} Gbit/s"
    held = {f.name: v for f in FIELDS.values() if f.stored and f.type in (int, float) and (v := f.of_result(res)) is not None}
    return ", ".join(f"{k}={v:g}" for k, v in held.items()) or "no throughput"


def _study_and_point(store: ResultStore, name: str, params: dict[str, Any], description: str) -> tuple[int, int, int]:
    """The imported study to add to (created if needed), the point for `params`, the next run number."""
    row = next(iter(store.named(name)), None)
    if row is not None and row["status"] != "imported":
        raise NettuneError(f"study {name!r} was run by nettune (status {row['status']}); import under another --study name")
    if row is None:
        spec = ImportedStudy(name=name, description=description or "imported iperf results")
        sid = store.begin_study(spec, _header(), None, status="imported")
    else:
        sid = int(row["id"])
    points = store.points(sid)
    match = next((p for p in points if p["point"] == params), None)
    if match is None:
        pid = store.add_point(sid, max((p["idx"] for p in points), default=-1) + 1, params)
        next_run = 0
    else:
        pid = match["id"]
        last = store.last_run(pid)
        next_run = 0 if last is None else last + 1
    _update_sweep(store, sid)
    return sid, pid, next_run


def _update_sweep(store: ResultStore, sid: int) -> None:
    """Keep spec_json's [sweep] listing every value imported, so the analysis sees the axes."""
    spec = json.loads(store.find_study(sid)["spec_json"])
    sweep: dict[str, list[Any]] = {}
    for p in store.points(sid):
        for k, v in p["point"].items():
            if v not in sweep.setdefault(k, []):
                sweep[k].append(v)
    spec["sweep"] = sweep
    store.update_study(sid, spec_json=json.dumps(spec))


def _header() -> str:
    return "# Imported with `nettune import`: no study file; each run came from one log file.\n"


def _log_files(store: ResultStore, sid: int, files: list[FileOutcome]) -> None:
    """Append the imported files to spec_text, the record of where the runs came from."""
    text = store.find_study(sid)["spec_text"]
    stamp = time.strftime("%Y-%m-%d %H:%M")
    lines = [f"# {stamp}: {f.path} -> {f.message}" for f in files]
    store.update_study(sid, spec_text=(text or _header()) + "\n".join(lines) + "\n")
