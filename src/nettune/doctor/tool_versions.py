"""The instrument: which iperf3 and iperf2 are installed, and whether iperf3 runs all
streams on one thread (before 3.16), which caps what a study can measure (study D).

Sources of truth: `iperf3 --version`, `iperf -v` (iperf2 prints to stderr); esnet/iperf
RELNOTES.md 3.16 (multi-threaded iperf3).
"""
from __future__ import annotations

import re

from .base import Check, Finding, HostView, cannot


def _version(text: str) -> tuple[str, tuple[int, ...]] | None:
    m = re.search(r"iperf(?: version)? (\d+(?:\.\d+)+)", text)
    return (m.group(1), tuple(int(x) for x in m.group(1).split("."))) if m else None


class Instrument(Check):
    id, title = "tool.iperf", "iperf3 and iperf2 versions; iperf3's threading"
    per_machine = True  # the machine's installed binaries: lab namespaces run the same ones
    source = "iperf3 --version; iperf -v"
    oses = ("linux", "freebsd")

    def run(self, h: HostView) -> list[Finding]:
        w3, w2 = h.which("iperf3"), h.which("iperf")
        r3 = h.cmd(["iperf3", "--version"]) if not w3.absent else None
        r2 = h.cmd(["iperf", "-v"]) if not w2.absent else None
        v3 = _version(r3.stdout + r3.stderr) if r3 is not None else None
        v2 = _version(r2.stdout + r2.stderr) if r2 is not None else None
        unknown = [(w, r) for w, r in ((w3, r3), (w2, r2)) if not w.known and (r is None or not r.known)]
        if len(unknown) == 2:
            return [cannot(self.id, h.name, "which iperf3 and iperf are installed", w3, *(r for _, r in unknown if r is not None))]
        ev = f"iperf3 --version: {v3[0] if v3 else 'not installed' if w3.absent else 'no version'}; iperf -v: {v2[0] if v2 else 'not installed' if w2.absent else 'no version'}"
        out = []
        missing = [n for n, w in (("iperf3", w3), ("iperf", w2)) if w.absent]
        if missing:
            out.append(Finding(self.id, h.name, "warn", f"{' and '.join(missing)} not installed", ev,
                               "nettune runs these on every test host (the engine a study names must be there)",
                               "nettune setup (this machine), or apt-get install iperf3 iperf / pkg install iperf3 iperf", ""))
        if v3 and v3[1] < (3, 16):
            streams = f"; this study's -P up to {h.max_streams} all share that one thread" if h.max_streams and h.max_streams > 1 else ""
            out.append(Finding(self.id, h.name, "warn", f"iperf3 {v3[0]} is single-threaded (before 3.16){streams}", ev,
                               "all its streams run on one core: above roughly 25-40 Gbit/s per host the tool, not the path, is the limit (study D: 32.7 vs iperf2's 286)",
                               "use engine = \"iperf2\", or iperf3 >= 3.16, for fast paths", ""))
        if not out:
            out.append(Finding(self.id, h.name, "info", f"iperf3 {v3[0] if v3 else '-'}, iperf {v2[0] if v2 else '-'}", ev))
        return out


CHECKS = (Instrument(),)
