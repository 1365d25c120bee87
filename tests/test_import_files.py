"""Issue 37: never a silently wrong number from `nettune import`.

Each listed defect on a file of its format (the real tools' outputs captured here by
tests/fixtures/capture_import.py, real files from public repositories in
tests/fixtures/import_real/SOURCES.md, or a small file written from the tools' documented
output), and the corpus: every file's numbers against ones computed from the file by the
small readers below, which share no code with nettune's parsers; every refusal one line
naming the file.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path

import pytest

from nettune.analysis.data import load
from nettune.analysis.metric import primary
from nettune.errors import NettuneError
from nettune.importers import import_files, read_files
from nettune.importers.intake import read_runs
from nettune.importers.table_csv import table_importer
from nettune.store.writer import StoreWriter

from fixtures_util import FIXTURES

I3, I2, REAL = FIXTURES / "iperf3", FIXTURES / "iperf2", FIXTURES / "import_real"


def one(path: Path, hints: dict | None = None):
    runs = read_files([path], hints or {})
    assert len(runs) == 1 and runs[0][1] is not None, runs[0][2]
    return runs[0][1]


def refusal(path: Path, hints: dict | None = None) -> str:
    [(src, res, why, _)] = read_files([path], hints or {})
    assert res is None and "\n" not in why and why.startswith(str(path)), why
    return why


# --- independent readers ------------------------------------------------------------------

def csv_finals(path: Path) -> list[list[str]]:
    """iperf2 -y C rows that cover a whole stream: starting at 0 and ending at the file's last end."""
    rows = [r for r in csv.reader(io.StringIO(path.read_text())) if len(r) >= 9 and r[0].strip().isdigit()]
    ends = [float(r[6].split("-")[1]) for r in rows]
    whole = {(r[1], r[2], r[3], r[4], r[5]): r for r, e in zip(rows, ends) if float(r[6].split("-")[0]) == 0 and e >= max(ends) - 0.5}
    return list(whole.values())  # a short test prints its only interval row and its final row alike: the last counts


def json_docs(path: Path) -> list[dict]:
    text = path.read_text()
    dec, out, i = json.JSONDecoder(), [], text.find("{")
    while i >= 0:
        doc, end = dec.raw_decode(text, i)
        out.append(doc)
        i = text.find("{", end)
    return out


UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}


def text_rate(line: str) -> float:
    m = re.search(r"([\d.]+) ([KMG]?)bits/sec", line)
    assert m, line
    return float(m[1]) * UNIT[m[2]]


# --- the defects ---------------------------------------------------------------------------

# iperf 2.0.x's UDP client with -y C: its own 9-field row, then the server's report relayed
# to it (14 fields, the server's address first), as iperf 2.0.5's ReportCSV writes them
UDP_CLIENT_RELAY = ("20090226144426,10.10.10.68,48338,10.10.10.65,5001,3,0.0-10.0,1252440,999996\n"
                    "20090226144426,10.10.10.65,5001,10.10.10.68,48338,3,0.0-10.0,1252440,999986,0.004,3,852,0.352,0\n")


def test_iperf2_udp_client_csv_with_the_relayed_server_report_is_one_direction(tmp_path):
    """Was a second, reverse direction, receiver = sender, no jitter or loss, total of both
    and a false "one side's report only" warning."""
    f = tmp_path / "udp_client.csv"
    f.write_text(UDP_CLIENT_RELAY)
    res = one(f)
    assert res.protocol == "udp" and [s.direction for s in res.streams] == ["forward"]
    assert (res.sender_bps, res.receiver_bps, res.jitter_ms, res.lost_packets, res.packets) == (999996, 999986, 0.004, 3, 852)
    assert res.total_bps == 999986 and res.reverse_receiver_bps is None
    assert not any("one side's" in w for w in res.warnings)


