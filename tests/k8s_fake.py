"""A recording fake of targets/kubernetes/k8s_api.KubeApi: no cluster exists on this machine.

It keeps the objects created (the manifests themselves), schedules pods the way the
manifest asks (nodeSelector, podAffinity/podAntiAffinity on the server pod's labels, a
nodeAffinity `In` list, the nodes' taints against the pod's tolerations), answers
readiness, and runs every exec as a real local process: iperf3/iperf on loopback (every
pod's IP is 127.0.0.1), so the engine's parsing is real.

A cluster's admission comes from Kubernetes' sources (k8s_fake_admission.py): PodSecurity
at create (the namespace's enforce label, the server `version`), the kubelet's sysctl
admission when the pod is read (each node's kubelet version, kernel and
`allowed_unsafe`: SysctlForbidden).

Paths under /proc/sys/ are mapped into a directory (`sysctl_root`): NODE/proc/sys for a
node access pod (name ending in -node), and for a test pod pod-NAME/proc/sys, made when
the pod is created the way the kernel makes a network namespace (the lab measures it:
tests/test_k8s_sysctl_reach.py): a sysctl a new namespace copies gets the node's value
at that moment, a node-level one stays the node's (the exec reads the node's file), the
pod's own securityContext.sysctls are written in. /sys/fs/cgroup/ paths of a test pod map
to cgroup_root/pod-NAME/ when set (the throttling counters), /proc/net/route and
/sys/class/net/ to net_root/pod-NAME/ (a node pod: net_root/NODE/) when set (MTUs).
Every call is recorded in `calls` as a tuple (polling reads of pods only in `reads`).
"""
from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable

from k8s_fake_admission import kubelet_reject, podsecurity_reject
from nettune.studyfile.k8s_sysctl_classes import COPIED, NODE, where
from nettune.targets.kubernetes.k8s_api import KubeError, NodeInfo, PodState

