"""A recording fake of targets/k8s_api.KubeApi: no cluster exists on this machine.

It keeps the objects created (the manifests themselves), schedules pods the way the
manifest asks (nodeSelector, podAffinity/podAntiAffinity on the server pod's labels, a
nodeAffinity `In` list), answers readiness, and runs every exec as a real local process:
iperf3/iperf on loopback (every pod's IP is 127.0.0.1), so the engine's parsing is real.
Paths under /proc/sys/ are mapped into a directory (`sysctl_root`): per node for a node
access pod (name ending in -node), pod-NAME for a test pod, so knobs change files there,
never this machine's.
Every call is recorded in `calls` as a tuple (polling reads of pods only in `reads`).
"""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any, Callable

from nettune.targets.kubernetes.k8s_api import PodState

HOSTNAME = "kubernetes.io/hostname"


class LocalStream:
    """An exec stream backed by a local process."""

    def __init__(self, argv: list[str], stdin: bool):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self._out: list[str] = []
        self._err: list[str] = []
        self._cv = threading.Condition()
        self._eof = 0
        for pipe, buf in ((self.p.stdout, self._out), (self.p.stderr, self._err)):
            threading.Thread(target=self._reader, args=(pipe, buf), daemon=True).start()

    def _reader(self, pipe: Any, buf: list[str]) -> None:
        while True:
            chunk = pipe.readline()
            with self._cv:
                if not chunk:
                    self._eof += 1
                    self._cv.notify_all()
                    return
                buf.append(chunk)
                self._cv.notify_all()

    def read(self, timeout: float) -> tuple[str, str]:
        with self._cv:
            if not self._out and not self._err and self._eof < 2:
                self._cv.wait(timeout)
            out, err = "".join(self._out), "".join(self._err)
            self._out.clear()
            self._err.clear()
            return out, err

    def is_open(self) -> bool:
        with self._cv:
            done = self._eof == 2
        if done:
            self.p.wait()
        return not done or bool(self._out or self._err)

    def returncode(self) -> int | None:
        return self.p.poll()

    def write_stdin(self, data: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def close(self) -> None:
        if self.p.stdin:
            self.p.stdin.close()


class FakeKube:
    def __init__(self, nodes: tuple[str, ...] = ("n1", "n2", "n3"), context: str = "fake-ctx", sysctl_root: Path | None = None):
        self.context, self.kubeconfig = context, None
        self.node_names = list(nodes)
        self.calls: list[tuple[Any, ...]] = []
        self.reads: list[tuple[str, str]] = []
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        self.placed: dict[tuple[str, str], str] = {}  # (namespace, pod) -> node
        self.failing: dict[str, tuple[str, str]] = {}  # pod name -> (reason, message): never ready
        self.sysctl_root = sysctl_root
        self.on_exec: Callable[[str, list[str]], None] | None = None  # a hook (e.g. send a signal mid-test)
        self.down = False  # the API server stops answering (deletes fail)

    # -- objects ---------------------------------------------------------------------
    def create(self, m: dict[str, Any]) -> None:
        kind, meta = m["kind"], m["metadata"]
        ns = meta.get("namespace")
        self.calls.append(("create", kind, ns, meta["name"]))
        if kind == "Namespace":
            self.objects[(kind, None, meta["name"])] = m
            return
        assert ("Namespace", None, ns) in self.objects or ns == "given", f"namespace {ns} does not exist"
        self.objects[(kind, ns, meta["name"])] = m
        if kind == "Pod":
            self.placed[(ns, meta["name"])] = self._schedule(ns, m["spec"])

    def _labelled(self, ns: str, labels: dict[str, str]) -> str | None:
        for (kind, n, name), m in self.objects.items():
            if kind == "Pod" and n == ns and all(m["metadata"]["labels"].get(k) == v for k, v in labels.items()):
                return self.placed.get((ns, name))
        return None

    def _schedule(self, ns: str, spec: dict[str, Any]) -> str:
        if "nodeSelector" in spec:
            return str(spec["nodeSelector"][HOSTNAME])
        allowed = list(self.node_names)
        aff = spec.get("affinity", {})
        for term in aff.get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []):
            allowed = [n for n in allowed if n in term["matchExpressions"][0]["values"]]
        for key, same in (("podAffinity", True), ("podAntiAffinity", False)):
            for term in aff.get(key, {}).get("requiredDuringSchedulingIgnoredDuringExecution", []):
                other = self._labelled(ns, term["labelSelector"]["matchLabels"])
                allowed = [n for n in allowed if (n == other) == same]
        return allowed[0] if allowed else ""

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        self.calls.append(("delete", kind, namespace, name))
        if self.down:
            from nettune.targets.kubernetes.k8s_api import KubeError

            raise KubeError("cannot reach the API server")
        self.objects.pop((kind, namespace, name), None)
        if kind == "Namespace":
            for key in [k for k in self.objects if k[1] == name]:
                del self.objects[key]

    def pod(self, namespace: str, name: str) -> PodState | None:
        self.reads.append((namespace, name))
        if ("Pod", namespace, name) not in self.objects:
            return None
        node = self.placed.get((namespace, name)) or None
        if name in self.failing:
            reason, msg = self.failing[name]
            return PodState("Pending", False, None, node, reason, msg)
        if node is None:
            return PodState("Pending", False, None, None, "Unschedulable", "0/3 nodes are available")
        return PodState("Running", True, "127.0.0.1", node)

    def service_ip(self, namespace: str, name: str) -> str | None:
        return "127.0.0.1" if ("Service", namespace, name) in self.objects else None

    def find(self, selector: str) -> list[tuple[str, str | None, str]]:
        want = dict(kv.split("=", 1) for kv in selector.split(","))
        self.calls.append(("find", selector))
        return [(k, ns, n) for (k, ns, n), m in self.objects.items() if all(m["metadata"]["labels"].get(a) == b for a, b in want.items())]

    def nodes(self) -> list[str]:
        return list(self.node_names)

    # -- exec ------------------------------------------------------------------------
    def exec(self, namespace: str, pod: str, argv: list[str], stdin: bool = False) -> LocalStream:
        self.calls.append(("exec", pod, tuple(argv)))
        if self.on_exec is not None:
            self.on_exec(pod, argv)
        node = self.placed.get((namespace, pod))
        if self.sysctl_root is not None:  # the node's /proc/sys (a test pod's own: pod-NAME), in a directory
            root = self.sysctl_root / (str(node) if pod.endswith("-node") else f"pod-{pod}")
            argv = [str(root) + a if a.startswith("/proc/sys/") else a for a in argv]
        return LocalStream(argv, stdin)

    def execs(self, pod: str | None = None) -> list[tuple[str, ...]]:
        return [c[2] for c in self.calls if c[0] == "exec" and (pod is None or c[1] == pod)]

    def made(self) -> list[tuple[str, str | None, str]]:
        return [c[1:] for c in self.calls if c[0] == "create"]


def sysctl_tree(root: Path, nodes: list[str], values: dict[str, str]) -> None:
    for n in nodes:
        for name, v in values.items():
            p = root / n / "proc/sys" / name.replace(".", "/")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(v + "\n")