def test_iperf2_dual_test_csv_is_two_directions_never_summed():
    """A real 2.0.x -d UDP client log (with a header a user added, and the relayed server
    report last) was refused as cut off ("streams have 1 to 61 rows")."""
    path = REAL / "ran-load-generator" / "iperf2.0-udp-dualtest-client.csv"
    res = one(path)
    finals = csv_finals(path)
    send = next(r for r in finals if len(r) == 9)
    relay = next(r for r in finals if r[2] == send[4] and r[4] == send[2])  # the server's address first
    back = next(r for r in finals if r is not relay and len(r) == 14)
    assert res.sender_bps == float(send[8]) and res.receiver_bps == float(relay[8]) and res.jitter_ms == float(relay[9])
    assert (res.lost_packets, res.packets) == (int(relay[10]), int(relay[11]))
    assert res.reverse_receiver_bps == float(back[8]) and res.reverse_sender_bps is None  # the server's sending side is not in a client log
    assert sorted(s.direction for s in res.streams) == ["forward", "reverse"]
    assert res.total_bps == float(relay[8]) + float(back[8])


def test_several_udp_clients_in_one_server_csv_are_one_test_each():
    """Three clients (127.0.0.2, .3, .4) of one real iperf 2.1.8 UDP server at once."""
    path = I2 / "csv_udp_clients" / "server.csv"
    runs = read_files([path], {})
    finals = csv_finals(path)
    assert len(runs) == 3 and all(res is not None for _, res, _, _ in runs)
    by_client = {float(r[8]): r for r in finals}
    for _, res, _, _ in runs:
        row = by_client[res.receiver_bps]
        assert res.sender_bps is None and len(res.streams) == 1 and res.jitter_ms == float(row[9])
    assert sum(res.total_bps for _, res, _, _ in runs) == pytest.approx(sum(float(r[8]) for r in finals))


@pytest.mark.parametrize("path, skipped", [(I3 / "json_warning" / "client.stdout", "warning: UDP block size 65507 exceeds TCP MSS"),
                                           (I3 / "import_cases" / "caret_escape_before_json.json", "^[[F")])
def test_text_before_the_json_is_skipped_and_said(path, skipped):
    res = one(path)
    doc = json_docs(path)[0]
    assert res.sender_bps == pytest.approx(doc["end"]["sum_sent"]["bits_per_second"])
    assert any(w.startswith("skipped 1 line(s) before the JSON") and skipped in w for w in res.warnings)


def test_bom_before_iperf3_text_and_iperf2_report_lines_without_their_banner():
    text = one(I3 / "import_cases" / "bom_text.txt")
    [rcv] = [ln for ln in (I3 / "text_tcp_p4" / "client.stdout").read_text().splitlines() if ln.startswith("[SUM]") and ln.endswith("receiver")]
    assert text.receiver_bps == text_rate(rcv)
    bare = one(I3 / "import_cases" / "iperf2_report_lines.txt")
    [total] = [ln for ln in (I3 / "import_cases" / "iperf2_report_lines.txt").read_text().splitlines() if ln.startswith("[SUM] 0.0000-2")]
    assert bare.engine == "iperf2" and bare.receiver_bps == text_rate(total)
    assert any("without iperf2's banner" in w for w in bare.warnings)


@pytest.mark.parametrize("mode", ["bytes_n", "blocks_k"])
def test_byte_and_block_limited_tests_last_what_the_file_measured(mode):
    path = I3 / mode / "client.stdout"
    doc = json_docs(path)[0]
    assert doc["start"]["test_start"]["duration"] == 0  # no -t: nettune stored the workload's default, 10 s
    assert one(path).duration == doc["end"]["sum_sent"]["seconds"] < 5


def test_receiver_of_zero_bytes_is_warned_and_a_server_log_leaves_the_sender_unknown():
    res = one(REAL / "cloudpilot" / "iperf3.9-n10k-receiver0.json")
    assert res.receiver_bytes == 0 and any("the receiver reports 0 bytes while the sender sent" in w for w in res.warnings)
    srv = one(I3 / "bytes_n" / "server.stdout")
    doc = json_docs(I3 / "bytes_n" / "server.stdout")[0]
    assert srv.sender_bytes is None and srv.sender_bps is None and all(s.sender_bytes is None for s in srv.streams)
    assert srv.receiver_bytes == doc["end"]["sum_received"]["bytes"]


