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
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import NettuneError
from ..record.point_state import PointState
from .base import Loc
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


def write_files(study: str, point: dict[str, Any], settings: PointState | dict[str, Any], out: Path, interface: str | None = None) -> list[Path]:
    state = settings if isinstance(settings, PointState) else PointState.from_json(settings)
    knobs = state.knobs
    lab_ifaces = {h: v.interface for h, v in state.hosts.items() if v.interface}
    written: list[Path] = []
    label = ", ".join(f"{k}={v}" for k, v in point.items())
    for host, values in knobs.items():
        d = out / host
        d.mkdir(parents=True, exist_ok=True)
        default_if = interface or lab_ifaces.get(host) or "$IFACE"
        f = _Files(study, label, default_if)
        for key, value in values.items():
            f.add(key, value)
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

    def add(self, key: str, value: Any) -> None:
        """Merge one knob's persisted forms (its kind knows them) into this host's files."""
        # an OS-neutral knob is stored as the settings it was, "sockbuf:max (sysctl:net.core.rmem_max)"
        kk = parse_key(key.split(" (", 1)[1].rstrip(")") if " (" in key else key)
        dev = kk.device or self.iface
        forms = KINDS[kk.kind].persisted(Loc(key, kk.kind, kk.arg, dev), value)
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
