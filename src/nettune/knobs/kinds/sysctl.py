"""sysctl:NAME = VALUE  (e.g. "sysctl:net.ipv4.tcp_rmem" = "4096 131072 {rmem_max}")

Scope is found at run time, never assumed: inside a lab namespace a net.* sysctl that
exists and is writable there is per namespace; one that is missing or read-only there
(net.core.rmem_max, net.core.netdev_max_backlog on recent kernels) is host-wide, and the
session sets it once on the machine for all lab hosts. Anything outside net.* is
host-wide. FreeBSD hosts use `sysctl NAME=VALUE`.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...targets.base import Host
from ..base import Ctx, Kind, KnobError, Loc, Persisted, catalog_row, run_ok, write_file

# Can take a machine down, are irreversible, or weaken its security: never touched.
DENY = {
    "kernel.randomize_va_space": "weakens security (ASLR)",
    "kernel.kptr_restrict": "weakens security",
    "kernel.dmesg_restrict": "weakens security",
    "kernel.yama.ptrace_scope": "weakens security",
    "kernel.unprivileged_bpf_disabled": "weakens security",
    "kernel.unprivileged_userns_clone": "weakens security",
    "kernel.perf_event_paranoid": "weakens security",
    "kernel.modules_disabled": "cannot be undone until reboot",
    "kernel.kexec_load_disabled": "cannot be undone until reboot",
    "kernel.sysrq": "weakens security",
    "kernel.core_pattern": "weakens security (runs a program as root)",
    "net.core.bpf_jit_harden": "weakens security",
    "vm.overcommit_memory": "can take the machine down (OOM)",
    "vm.nr_hugepages": "can take the machine down (pins memory)",
    "vm.panic_on_oom": "can take the machine down",
    "fs.suid_dumpable": "weakens security",
}
DENY_PREFIX = ("kernel.panic", "fs.protected_", "user.max_", "kernel.sched_")


def sysctl_path(name: str) -> str:
    return "/proc/sys/" + (name if "/" in name else name.replace(".", "/"))


def sysctl_scope(ex: Host, name: str) -> str:
    """"ns" when the sysctl is the host's own (a whole host, or per namespace), "machine"
    when a namespace shares the machine's (see the module doc). `name` as sysctl_path takes it."""
    if ex.netns is None:
        return "ns"  # a whole host: its own sysctls
    if not name.startswith("net.") and not name.startswith("net/"):
        return "machine"
    if ex.run(["test", "-w", sysctl_path(name)], timeout=10).returncode == 0:
        return "ns"
    # exists on the machine but missing or read-only in a namespace: host-wide
    return "machine" if Path(sysctl_path(name)).exists() else "ns"