def test_a_json_list_of_results_is_one_line_per_file():
    """24 refused tests in one array were 24 error lines; an array of something else, 24 too."""
    assert "none of its 24 tests is usable: tests 1, 2, ... 24 (24 tests): iperf3: unable to connect" in refusal(I3 / "import_cases" / "refused_array.json")
    assert "a JSON array of 24 elements, 24 of them not iperf3 -J results" in refusal(I3 / "import_cases" / "not_results_array.json")


def test_utf16_and_gzip_are_read_and_other_packings_named(tmp_path):
    want = one(I3 / "tcp_p4" / "client.stdout").receiver_bps
    for name, note in (("utf16.json", "UTF-16 text"), ("tcp_p4.json.gz", "read from the gzip file")):
        [(_, res, why, _)] = read_runs(I3 / "import_cases" / name, {})
        assert res is not None and res.receiver_bps == want and any(note in w for w in res.warnings), why
    (tmp_path / "r.zip").write_bytes(b"PK\x03\x04rest")
    assert "a zip archive (unzip it first)" in refusal(tmp_path / "r.zip")
    (tmp_path / "cut.gz").write_bytes(gzip.compress(b"{}" * 100)[:20])
    assert "a gzip file that cannot be unpacked" in refusal(tmp_path / "cut.gz")


def test_the_same_test_twice_is_imported_once():
    """A real log holding one iperf3 test written twice (and kept in a second file)."""
    path = REAL / "cloudpilot" / "iperf3.9-two-appended.json"
    runs = read_files([REAL / "cloudpilot" / "iperf3.9-t10-omit3.json", path], {})
    assert [r is not None for _, r, _, _ in runs] == [True, False] and "not imported twice" in runs[1][2]


# --- tables ----------------------------------------------------------------------------------

def test_a_table_column_named_like_a_workload_field_is_a_parameter(tmp_path):
    """`parallel` was read as the stream count and every row refused."""
    t = tmp_path / "t.csv"
    t.write_text("parallel,gbps\n1,9.1\n4,9.4\n8,9.3\n")
    with StoreWriter(tmp_path / "r.db") as store:
        out = import_files(store, [t], "hand", {}, member=table_importer("parallel,gbps=receiver_gbps"))
        assert out.imported == 3 and [p.params for p in load(store, "hand").points] == [{"parallel": 1}, {"parallel": 4}, {"parallel": 8}]


def test_a_table_of_a_timed_commands_seconds_and_of_summaries(tmp_path):
    """Durations (a build's seconds) and N/mean/sd per configuration: any run field can be
    a table's measurement (table_metrics.py)."""
    with StoreWriter(tmp_path / "r.db") as store:
        t = tmp_path / "build.csv"
        t.write_text("jobs,seconds\n1,41.2\n1,40.8\n4,12.9\n4,13.1\n")
        import_files(store, [t], "build", {}, member=table_importer("jobs,seconds=wall_s"))
        data = load(store, "build")
        assert primary({r.engine for p in data.points for r in p.runs}).name == "wall"  # analyze compares seconds, lower is better
        assert sorted(r.wall_s for p in data.points for r in p.runs) == [12.9, 13.1, 40.8, 41.2]
        s = tmp_path / "summary.csv"
        s.write_text("kernel,N,mean,sd\n6.1,5,9.41,0.12\n6.8,5,9.62,0.10\n")
        out = import_files(store, [s], "pub", {}, member=table_importer("kernel,N=n,mean=receiver_gbps,sd=sd"))
        runs = store.runs(out.study_id)
        assert [r["receiver_bps"] for r in runs] == [9.41e9, 9.62e9] and runs[0]["extra"]["summary"] == {"n": 5.0, "sd": 0.12, "of": "receiver_gbps"}
        assert any("a summary row (N=5, sd=0.12)" in w for w in runs[0]["warnings"])
        from nettune.importers.table_metrics import table_metrics

        assert {"wall_s", "cpu_s", "peak_rss_kb", "duration", "receiver_bps", "jitter_ms", "meter_w"} <= set(table_metrics())
        with pytest.raises(NettuneError, match="a summary table .* has one measured column"):
            table_importer("kernel,N=n,a=receiver_gbps,b=wall_s")


