"""The waits and reads of the kubernetes target's pods: readiness with its reason, and
sysctls read back inside a pod (the values in force, stored with every point).

A pod's /proc/sys is read with one exec of `grep -sH . PATH...` (a missing file, e.g.
netdev_max_backlog inside a pod's network namespace, is left out silently): each line is
PATH:VALUE, and only what follows "/proc/sys/" names the sysctl, so the same reading
works wherever the files are.
"""
from __future__ import annotations

import time
from typing import Any

from .k8s_api import KubeError, PodState

# A pod waiting for one of these will not become ready by waiting longer.
HOPELESS = {"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError",
            "SysctlForbidden", "UnexpectedAdmissionError", "OutOfcpu", "OutOfmemory", "NodeAffinity", "Evicted"}
POLL = 0.5


def why(st: PodState) -> str:
    text = st.reason or st.phase
    return f"{text}: {st.message}" if st.message else text


def wait_ready(api: Any, namespace: str, hosts: list[Any], timeout: float) -> None:
    """Each pod Ready, or its host's not_ready says why not (bounded by `timeout`); a pod
    still waiting at the end says its last Warning event too (FailedCreatePodSandBox...)."""
    deadline = time.monotonic() + timeout
    waiting = list(hosts)
    last: dict[str, PodState | None] = {}
    while waiting:
        for h in list(waiting):
            st = last[h.name] = api.pod(namespace, h.pod)
            if st is not None and st.ready:
                h.not_ready, h.pod_ip, h.node = None, st.ip, st.node
                h.address = st.ip or ""
                waiting.remove(h)
            elif st is not None and (st.phase in ("Failed", "Succeeded") or st.reason in HOPELESS):
                h.not_ready, h.node = why(st), st.node
                waiting.remove(h)
        if not waiting:
            return
        if time.monotonic() >= deadline:
            for h in waiting:
                st = last.get(h.name)
                text = f"not Ready after {timeout:.0f}s" + (f" ({why(st)})" if st is not None else " (pod not found)")
                try:
                    events = api.pod_events(namespace, h.pod)
                except KubeError:
                    events = []
                h.not_ready = text + (f"; last event: {events[-1]}" if events else "")
            return
        time.sleep(POLL)


def wait_gone(api: Any, namespace: str, pods: list[str], timeout: float) -> None:
    """Deleted pods gone (a re-created pod of the same name must not meet its old self)."""
    deadline = time.monotonic() + timeout
    for pod in pods:
        while api.pod(namespace, pod) is not None and time.monotonic() < deadline:
            time.sleep(POLL)


def read_sysctls(host: Any, names: list[str]) -> dict[str, str]:
    """{sysctl: value} as `host` (a pod) sees them now; a sysctl it does not have is left out."""
    if not names:
        return {}
    r = host.run(["grep", "-sH", ".", *("/proc/sys/" + n.replace(".", "/") for n in names)], timeout=15)
    out: dict[str, str] = {}
    for line in r.stdout.splitlines():
        path, sep, value = line.partition(":")
        if sep and "/proc/sys/" in path:
            out[".".join(path.split("/proc/sys/", 1)[1].split("/"))] = " ".join(value.split())
    return {n: out[n] for n in names if n in out}


def route_mtu(host: Any) -> dict[str, Any]:
    """The interface of the default route and its MTU, as `host` sees them (a pod: the CNI's
    interface and MTU; a node pod with hostNetwork: the node's), from /proc/net/route."""
    try:
        rows = [ln.split() for ln in host.read_text("/proc/net/route").splitlines()[1:]]
        dev = next((r[0] for r in rows if len(r) > 1 and r[1] == "00000000"), None)
        if dev is None:
            return {}
        return {"interface": dev, "mtu": int(host.read_text(f"/sys/class/net/{dev}/mtu").strip())}
    except (OSError, ValueError):
        return {}
