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

# Never changed automatically: a sysctl that names a program the kernel runs as root,
# weakens the kernel's hardening, cannot be undone until reboot, or can take the machine
# down. From the kernel's own documentation (torvalds/linux Documentation/admin-guide/
# sysctl/kernel.rst @01478b83, vm.rst @4981f05f, fs.rst @79fe08ee, and LSM/Yama.rst for
# kernel.yama.*; docs/security.md lists them with the reason); the ones marked [src] are
# not in those pages and come from the kernel source or a distribution's patch.
DENY = {
    # names a program (run as root by the kernel)
    "kernel.core_pattern": "a leading '|' makes the kernel run a program as root on every crash",
    "kernel.core_pipe_limit": "governs the core_pattern helper program",
    "kernel.modprobe": "the program the kernel runs as root to load a module",
    "kernel.hotplug": "the program the kernel runs as root on a hotplug event",
    "kernel.poweroff_cmd": "the program the kernel runs as root to power off [src: kernel/reboot.c]",
    "kernel.cad_pid": "the process the kernel signals on Ctrl-Alt-Del",
    # weakens kernel hardening
    "kernel.randomize_va_space": "weakens security (address space randomisation)",
    "kernel.kptr_restrict": "weakens security (exposes kernel addresses)",
    "kernel.dmesg_restrict": "weakens security (kernel log to unprivileged users)",
    "kernel.perf_event_paranoid": "weakens security (performance events to unprivileged users)",
    "kernel.unprivileged_bpf_disabled": "weakens security (bpf() to unprivileged users; once set it cannot be cleared)",
    "kernel.unprivileged_userns_clone": "weakens security (user namespaces to unprivileged users) [src: Debian's patch]",
    "kernel.io_uring_disabled": "weakens security (io_uring to unprivileged users) [src: kernel/io_uring]",
    "kernel.stack_erasing": "weakens security (kernel stack erasing)",
    "kernel.sysrq": "weakens security (magic SysRq keys)",
    "kernel.ctrl-alt-del": "reboots at once, without syncing, on Ctrl-Alt-Del",
    "kernel.modules_disabled": "cannot be undone until reboot",
    "kernel.kexec_load_disabled": "cannot be undone until reboot",
    "kernel.ftrace_enabled": "weakens security (function tracing) [src: kernel/trace]",
    "vm.mmap_min_addr": "weakens security (NULL-pointer dereference protection)",
    "vm.mmap_rnd_bits": "weakens security (mmap address randomisation)",
    "vm.mmap_rnd_compat_bits": "weakens security (mmap address randomisation)",
    "vm.legacy_va_layout": "weakens security (the old, less random mmap layout)",
    "vm.unprivileged_userfaultfd": "weakens security (userfaultfd to unprivileged users)",
    "vm.hugetlb_shm_group": "grants a group hugetlb shared memory",
    "fs.suid_dumpable": "weakens security (core dumps of setuid programs)",
    "dev.tty.ldisc_autoload": "weakens security (module autoloading from a tty) [src: drivers/tty]",
    "dev.tty.legacy_tiocsti": "weakens security (terminal input injection) [src: drivers/tty]",
    # can take the machine down
    "vm.overcommit_memory": "can take the machine down (OOM)",
    "vm.nr_hugepages": "can take the machine down (pins memory)",
    "vm.min_free_kbytes": "can take the machine down (reserves memory)",
    "vm.memory_failure_recovery": "0 panics on every memory error",
}
DENY_PREFIX = {
    "kernel.yama.": "weakens security (ptrace restrictions)",
    "kernel.usermodehelper.": "capabilities of the programs the kernel runs as root [src: kernel/umh.c]",
    "kernel.sched_": "scheduler internals",
    "fs.protected_": "weakens security (link and file protections in sticky directories)",
    "fs.binfmt_misc.": "registers a program to run other binaries",
    "net.core.bpf_jit_": "weakens security (BPF JIT hardening, kernel addresses)",
    "user.max_": "weakens security (namespaces to unprivileged users)",
    "security.": "FreeBSD's security settings [src: FreeBSD security(7)]",
}
# any sysctl with "panic" in a part of its name (kernel.panic_on_oops, vm.panic_on_oom,
# kernel.hung_task_panic, kernel.softlockup_panic, ...) can take the machine down
PANIC = "panic"
UNSAFE_KIND = "sysctl_unsafe"
# one part of a sysctl name: no '/', never empty, '.' or '..', no leading '-' (an option)
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_:.+-]*")


def sysctl_parts(key: str, name: str) -> list[str]:
    """The parts of a sysctl name in its one canonical form: dots between the parts, or
    slashes only when a part holds a dot itself (net/ipv4/conf/eth0.100/forwarding). An
    empty, '.' or '..' part, or a second spelling of a name (kernel/core_pattern for
    kernel.core_pattern), is refused: two spellings of one file would pass the denylist,
    the journal's slot and the restore's checks as two different settings."""
    if not name or len(name) > 256:
        raise KnobError(f"{key}: {name!r} is not a sysctl name")
    parts = name.split("/") if "/" in name else name.split(".")
    bad = next((p for p in parts if p in ("", ".", "..") or not _PART.fullmatch(p)), None)
    if bad is not None:
        what = "an empty part" if bad == "" else f"the part {bad!r}"
        raise KnobError(f"{key}: {name!r} is not a sysctl name ({what}); write it with dots, as `sysctl -a` lists it (e.g. net.core.rmem_max)")
    if "/" in name and not any("." in p for p in parts):
        raise KnobError(f"{key}: write {'.'.join(parts)!r}, not {name!r}: one spelling per sysctl (slashes only where a part holds a dot)")
    return parts


def denied(parts: list[str]) -> str | None:
    """Why a sysctl is never changed automatically (None: it may be)."""
    dotted = ".".join(parts)
    why = DENY.get(dotted) or next((w for p, w in DENY_PREFIX.items() if dotted.startswith(p)), None)
    if why is None and any(PANIC in p for p in parts):
        why = "can take the machine down (a panic setting)"
    return why


def sysctl_path(name: str) -> str:
    """The file of a sysctl name (in its canonical form: checked by sysctl_parts first)."""
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

    allow_denied = False  # sysctl_unsafe: the denylist's explicit override (kinds/sysctl_unsafe.py)

    def check_loc(self, loc: Loc) -> None:
        if loc.device is not None:
            raise KnobError(f"{loc.key}: a sysctl is not per interface")
        why = denied(sysctl_parts(loc.key, loc.arg or ""))
        if why and not self.allow_denied:
            raise KnobError(f"{loc.key}: never changed automatically ({why}); change it by hand, or, if you mean it, "
                            f"write \"{UNSAFE_KIND}:{loc.arg}\" (see docs/security.md)")

    def parse(self, loc: Loc, raw: Any) -> str:
        self.check_loc(loc)
        value = norm(raw)
        if not value:
            raise KnobError(f"{loc.key}: empty value")
        if len(value) > 4096 or any(ord(c) < 32 or c == "\x7f" for c in value):
            raise KnobError(f"{loc.key}: {value[:40]!r} is not a value of one line")
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
