"""Where a sysctl acts on a Kubernetes node and what a cluster needs to set it per pod,
per Kubernetes minor version. Data, not code: every list is taken from a named source
(docs/kubernetes.md, "Where the sysctl classes come from", gives each with its commit).

Three questions per sysctl:

- **Where it acts** (the Linux kernel, measured on the lab: tests/test_k8s_sysctl_reach.py
  creates namespaces before and after a host-wide change): NODE, one value per machine,
  that every pod sees (read-only or absent in a pod's network namespace); COPIED, per pod
  network namespace, and a new namespace starts from the node's value at that moment, so
  a node change reaches only pods created after it; DEFAULT, per pod network namespace,
  and a new namespace starts from the kernel's built-in default, so a node change never
  reaches a pod (only the pod's own `securityContext.sysctls` does); IPC, per pod IPC,
  UTS or user namespace (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*,
  kernel.domainname, user.*: component-helpers node/util/sysctl/namespace.go).
- **Safe at a version**: the kubelet's safe list (pkg/kubelet/sysctl/safe_sysctls.go)
  and the PodSecurity baseline's allowed sysctls (pod-security-admission
  policy/check_sysctls.go) are the same set at every released minor version; a kubelet
  leaves a sysctl out when the node's kernel is older than its minimum.
- **What the cluster needs**: nothing (safe), the kubelet's `--allowed-unsafe-sysctls`
  on each node plus a namespace whose PodSecurity level is privileged (unsafe), or it
  cannot be set per pod at all (node-level: the runtime fails the pod sandbox).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

NODE, COPIED, DEFAULT, IPC = "node", "copied", "default", "ipc"
FIRST, LAST = 22, 36  # the released minor versions the lists cover (PodSecurity admission exists from 1.22)

# name: (first minor version on the kubelet safe list and the PodSecurity baseline
# (0: before 1.22), the node kernel the kubelet needs to keep it there ("": any))
SAFE_SINCE: dict[str, tuple[int, str]] = {
    "kernel.shm_rmid_forced": (0, ""),
    "net.ipv4.ip_local_port_range": (0, ""),
    "net.ipv4.tcp_syncookies": (0, ""),
    "net.ipv4.ping_group_range": (0, ""),
    "net.ipv4.ip_unprivileged_port_start": (22, ""),
    "net.ipv4.ip_local_reserved_ports": (27, "3.16"),
    "net.ipv4.tcp_keepalive_time": (29, "4.5"),
    "net.ipv4.tcp_fin_timeout": (29, "4.6"),
    "net.ipv4.tcp_keepalive_intvl": (29, "4.5"),
    "net.ipv4.tcp_keepalive_probes": (29, "4.5"),
    "net.ipv4.tcp_rmem": (32, "4.15"),
    "net.ipv4.tcp_wmem": (32, "4.15"),
}
# Merged for 1.37 (pod-security-admission master, commit 23192ec; not in any release yet):
# not used for a version until it is released.
UNRELEASED = ("net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_slow_start_after_idle")

# name: (where it acts, the kernel from which it is per namespace ("": every kernel
# Kubernetes runs on); older kernels have one value per machine). Measured on the lab's
# kernel (6.18); the kernel minimums are pkg/util/kernel/constants.go's and, for
# optmem_max, the kernel's own history (per namespace since 6.8).
ACTS: dict[str, tuple[str, str]] = {
    "net.core.rmem_max": (NODE, ""),
    "net.core.wmem_max": (NODE, ""),
    "net.core.netdev_max_backlog": (NODE, ""),
    "net.core.default_qdisc": (NODE, ""),
    "net.netfilter.nf_conntrack_max": (NODE, ""),
    "net.ipv4.tcp_rmem": (COPIED, "4.15"),
    "net.ipv4.tcp_wmem": (COPIED, "4.15"),
    "net.ipv4.tcp_congestion_control": (COPIED, "4.15"),
    "net.core.optmem_max": (DEFAULT, "6.8"),
    "net.core.somaxconn": (DEFAULT, ""),
    "net.ipv4.tcp_mtu_probing": (DEFAULT, ""),
    "net.ipv4.tcp_fin_timeout": (DEFAULT, "4.6"),
    "net.ipv4.tcp_tw_reuse": (DEFAULT, ""),
    "net.ipv4.tcp_keepalive_time": (DEFAULT, "4.5"),
    "net.ipv4.tcp_keepalive_intvl": (DEFAULT, "4.5"),
    "net.ipv4.tcp_keepalive_probes": (DEFAULT, "4.5"),
    "net.ipv4.tcp_syncookies": (DEFAULT, "4.6"),
    "net.ipv4.tcp_slow_start_after_idle": (DEFAULT, ""),
    "net.ipv4.tcp_notsent_lowat": (DEFAULT, ""),
    "net.ipv4.ip_local_port_range": (DEFAULT, ""),
    "net.ipv4.ip_local_reserved_ports": (DEFAULT, "3.16"),
    "net.ipv4.ip_unprivileged_port_start": (DEFAULT, ""),
    "net.ipv4.ping_group_range": (DEFAULT, ""),
    "net.netfilter.nf_conntrack_tcp_timeout_established": (DEFAULT, ""),
    "kernel.shm_rmid_forced": (IPC, ""),
}
# The catalog's sysctls a node pod reads back after every point's knobs: those whose
# value a new pod namespace copies decide whether the test pods must be re-created.
COPIED_NAMES = tuple(n for n, (w, _) in ACTS.items() if w == COPIED)

UNSAFE_FLAG = "--allowed-unsafe-sysctls"
WHERE_TEXT = {
    NODE: "node-level: one value per node, seen by every pod on it; cannot be set per pod",
    COPIED: "per pod network namespace; a new pod copies the node's value when it is created",
    DEFAULT: "per pod network namespace; a new pod starts from the kernel default (the node's value never reaches it)",
    IPC: "per pod IPC (or UTS, user) namespace",
    "": "cannot tell: not in nettune's table (net.*: per network namespace, whether a new pod copies the node's value is unknown)",
}


@dataclass(frozen=True)
class SysctlClass:
    name: str
    where: str  # NODE, COPIED, DEFAULT, IPC, or "" (cannot tell)
    safe: bool | None  # on the kubelet's safe list and allowed by PodSecurity baseline at the version; None: version unknown
    needs: str  # what the cluster needs for it as a pod sysctl (one phrase)
    kernel_note: str = ""  # the node kernel drops it from the safe list / makes it node-level

    @property
    def per_pod(self) -> bool:
        """It can be a pod's securityContext.sysctls entry at all."""
        return self.where != NODE