def norm(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return " ".join(str(v).split())


class Sysctl(Kind):
    name = "sysctl"
    takes_arg, example_arg = "required", "net.core.rmem_max"

    def parse(self, loc: Loc, raw: Any) -> str:
        name = loc.arg or ""
        dotted = name.replace("/", ".")
        why = DENY.get(dotted) or next((f"{p}* can take the machine down or weaken security" for p in DENY_PREFIX if dotted.startswith(p)), None)
        if why:
            raise KnobError(f"{loc.key}: never changed automatically ({why}); change it by hand if you must")
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./:-]*", name) or ".." in name:  # no leading "-": it would read as an option
            raise KnobError(f"{loc.key}: {name!r} is not a sysctl name")
        value = norm(raw)
        if not value:
            raise KnobError(f"{loc.key}: empty value")
        return value

    def scope(self, ex: Host, loc: Loc) -> str:
        return sysctl_scope(ex, loc.arg or "")

    def validate(self, ex: Host, loc: Loc, value: Any, ctx: Ctx) -> None:
        cur = self.read(ex, loc)
        if ex.os == "linux":
            if ex.run(["test", "-w", sysctl_path(loc.arg or "")], timeout=10).returncode != 0:
                raise KnobError(f"{loc.key}: {sysctl_path(loc.arg or '')} is read-only here (not root, or not settable in this namespace)")
        old, new = cur.split(), str(value).split()
        if all(re.fullmatch(r"-?\d+", t) for t in old):
            if len(new) != len(old) or not all(re.fullmatch(r"-?\d+", t) for t in new):
                raise KnobError(f"{loc.key}: expected {len(old)} whole number{'s' if len(old) > 1 else ''} like the current {cur!r}, got {value!r}")

    def read(self, ex: Host, loc: Loc) -> str:
        name = loc.arg or ""
        if ex.os == "freebsd":
            return norm(run_ok(ex, ["sysctl", "-n", name], loc.key))
        try:
            return norm(ex.read_text(sysctl_path(name)))
        except OSError:
            raise KnobError(f"{loc.key}: no sysctl {name} here ({sysctl_path(name)} does not exist)") from None

    def apply(self, ex: Host, loc: Loc, value: Any) -> None:
        name = loc.arg or ""
        if ex.os == "freebsd":
            run_ok(ex, ["sysctl", f"{name}={value}"], loc.key)
            return
        write_file(ex, sysctl_path(name), str(value), loc.key)

    def same(self, a: Any, b: Any) -> bool:
        return norm(a) == norm(b)

    def linux_sysctls(self, loc: Loc) -> list[str] | None:
        return [(loc.arg or "").replace("/", ".")]

    def commands(self, loc: Loc, value: Any) -> list[str]:
        import shlex

        return [f"sysctl -w {shlex.quote(f'{loc.arg}={value}')}"]

    def persisted(self, loc: Loc, value: Any) -> Persisted:
        return Persisted(shell=self.commands(loc, value), sysctl=[(loc.arg or "", str(value))])

    def catalog(self) -> list[dict[str, str]]:
        return [catalog_row("sysctl", f'"sysctl:{n}" = ...', s, w, d, t, "no", r, fb) for n, s, w, d, t, r, fb in SYSCTLS]


# name, scope (as seen on a 6.x kernel; checked at run time), what, default, tuned, risk, FreeBSD
SYSCTLS = [
    ("net.core.rmem_max", "host-wide", "max receive buffer an app may ask for (SO_RCVBUF)", "212992 (~208 KiB)", "268435456 (256 MiB) [fasterdata]", "memory", "kern.ipc.maxsockbuf"),
    ("net.core.wmem_max", "host-wide", "max send buffer an app may ask for (SO_SNDBUF)", "212992", "268435456", "memory", "kern.ipc.maxsockbuf"),
    ("net.ipv4.tcp_rmem", "per namespace", "TCP receive buffer min/default/max (autotuning range)", "4096 131072 6291456", "4096 87380 134217728", "tcp_mem exhaustion", "net.inet.tcp.recvbuf_max / recvspace"),
    ("net.ipv4.tcp_wmem", "per namespace", "TCP send buffer min/default/max", "4096 16384 4194304", "4096 65536 134217728", "tcp_mem exhaustion", "net.inet.tcp.sendbuf_max / sendspace"),
    ("net.core.netdev_max_backlog", "host-wide", "packets queued per CPU before the stack drops", "1000", "250000", "latency", "net.isr.maxqlimit"),
    ("net.core.optmem_max", "per namespace", "ancillary buffer per socket", "20480", "65536", "low", ""),
    ("net.core.somaxconn", "per namespace", "listen() backlog cap (apps must re-listen)", "4096 (128 before 5.4)", ">2048", "low", "kern.ipc.soacceptqueue"),
    ("net.ipv4.tcp_mtu_probing", "per namespace", "PMTU black-hole detection", "0", "1 with jumbo frames", "2 can hurt performance", ""),
    ("net.ipv4.tcp_fin_timeout", "per namespace", "FIN-WAIT-2 timeout (s)", "60", "15-30", "low", ""),
    ("net.ipv4.tcp_tw_reuse", "per namespace", "reuse TIME-WAIT sockets for outgoing connections", "2 (loopback only)", "1", "low", ""),
    ("net.netfilter.nf_conntrack_max", "per namespace", "conntrack table size (module must be loaded)", "from RAM", "number of flows", "new flows dropped when full", "pf set limit states"),
    ("net.netfilter.nf_conntrack_tcp_timeout_established", "per namespace", "idle established-flow timeout (s)", "432000", "86400", "table fills", ""),
    ("net.core.default_qdisc", "host-wide", "qdisc new interfaces get (not existing ones)", "pfifo_fast/fq_codel", "fq", "low", ""),
]
