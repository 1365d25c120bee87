"""qdisc[@DEV] = "fq"  |  "tbf rate 1gbit burst 32k latency 10ms"  |  "default"

Replaces the root qdisc (`tc qdisc replace dev DEV root ...`; the value is split like a
shell word list and passed as argv, never through a shell). "default" deletes the root
so the kernel puts its default back. The whole egress tree (qdiscs and classes) is saved
before the change and rebuilt on restore; a tree with tc filters is refused up front,
since nettune could not put the filters back. Kernels without a qdisc (sch_fq, sch_netem
are often missing) are detected before the study starts, with the list of what exists.
"""
from __future__ import annotations

import re
import shlex
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, check_plain, need_device, run_ok

COMMON = ("fq", "fq_codel", "netem", "htb", "tbf", "cake", "sfq", "prio", "pfifo", "bfifo", "pfifo_fast", "mq", "red", "hfsc", "drr")
_CLASSFUL = ("htb", "hfsc", "drr", "qfq", "cbq")
_DROP = {"refcnt": 1, "direct_packets_stat": 1}
_NO_OPTS = ("pfifo_fast", "noqueue", "mq", "multiq", "noop")


def _clean(tokens: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(tokens):
        if tokens[i] in _DROP:
            i += 1 + _DROP[tokens[i]]
            continue
        out.append(tokens[i])
        i += 1
    return out


def tree(ex: Host, dev: str, what: str) -> dict[str, Any]:
    """The egress tree of DEV: normalised `tc qdisc show` and `tc class show` lines."""
    qd = [" ".join(_clean(line.split())) for line in run_ok(ex, ["tc", "qdisc", "show", "dev", dev], what).splitlines() if line.strip()]
    qd = [line for line in qd if "parent ffff:" not in line and not line.startswith(("qdisc ingress", "qdisc clsact"))]
    cl = [" ".join(line.split()) for line in run_ok(ex, ["tc", "class", "show", "dev", dev], what).splitlines() if line.strip()]
    return {"qdiscs": qd, "classes": cl}


def is_default(t: dict[str, Any]) -> bool:
    root = next((q for q in t.get("qdiscs", []) if " root" in q), "")
    return not t.get("qdiscs") or (len(root.split()) > 2 and root.split()[2] == "0:")


def root_kind(t: Any) -> str:
    if isinstance(t, dict):
        root = next((q for q in t.get("qdiscs", []) if " root" in q), "qdisc ?")
        return root.split()[1]
    return "default" if str(t).strip() == "default" else shlex.split(str(t))[0]


class Qdisc(Kind):
    name = "qdisc"
    takes_arg = "never"
    needs_device = True

    def parse(self, loc: Loc, raw: Any) -> str:
        try:
            tokens = shlex.split(str(raw))
        except ValueError as e:
            raise KnobError(f"{loc.key}: cannot split {raw!r}: {e}") from None
        if not tokens:
            raise KnobError(f"{loc.key}: empty qdisc; write e.g. \"fq\" or \"default\"")
        if any(t in ("dev", "root", "parent") for t in tokens):
            raise KnobError(f"{loc.key}: give only the qdisc and its options (e.g. \"fq maxrate 5gbit\"); nettune adds dev and root")
        if not re.fullmatch(r"[a-z_]+", tokens[0]):
            raise KnobError(f"{loc.key}: {tokens[0]!r} is not a qdisc name")
        return " ".join(shlex.quote(t) for t in tokens)

    def check_reading(self, loc: Loc, value: Any) -> None:
        """A journaled tree: `tc qdisc show` / `tc class show` lines of the kind this kind
        reads, whose words a restore passes to tc (never a `dev` of their own)."""
        check_plain(loc, value)
        if not isinstance(value, dict):
            self.parse(loc, value)
            return
        if set(value) - {"qdiscs", "classes"} or not all(isinstance(value.get(k, []), list) for k in ("qdiscs", "classes")):
            raise KnobError(f"{loc.key}: the journaled reading is not a saved tc tree")
        for what, lines in (("qdisc", value.get("qdiscs", [])), ("class", value.get("classes", []))):
            for line in lines:
                words = str(line).split()
                if len(words) < 3 or words[0] != what or not re.fullmatch(r"[a-z_]+", words[1]) or "dev" in words \
                        or not all(re.fullmatch(r"[A-Za-z0-9_.:/%+-]+", w) for w in words):
                    raise KnobError(f"{loc.key}: the journaled {what} line {str(line)[:60]!r} is not one tc shows")

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        dev = need_device(ex, loc)
        filters = run_ok(ex, ["tc", "filter", "show", "dev", dev], loc.key).strip()
        if filters:
            raise KnobError(f"{loc.key}: {dev} has tc filters that nettune cannot save and put back; remove them first or drop this knob")
        if value == "default":
            return
        spare, pdev = (ex, dev) if ctx.scratch else (ctx.spare, ctx.spare_dev)
        if spare is None:
            return  # no throw-away device here: a missing qdisc shows up when applied
        r = spare.run(["tc", "qdisc", "replace", "dev", pdev, "root", *shlex.split(value)], timeout=15)
        spare.run(["tc", "qdisc", "del", "dev", pdev, "root"], timeout=15)
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
            msg_s = msg[-1] if msg else f"exit {r.returncode}"
            kind = shlex.split(value)[0]
            if "unknown" in msg_s.lower() or "not find" in msg_s.lower() or "no such file" in msg_s.lower():
                have = self.available(spare, pdev)
                raise KnobError(f"{loc.key}: this kernel has no {kind} qdisc (sch_{kind} not built or loaded); available: {', '.join(have) or 'none found'}")
            raise KnobError(f"{loc.key}: tc rejects {value!r}: {msg_s}")

    def available(self, ex: Host, dev: str) -> list[str]:
        have = []
        for kind in COMMON:
            args = {"tbf": ["rate", "1gbit", "burst", "32k", "latency", "10ms"], "red": ["limit", "400000", "avpkt", "1000", "bandwidth", "1gbit"]}.get(kind, [])
            if ex.run(["tc", "qdisc", "replace", "dev", dev, "root", kind, *args], timeout=10).returncode == 0:
                have.append(kind)
        ex.run(["tc", "qdisc", "del", "dev", dev, "root"], timeout=10)
        return have

    def read(self, ex: Host, loc: Loc) -> dict[str, Any]:
        return tree(ex, loc.device or "", loc.key)

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        dev = loc.device or ""
        if isinstance(value, dict):
            self._rebuild(ex, loc, value)
        elif value == "default":
            self._delete_root(ex, loc)
        else:
            run_ok(ex, ["tc", "qdisc", "replace", "dev", dev, "root", *shlex.split(value)], loc.key)

    def _delete_root(self, ex: Host, loc: Loc) -> None:
        r = ex.run(["tc", "qdisc", "del", "dev", loc.device or "", "root"], timeout=15)
        if r.returncode != 0 and "handle of zero" not in r.stderr and "Invalid handle" not in r.stderr:
            raise KnobError(f"{loc.key}: tc qdisc del dev {loc.device} root failed: {r.stderr.strip()}")

    def _rebuild(self, ex: Host, loc: Loc, saved: dict[str, Any]) -> None:
        """Put a saved tree back: the kernel default, or root + classes + child qdiscs."""
        dev = loc.device or ""
        self._delete_root(ex, loc)
        if is_default(saved):
            return
        qdiscs = [q.split() for q in saved.get("qdiscs", [])]
        roots = [q for q in qdiscs if len(q) > 3 and q[3] == "root"]
        children = [q for q in qdiscs if len(q) > 4 and q[3] == "parent" and q[2] != "0:"]
        for q in roots:
            self._add_qdisc(ex, loc, ["root", "handle", q[2]], q[1], q[4:])
        for c in [c.split() for c in saved.get("classes", [])]:
            if len(c) < 4 or c[1] not in _CLASSFUL:
                continue  # classes a qdisc creates by itself (tbf, mq, prio)
            kind, classid, rest = c[1], c[2], c[3:]
            if rest[0] == "root":
                parent, rest = classid.split(":")[0] + ":", rest[1:]
            elif rest[0] == "parent":
                parent, rest = rest[1], rest[2:]
            else:
                continue
            if rest[:1] == ["leaf"]:
                rest = rest[2:]
            run_ok(ex, ["tc", "class", "add", "dev", dev, "parent", parent, "classid", classid, kind, *rest], loc.key)
        for q in children:
            self._add_qdisc(ex, loc, ["parent", q[4], "handle", q[2]], q[1], q[5:])

    def _add_qdisc(self, ex: Host, loc: Loc, where: list[str], kind: str, opts: list[str]) -> None:
        base = ["tc", "qdisc", "replace", "dev", loc.device or "", *where, kind]
        if kind in _NO_OPTS or ex.run(base + opts, timeout=15).returncode != 0:
            run_ok(ex, base, loc.key)

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):
            if is_default(a) and is_default(b):
                return root_kind(a) == root_kind(b)
            return a.get("qdiscs") == b.get("qdiscs") and a.get("classes") == b.get("classes")
        if isinstance(a, str) and isinstance(b, str):
            return shlex.split(a) == shlex.split(b)
        return False  # a tree against a spec: cannot tell, so apply

    def looks_like(self, current: Any, new: Any) -> bool:
        if isinstance(new, str) and isinstance(current, dict):
            return (new == "default" and is_default(current)) or (not is_default(current) and root_kind(current) == root_kind(new))
        return self.same(current, new)

    def commands(self, loc: Loc, value: Any) -> list[str]:
        dev = loc.device or "$IFACE"
        if isinstance(value, dict):
            if is_default(value):
                return [f"tc qdisc del dev {dev} root"]
            return [f"tc qdisc del dev {dev} root"] + [f"# then rebuild: {q}" for q in value.get("qdiscs", []) + value.get("classes", [])]
        if value == "default":
            return [f"tc qdisc del dev {dev} root"]
        return [f"tc qdisc replace dev {dev} root {value}"]

    def show(self, value: Any) -> str:
        if isinstance(value, dict) and "qdiscs" in value:  # a saved tree: its root, and how many more
            qd = value["qdiscs"]
            return "; ".join(qd[:1]) + (" (+%d more)" % (len(qd) - 1) if len(qd) > 1 else "")
        return str(value)

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted.script_only(loc, self.commands(loc, value))

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row(
            "qdisc", '"qdisc" = "fq"  ("fq maxrate 5gbit", "default")', "interface", "root queueing discipline (pacing, shaping, emulation)",
            "noqueue (virtual), pfifo_fast/fq_codel/mq", "fq [fasterdata]", "no", "the whole tc tree is replaced (saved and rebuilt on restore)", "none (dummynet/ALTQ)",
        )]