HOSTNAME = "kubernetes.io/hostname"
PSA = "pod-security.kubernetes.io/enforce"


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
    def __init__(self, nodes: tuple[str, ...] = ("n1", "n2", "n3"), context: str = "fake-ctx", sysctl_root: Path | None = None,
                 version: str = "v1.29.2", kernel: str = "6.1.0-18-amd64"):
        self.context, self.kubeconfig = context, None
        self.version = version
        self.node_names = list(nodes)
        self.kernels: dict[str, str] = {n: kernel for n in nodes}
        self.kubelets: dict[str, str] = {}  # node -> kubelet version (default: the server's)
        self.taints: dict[str, list[tuple[str, str, str]]] = {}
        self.allowed_unsafe: dict[str, list[str]] = {}  # node -> its kubelet's --allowed-unsafe-sysctls
        self.calls: list[tuple[Any, ...]] = []
        self.reads: list[tuple[str, str]] = []
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        self.manifests: list[dict[str, Any]] = []  # every object sent to create, in order
        self.placed: dict[tuple[str, str], str] = {}  # (namespace, pod) -> node
        self.failing: dict[str, tuple[str, str]] = {}  # pod name -> (reason, message): never ready
        self.evicted: dict[str, str] = {}  # pod name -> eviction message (the pod failed after it ran)
        self.events: dict[str, list[str]] = {}
        self.sysctl_root = sysctl_root
        self.cgroup_root: Path | None = None
        self.net_root: Path | None = None  # /proc/net/route and /sys/class/net per pod (and node), when set
        self.on_exec: Callable[[str, list[str]], None] | None = None  # a hook (e.g. send a signal mid-test)
        self.down = False  # the API server stops answering (deletes fail)

    # -- cluster ---------------------------------------------------------------------
    def server_version(self) -> str:
        self.calls.append(("version",))
        if self.down:
            raise KubeError(f"read the server version: cannot reach the API server of context {self.context!r}")
        return self.version

    def node_info(self) -> list[NodeInfo]:
        return [NodeInfo(n, self.kernels.get(n, ""), self.kubelets.get(n, self.version), list(self.taints.get(n, []))) for n in self.node_names]

    def nodes(self) -> list[str]:
        return list(self.node_names)

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        m = self.objects.get(("Namespace", None, name))
        return None if m is None else dict(m["metadata"].get("labels") or {})

    # -- objects ---------------------------------------------------------------------
    def create(self, m: dict[str, Any]) -> None:
        kind, meta = m["kind"], m["metadata"]
        ns = meta.get("namespace")
        self.calls.append(("create", kind, ns, meta["name"]))
        self.manifests.append(m)
        if kind == "Namespace":
            self.objects[(kind, None, meta["name"])] = m
            return
        assert ("Namespace", None, ns) in self.objects or ns == "given", f"namespace {ns} does not exist"
        if kind == "Pod":
            level = (self.namespace_labels(ns) or {}).get(PSA, "privileged")
            refused = podsecurity_reject(m, level, self.version)
            if refused:
                raise KubeError(f"create Pod {meta['name']}: {refused}")
        self.objects[(kind, ns, meta["name"])] = m
        if kind == "Pod":
            node = self.placed[(ns, meta["name"])] = self._schedule(ns, m["spec"])
            self._new_netns(meta["name"], node, m["spec"])

    def _new_netns(self, pod: str, node: str, spec: dict[str, Any]) -> None:
        """A test pod's /proc/sys as the kernel makes a new network namespace: copied values
        from the node now, then the pod's own sysctls (the runtime writes them)."""
        if self.sysctl_root is None or pod.endswith("-node") or not node:
            return
        own, src = self.sysctl_root / f"pod-{pod}" / "proc/sys", self.sysctl_root / node / "proc/sys"
        shutil.rmtree(own, ignore_errors=True)
        for f in src.rglob("*") if src.is_dir() else []:
            name = ".".join(f.relative_to(src).parts)
            if f.is_file() and where(name) == COPIED:
                (own / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
                (own / f.relative_to(src)).write_text(f.read_text())
        for s in (spec.get("securityContext") or {}).get("sysctls") or []:
            path = own / s["name"].replace(".", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(s["value"] + "\n")

    def _labelled(self, ns: str, labels: dict[str, str]) -> str | None:
        for (kind, n, name), m in self.objects.items():
            if kind == "Pod" and n == ns and all(m["metadata"]["labels"].get(k) == v for k, v in labels.items()):
                return self.placed.get((ns, name))
        return None

    def _tolerates(self, spec: dict[str, Any], node: str) -> bool:
        def match(t: dict[str, Any], key: str, value: str, effect: str) -> bool:
            if t.get("effect") not in (None, "", effect):
                return False
            if t.get("operator") == "Exists":
                return not t.get("key") or t.get("key") == key
            return t.get("key") == key and (t.get("value") or "") == value

        return all(effect == "PreferNoSchedule" or any(match(t, key, value, effect) for t in spec.get("tolerations") or [])
                   for key, value, effect in self.taints.get(node, []))

    def _schedule(self, ns: str, spec: dict[str, Any]) -> str:
        allowed = [n for n in self.node_names if self._tolerates(spec, n)]
        sel = spec.get("nodeSelector") or {}
        if HOSTNAME in sel:
            return str(sel[HOSTNAME]) if sel[HOSTNAME] in allowed else ""
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
            raise KubeError("cannot reach the API server")
        self.objects.pop((kind, namespace, name), None)
        self.evicted.pop(name, None)
        if kind == "Namespace":
            for key in [k for k in self.objects if k[1] == name]:
                del self.objects[key]

    def pod(self, namespace: str, name: str) -> PodState | None:
        self.reads.append((namespace, name))
        m = self.objects.get(("Pod", namespace, name))
        if m is None:
            return None
        node = self.placed.get((namespace, name)) or None
        if name in self.failing:
            reason, msg = self.failing[name]
            return PodState("Pending", False, None, node, reason, msg)
        if node is None:
            return PodState("Pending", False, None, None, "Unschedulable", f"0/{len(self.node_names)} nodes are available")
        rejected = kubelet_reject(m, self.kubelets.get(node, self.version), self.kernels.get(node, ""), self.allowed_unsafe.get(node, []))
        if rejected:  # the kubelet's admission: the pod fails at once (pkg/kubelet/sysctl/allowlist.go)
            return PodState("Failed", False, None, node, "SysctlForbidden", f"Pod was rejected: {rejected}")
        if name in self.evicted:
            return PodState("Failed", False, None, node, "Evicted", self.evicted[name])
        return PodState("Running", True, "127.0.0.1", node)

    def pod_events(self, namespace: str, name: str) -> list[str]:
        return list(self.events.get(name, []))

    def service_ip(self, namespace: str, name: str) -> str | None:
        return "127.0.0.1" if ("Service", namespace, name) in self.objects else None

    def find(self, selector: str, namespace: str | None = None) -> list[tuple[str, str | None, str]]:
        want = dict(kv.split("=", 1) for kv in selector.split(","))
        self.calls.append(("find", selector) + ((namespace,) if namespace else ()))
        return [(k, ns, n) for (k, ns, n), m in self.objects.items() if all(m["metadata"]["labels"].get(a) == b for a, b in want.items())
                and (namespace is None or (ns == namespace and k != "Namespace"))]

    # -- exec ------------------------------------------------------------------------
    def _path(self, pod: str, node: str | None, path: str) -> str:
        root = self.sysctl_root
        if root is not None and path.startswith("/proc/sys/"):
            name = ".".join(path[len("/proc/sys/"):].split("/"))
            if pod.endswith("-node") or where(name) == NODE:  # a node-level sysctl: the pod sees the node's
                return str(root / str(node)) + path
            return str(root / f"pod-{pod}") + path
        if self.cgroup_root is not None and path.startswith("/sys/fs/cgroup/") and not pod.endswith("-node"):
            return str(self.cgroup_root / f"pod-{pod}") + path[len("/sys/fs/cgroup"):]
        if self.net_root is not None and (path == "/proc/net/route" or path.startswith("/sys/class/net/")):
            return str(self.net_root / (str(node) if pod.endswith("-node") else f"pod-{pod}")) + path  # a node pod: hostNetwork
        return path

    def exec(self, namespace: str, pod: str, argv: list[str], stdin: bool = False) -> LocalStream:
        self.calls.append(("exec", pod, tuple(argv)))
        if self.on_exec is not None:
            self.on_exec(pod, argv)
        if pod in self.evicted:
            raise KubeError(f"exec in pod {pod}: 400 Bad Request: container not found (the pod was evicted)")
        node = self.placed.get((namespace, pod))
        return LocalStream([self._path(pod, node, a) for a in argv], stdin)

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


def net_tree(root: Path, who: str, dev: str, mtu: int) -> None:
    """A default route through `dev` of `mtu`, as pod-NAME or NODE sees it (FakeKube.net_root)."""
    (root / who / "proc/net").mkdir(parents=True, exist_ok=True)
    (root / who / "proc/net/route").write_text("Iface\tDestination\tGateway\tFlags\n" f"{dev}\t00000000\t0101A8C0\t0003\n")
    (root / who / "sys/class/net" / dev).mkdir(parents=True, exist_ok=True)
    (root / who / "sys/class/net" / dev / "mtu").write_text(f"{mtu}\n")


# A kubeconfig whose one context points at a closed port: the real client, no API server.
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: me
  user: {token: "t"}
contexts:
- name: lab
  context: {cluster: nowhere, user: me}
current-context: lab
"""


def install(monkeypatch: Any, tmp_path: Path, **kw: Any) -> FakeKube:
    """A FakeKube in place of the API layer, with the run's state and run directories in tmp_path."""
    from nettune.targets.kubernetes import kubernetes as k8s

    f = FakeKube(**kw)
    monkeypatch.setattr(k8s, "API_FACTORY", lambda spec, *flags: f)
    monkeypatch.setenv("NETTUNE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETTUNE_RUN_DIR", str(tmp_path / "run"))
    return f