def minor_of(version: str | None) -> int | None:
    """1.29 from "v1.29.3-eks-1a2b", "1.29", "1.29+"; None when it is not a 1.x version."""
    m = re.match(r"^v?1\.(\d+)", (version or "").strip())
    return int(m.group(1)) if m else None


def kernel_tuple(text: str | None) -> tuple[int, ...] | None:
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", (text or "").strip())
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def _kernel_below(kernel: str | None, minimum: str) -> bool:
    have, need = kernel_tuple(kernel), kernel_tuple(minimum)
    return bool(minimum and have is not None and need is not None and have < need)


def where(name: str, kernel: str | None = None) -> str:
    """Where `name` acts on a node running `kernel` (None: a kernel that has it per namespace)."""
    if name in ACTS:
        w, since = ACTS[name]
        return NODE if w != NODE and _kernel_below(kernel, since) else w
    if name.startswith(("kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue.", "user.")) or name == "kernel.domainname":
        return IPC
    if name.startswith("net."):
        return ""
    return NODE  # vm.*, fs.*, kernel.*: the kubelet knows them as not namespaced


def safe_at(name: str, minor: int) -> bool:
    since = SAFE_SINCE.get(name)
    return since is not None and since[0] <= minor


def safe_names(minor: int) -> list[str]:
    """The kubelet's safe list (= the PodSecurity baseline's sysctls) at 1.`minor`."""
    return sorted(n for n in SAFE_SINCE if safe_at(n, minor))


def plan_minor(version: str | None) -> tuple[int | None, str]:
    """The minor version whose lists apply to a server of `version`, and a note when it is
    outside the released versions the lists cover."""
    minor = minor_of(version)
    if minor is None:
        return None, f"server version {version!r} is not a 1.x version: sysctl safety cannot be told" if version else ""
    if minor < FIRST:
        return None, f"Kubernetes 1.{minor} is older than nettune's lists (1.{FIRST} to 1.{LAST}): sysctl safety cannot be told"
    if minor > LAST:
        return LAST, f"Kubernetes 1.{minor} is newer than nettune's lists (up to 1.{LAST}): classified as 1.{LAST} (a newer kubelet may accept more)"
    return minor, ""


def classify(name: str, version: str | None = None, kernel: str | None = None, host_network: bool = False) -> SysctlClass:
    """One sysctl as a pod sysctl at server `version` on a node of `kernel` (either None: unknown)."""
    w = where(name, kernel)
    minor, _ = plan_minor(version)
    kernel_note = ""
    since = SAFE_SINCE.get(name)
    if since and since[1] and _kernel_below(kernel, since[1]):
        kernel_note = f"the kubelet leaves it off its safe list on kernel {kernel} (needs {since[1]})"
    if w == NODE:
        return SysctlClass(name, w, False, "cannot be a pod sysctl: a knob on node:NAME hosts", kernel_note)
    if host_network and name.startswith("net."):
        return SysctlClass(name, w, False, "cannot be a pod sysctl with hostNetwork (it is the node's)", kernel_note)
    if minor is None:
        return SysctlClass(name, w, None, f"unknown until connected (unsafe: kubelet {UNSAFE_FLAG}, PodSecurity privileged)", kernel_note)
    if safe_at(name, minor) and not kernel_note:
        return SysctlClass(name, w, True, "nothing (safe)", kernel_note)
    return SysctlClass(name, w, False, f"kubelet {UNSAFE_FLAG}, PodSecurity privileged", kernel_note)


def table_rows(names: list[str], version: str | None, kernel: str | None = None) -> list[tuple[str, str, str, str]]:
    """(sysctl, where it acts, safe per version, what the cluster needs) for a printed table."""
    rows = []
    for n in names:
        c = classify(n, version, kernel)
        since = SAFE_SINCE.get(n)
        history = "never" if since is None else f"from 1.{max(since[0], FIRST)}" + (" (and before)" if since[0] < FIRST else "")
        if since and since[1]:
            history += f", kernel {since[1]}+"
        if c.per_pod and c.safe is not None:
            history += ": yes here" if c.safe else ": no here"
        rows.append((n, SHORT_WHERE[c.where], history if c.per_pod else "-", c.needs))
    return rows


SHORT_WHERE = {NODE: "node", COPIED: "pod netns, copies the node's at creation", DEFAULT: "pod netns, kernel default at creation",
               IPC: "pod ipc/uts/user ns", "": "cannot tell"}