# --- the corpus: every file's numbers from its own reader ---------------------------------

def iperf3_json_numbers(path: Path) -> dict:
    """iperf3's own summary: what the receiver got (sum_received: the client's view of the
    server's report, or the server's own), the other way's in a bidir test, and how long
    a -n/-k test ran (its sender's seconds)."""
    doc = json_docs(path)[0]
    end, ts = doc["end"], doc["start"]["test_start"]
    out = {"receiver_bps": end["sum_received"]["bits_per_second"]}
    if "sum_received_bidir_reverse" in end:
        out["reverse_receiver_bps"] = end["sum_received_bidir_reverse"]["bits_per_second"]
    if ts.get("bytes") or ts.get("blocks"):
        out["duration"] = end["sum_sent"]["seconds"]
    if "accepted_connection" in doc["start"]:  # a server's own log: it never knows what was sent
        out["sender_bytes"] = None
    else:
        out["sender_bps"] = end["sum_sent"]["bits_per_second"]
    return out


def iperf3_text_numbers(path: Path) -> dict:
    finals = [ln for ln in path.read_text().splitlines() if ln.rstrip().endswith(("sender", "receiver")) and "[" in ln]
    pick = [ln for ln in finals if ln.startswith("[SUM]")] or finals
    rcv = next(ln for ln in pick if ln.rstrip().endswith("receiver"))
    return {"receiver_bps": text_rate(rcv), "duration": max(float(re.search(r"([\d.]+)-([\d.]+)\s+sec", ln)[2]) for ln in finals)}


def iperf2_csv_numbers(path: Path, port: int | None = None) -> dict:
    """Final rows: a UDP receiver's report has datagrams >= 0; 2.1.8's server rows are
    stamped 1970; with a -p port, rows to it are client->server, the others the way back."""
    finals = csv_finals(path)
    udp = any(len(r) >= 14 for r in finals)
    rcv = [r for r in finals if (int(r[11]) >= 0 if udp else True) and (not udp or len(r) >= 14)]
    if any(r[0].startswith("1970") for r in finals):  # both sides in one file: the server's rows are the receiver's
        rcv = [r for r in finals if r[0].startswith("1970")]
    out: dict = {}
    if port is not None:
        out["receiver_bps"] = sum(float(r[8]) for r in rcv if int(r[4]) == port)
        out["reverse_receiver_bps"] = sum(float(r[8]) for r in rcv if int(r[4]) != port and int(r[2]) != port) or sum(
            float(r[8]) for r in rcv if int(r[2]) == port)
    else:
        out["receiver_bps"] = sum(float(r[8]) for r in rcv)
    if udp and not any(int(r[11]) < 0 for r in finals):
        out["sender_bps"] = None  # a UDP receiver's rows alone: what was sent is not in them
    return out


def iperf2_text_numbers(path: Path) -> dict:
    lines = [ln for ln in path.read_text().splitlines() if re.match(r"\[\s*(\d+|SUM)\]\s+0\.0+-\s*[\d.]+ sec", ln) and "bits/sec" in ln]
    end = max(float(re.search(r"-\s*([\d.]+) sec", ln)[1]) for ln in lines)
    whole = [ln for ln in lines if float(re.search(r"-\s*([\d.]+) sec", ln)[1]) >= end - 0.5]
    sums = [ln for ln in whole if ln.startswith("[SUM]")]
    return {"receiver_bps": text_rate(sums[-1]) if sums else sum(text_rate(ln) for ln in whole)}


