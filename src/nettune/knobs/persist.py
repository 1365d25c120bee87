"""`nettune persist`: write one point's knobs as files an admin installs; never apply them.

The values come from the results database (each run stores the settings in force, a
PointState whose `knobs` are the knob values by host or "machine"). For every host (and "machine" for
host-wide values) the output directory gets:
    <host>/99-nettune-<study>.conf        a /etc/sysctl.d/ fragment (sysctl, cc)
    <host>/tuned/nettune-<study>/tuned.conf   a tuned profile ([main] include, [sysctl], [net], [sysfs])
    <host>/70-nettune-<study>.rules       a udev rule (MTU, txqueuelen, RPS/XPS, ethtool)
    <host>/nm-<study>.sh                  NetworkManager commands (nmcli connection modify)
    <host>/apply.sh                       the plain commands, one knob per line
plus README.txt saying where each file goes. Interfaces are the ones the study used
(the lab's veth names); override with --interface for the real NIC. Each kind says which
of these forms it has (Kind.persisted); this module only merges and writes them.

A results database may come from anyone (an export imported, a file sent by a colleague),
so what it says is checked with the rules of a study file before anything is written:
host names, knob keys (a sysctl's one spelling and its denylist) and values (the kind's
parse: one line), the study's name, the interface; every file lands inside --out, and a
point label is escaped to one line. Anything that fails is one line of the error and
nothing is written.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from ..record.point_state import PointState
from ..studyfile.models import STUDY_NAME
from ..studyfile.ssh_hosts import HOST_NAME
from .base import IFNAME, KnobError, Loc
from .keys import parse_key
from .registry import KINDS


def find_point(points: list[dict[str, Any]], want: dict[str, str]) -> dict[str, Any]:
    names = sorted({k for p in points for k in p["point"]})
    for k in want:
        if k not in names:
            raise NettuneError(f"--point: the study has no parameter {k!r} (it has: {', '.join(names) or 'none'})")
    hits = [p for p in points if all(_eq(p["point"].get(k), v) for k, v in want.items())]
    if len(hits) != 1:
        have = "; ".join(",".join(f"{k}={v}" for k, v in p["point"].items()) for p in points[:12])
        what = "no point" if not hits else f"{len(hits)} points"
        raise NettuneError(f"--point {','.join(f'{k}={v}' for k, v in want.items())}: {what} match; points: {have}")
    return hits[0]


def _eq(a: Any, b: str) -> bool:
    if isinstance(a, bool):
        return str(a).lower() == b.lower()
    return str(a) == b or json.dumps(a) == b


def parse_point(text: str) -> dict[str, str]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise NettuneError(f"--point {text!r}: write KEY=VAL,KEY=VAL (e.g. queues=4,streams=8)")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def knobs_of_point(store: Any, study_ref: str, point: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], PointState]:
    """(study row, point, settings of its first run) from the results database (a
    store.Store: this stage comes before the store's, so it is not named here)."""
    s = store.find_study(study_ref)
    p = find_point(store.points(s["id"]), point)
    runs = [r for r in store.runs(s["id"]) if r.point_id == p["id"]]
    states = [PointState.from_json(r.settings) for r in runs]
    with_knobs = [st for st in states if st.knobs]
    if not with_knobs:
        why = "it has no runs" if not runs else "its runs recorded no knob values (the study has no [knobs])"
        raise NettuneError(f"study {s['name']!r} point {p['point']}: nothing to persist: {why}")
    return s, p, with_knobs[0]


class Refused(NettuneError):
    """What a database holds that a study file could not: `lines`, one per refusal."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__(f"the results database holds {len(lines)} thing{'s' if len(lines) > 1 else ''} a study file could not "
                         f"(see above); nothing was written")


def one_line(text: str) -> str:
    """Text from a database shown in a comment: every character that could end the line
    (or the comment) escaped, so it stays one line of a comment."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def checked_knobs(study: str, settings: Any, interface: str | None) -> tuple[dict[str, dict[str, tuple[Loc, Any]]], dict[str, str]]:
    """The knobs of a run's settings as read from a database, checked as a study file's
    would be: {host: {key: (loc, value)}} and each host's interface. NettuneError with one
    line per refusal when anything is not what nettune writes (nothing is written then)."""
    bad: list[str] = []
    if not isinstance(study, str) or not re.fullmatch(STUDY_NAME, study):
        bad.append(f"study name {one_line(str(study))[:80]!r}: not a study name (letters, digits, '_', '.', '-')")
    if interface is not None and not IFNAME.fullmatch(interface):
        bad.append(f"--interface {one_line(interface)!r}: not an interface name")
    knobs = settings.get("knobs") if isinstance(settings, dict) else None
    if not isinstance(knobs, dict):
        raise NettuneError("the database's settings of this run hold no table of knobs; it was not written by nettune run")
    hosts = settings.get("hosts") if isinstance(settings.get("hosts"), dict) else {}
    out: dict[str, dict[str, tuple[Loc, Any]]] = {}
    ifaces: dict[str, str] = {}
    for host, values in knobs.items():
        if not isinstance(host, str) or not (host == "machine" or HOST_NAME.fullmatch(host)) or not isinstance(values, dict):
            bad.append(f"host {one_line(str(host))[:80]!r}: not a host name (letters, digits, '.', '-', '_')")
            continue
        iface = (hosts.get(host) or {}).get("interface") if isinstance(hosts.get(host), dict) else None
        if iface is not None:
            if isinstance(iface, str) and IFNAME.fullmatch(iface):
                ifaces[host] = iface
            else:
                bad.append(f"host {host}: interface {one_line(str(iface))[:40]!r} is not an interface name")
        for key, value in values.items():
            try:
                out.setdefault(host, {})[key] = _checked(key, value)
            except (KnobError, ValueError, TypeError) as e:
                bad.append(f"host {host}: knob {one_line(str(key))[:80]!r}: {one_line(str(e))}")
    if bad:
        raise Refused(bad)
    return out, ifaces


def _checked(key: Any, value: Any) -> tuple[Loc, Any]:
    """(loc, value) of one stored knob; an OS-neutral knob is stored as the setting it was,
    "sockbuf:max (sysctl:net.core.rmem_max)": both keys are checked, the setting is written."""
    if not isinstance(key, str):
        raise ValueError("not a knob key")
    if any(isinstance(v, str) and any(ord(c) < 32 or c == "\x7f" for c in v) for v in _texts(value)):
        raise ValueError(f"the value {one_line(str(value))[:60]!r} is more than one line: nettune stores every value on one")
    outer, _, inner = key.partition(" (")
    parse_key(outer)
    kk = parse_key(inner.removesuffix(")") if inner else outer)
    kind = KINDS[kk.kind]
    loc = Loc(key, kk.kind, kk.arg, kk.device)
    try:
        return loc, kind.parse(loc, value)  # a study value as the run set it
    except KnobError:
        kind.check_reading(loc, value)  # or what the host read back (a value that did not stick)
        return loc, value


def _texts(value: Any) -> list[Any]:
    """Every text in a stored value (a reading may be a table of them)."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (k, *_texts(v))]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return [value]


def write_files(study: str, point: dict[str, Any], settings: PointState | dict[str, Any], out: Path, interface: str | None = None) -> list[Path]:
    raw = settings.to_json() if isinstance(settings, PointState) else settings  # as the database holds it: untrusted
    knobs, lab_ifaces = checked_knobs(study, raw, interface)
    written: list[Path] = []
    label = one_line(", ".join(f"{k}={v}" for k, v in point.items()))
    root = out.resolve()
    for host, values in knobs.items():
        d = out / host
        if d.resolve().parent != root:  # a name checked above cannot leave --out; this says so twice
            raise NettuneError(f"host {host!r}: would write outside {out}")
        d.mkdir(parents=True, exist_ok=True)
        default_if = interface or lab_ifaces.get(host) or "$IFACE"
        f = _Files(study, label, default_if)
        for loc, value in values.values():
            f.add(loc, value)
        written += f.write(d)
    readme = out / "README.txt"
    readme.write_text(_README.format(study=study, point=label, hosts=", ".join(knobs)))
    written.append(readme)
    return written


class _Files:
    def __init__(self, study: str, point: str, iface: str):
        self.study, self.point, self.iface = study, point, iface
        self.sysctl: list[tuple[str, str]] = []
        self.net: dict[str, dict[str, list[str]]] = {}  # dev -> tuned [net] option -> words
        self.udev: dict[str, list[str]] = {}
        self.nm: dict[str, list[str]] = {}
        self.sysfs: list[tuple[str, str]] = []
        self.sh: list[str] = []
        self.main: list[str] = []
        self.notes: list[str] = []

    def add(self, loc: Loc, value: Any) -> None:
        """Merge one knob's persisted forms (its kind knows them) into this host's files."""
        dev = loc.device or self.iface
        forms = KINDS[loc.kind].persisted(Loc(loc.key, loc.kind, loc.arg, dev), value)
        self.sh += forms.shell
        self.sysctl += forms.sysctl
        self.main += forms.tuned_main
        for option, words in forms.tuned_net.items():
            self.net.setdefault(dev, {}).setdefault(option, []).extend(words)
        self.sysfs += forms.sysfs
        if forms.udev:
            self.udev.setdefault(dev, []).extend(forms.udev)
        if forms.nm:
            self.nm.setdefault(dev, []).extend(forms.nm)
        self.notes += forms.notes

    def write(self, d: Path) -> list[Path]:
        head = f"# nettune: study {self.study}, point {self.point}\n# generated by `nettune persist`; review before installing\n"
        files: dict[str, str] = {}
        if self.sysctl:
            files[f"99-nettune-{self.study}.conf"] = head + "".join(f"{k} = {v}\n" for k, v in self.sysctl)
        tuned = [head, "[main]\n", f"summary=nettune {self.study} ({self.point})\n", *(m + "\n" for m in self.main)]
        if self.sysctl:
            tuned += ["\n[sysctl]\n", *(f"{k}={v}\n" for k, v in self.sysctl)]
        for i, (dev, opts) in enumerate((dv, o) for dv, o in self.net.items() if o):
            tuned += [f"\n[net{'' if i == 0 else i}]\n", "type=net\n" if i else "", f"devices={dev}\n", *(f"{o}={' '.join(w)}\n" for o, w in opts.items())]
        if self.sysfs:
            tuned += ["\n[sysfs]\n", *(f"{p}={v}\n" for p, v in self.sysfs)]
        if len(tuned) > 4 or self.main:
            files[f"tuned/nettune-{self.study}/tuned.conf"] = "".join(tuned)
        if self.udev:
            files[f"70-nettune-{self.study}.rules"] = head + "".join(
                f'ACTION=="add", SUBSYSTEM=="net", KERNEL=="{dev}", {", ".join(rules)}\n' for dev, rules in self.udev.items()
            )
        if self.nm:
            nm = [
                "#!/bin/sh\n", head, "# usage: sh nm-*.sh CONNECTION   (nmcli connection show lists them)\n", "set -e\n", 'CONN="${1:?connection name}"\n',
                *(f'nmcli connection modify "$CONN" {" ".join(opts)}  # {dev}\n' for dev, opts in self.nm.items()),
                'nmcli connection up "$CONN"\n',
            ]
            files[f"nm-{self.study}.sh"] = "".join(nm)
        sh = ["#!/bin/sh\n", head, "# the plain commands; run as root. IFACE defaults to the interface the study used\n", "set -e\n"]
        sh.append(f'IFACE="${{IFACE:-{self.iface if self.iface != "$IFACE" else "eth0"}}}"\n')
        sh += [line.replace(f" {self.iface} ", " $IFACE ").replace(f"/{self.iface}/", "/$IFACE/") + "\n" for line in self.sh]
        sh += [f"# note: {n}\n" for n in self.notes]
        files["apply.sh"] = "".join(sh)
        out = []
        for name, text in files.items():
            if "\r" in text or any(("\n" in k or "\n" in v) for k, v in self.sysctl + self.sysfs):
                raise NettuneError(f"{d / name}: a value of more than one line; nothing more was written")  # parse rules it out
            p = d / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            if name.endswith(".sh"):
                p.chmod(0o755)
            out.append(p)
        return out


_README = """nettune persist: study {study}, point {point}
Directories: {hosts} ("machine" holds host-wide values).
Nothing here has been applied. Review, then install what fits your system:

  99-nettune-*.conf      -> /etc/sysctl.d/         then: sysctl --system
  tuned/nettune-*/        -> /etc/tuned/            then: tuned-adm profile nettune-{study}
  70-nettune-*.rules     -> /etc/udev/rules.d/     applied when the interface appears
  nm-*.sh CONNECTION     NetworkManager-managed interfaces (persists in the connection)
  apply.sh               the plain commands, for a boot script or by hand (IFACE=eth0 sh apply.sh)

Use one mechanism per setting (sysctl.d or tuned, udev or NetworkManager), not both:
tuned re-applies /etc/sysctl.d after its profile (reapply_sysctl=1), and the last writer wins.
Interfaces are those the study used; in the lab these are veth names: replace them with
your NIC (or pass --interface to `nettune persist`). Kernel command line settings
(mitigations, amd_pstate) are never written by nettune.
"""