CORPUS: dict[str, tuple[Path, object]] = {
    # real files from public repositories (import_real/SOURCES.md)
    **{f"cloudpilot {p.stem}": (p, iperf3_json_numbers) for p in sorted((REAL / "cloudpilot").glob("iperf3.*.json")) if "two-appended" not in p.name},
    "cloudpilot text, CRLF, -O 3": (REAL / "cloudpilot" / "iperf3-text-crlf-omit3.txt", iperf3_text_numbers),
    "profiling-5g UDP server CSV": (REAL / "profiling-5g" / "iperf2.0-udp-server.csv", iperf2_csv_numbers),
    "profiling-5g TCP server CSV, 600 s": (REAL / "profiling-5g" / "iperf2.0-tcp-server-600s.csv", iperf2_csv_numbers),
    "profiling-5g TCP server CSV": (REAL / "profiling-5g" / "iperf2.0-tcp-server.csv", iperf2_csv_numbers),
    "profiling-5g TCP server text": (REAL / "profiling-5g" / "iperf2.0-tcp-server.out", iperf2_text_numbers),
    "profiling-5g UDP server text named .csv": (REAL / "profiling-5g" / "iperf2.0-udp-server-text.csv", iperf2_text_numbers),
    # the real tools here, every mode (tests/fixtures/capture*.py, meta.json beside each)
    **{f"iperf3 -J {m}": (I3 / m / "client.stdout", iperf3_json_numbers) for m in ("tcp_p4", "udp", "reverse", "bidir", "interval2", "bytes_n", "blocks_k")},
    **{f"iperf3 -J {m} server log": (I3 / m / "server.stdout", iperf3_json_numbers) for m in ("tcp_p4", "bytes_n")},
    **{f"iperf3 text {m}": (I3 / m / "client.stdout", iperf3_text_numbers) for m in ("text_tcp_p4", "text_reverse", "text_udp", "text_bytes_n")},
    **{f"iperf2 -y C {m} {s}": (I2 / m / f"{s}.csv", iperf2_csv_numbers) for m in ("csv_t3", "csv_t7", "csv_bytes_n") for s in ("client", "server")},
    "iperf2 -y C UDP, both sides in one file": (I2 / "csv_udp_both" / "both.csv", iperf2_csv_numbers),
    **{f"iperf2 -y C {m} {s}": (I2 / m / f"{s}.csv", lambda p, m=m: iperf2_csv_numbers(p, json.loads((I2 / m / "meta.json").read_text())["port"]))
       for m in ("csv_dual_p2", "csv_tradeoff") for s in ("client",)},
    **{f"iperf2 text {m} {s}": (I2 / m / f"{s}.txt", iperf2_text_numbers) for m in ("text_plain", "text_enhanced", "text_bytes_n") for s in ("client", "server")},
    "iperf2 text UDP server": (I2 / "text_udp" / "server.txt", iperf2_text_numbers),
}

REFUSED = {  # file -> what its one line says
    REAL / "cloudpilot" / "escape-only.res": "neither iperf3 JSON",
    REAL / "cloudpilot" / "error-line.res": "neither iperf3 JSON",
    REAL / "cloudpilot" / "cut-off.json": "not valid JSON",
    REAL / "cloudpilot" / "never-ran.json": "no end summary",
    REAL / "cloudpilot" / "error.json": "iperf3: error - control socket has closed unexpectedly",
    I2 / "csv_udp_both" / "client.csv": "a UDP sender's report only",
    I3 / "import_cases" / "not_results_array.json": "not iperf3 -J results",
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_numbers_agree_with_the_files_own(name):
    path, reader = CORPUS[name]
    want = reader(path)
    res = one(path)
    for field, value in want.items():
        got = getattr(res, field)
        assert (got is None) if value is None else got == pytest.approx(value, rel=1e-9), (name, field, got, value)


@pytest.mark.parametrize("path", sorted(REFUSED), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_refusals_are_one_line_naming_the_file(path):
    assert REFUSED[path] in refusal(path)



def test_the_command_says_what_it_skipped(tmp_path):
    """The warnings come with the file's line, not only in the database."""
    from conftest import nettune

    p = nettune("import", str(I3 / "json_warning" / "client.stdout"), "--study", "w", "--db", str(tmp_path / "r.db"), check=True)
    assert "warning: skipped 1 line(s) before the JSON: 'warning: UDP block size 65507 exceeds TCP MSS" in p.stdout
