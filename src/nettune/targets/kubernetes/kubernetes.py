"""The kubernetes target: iperf3/iperf between pods, through the API server.

Start (the constructor): a namespace (unless the study names one), a privileged pod
per node in `nodes` with node_access, and the test pods of the first point, each waited
for until Ready (bounded by ready_timeout). prepare(point) re-creates the test pods (and
the Service) only when the point changes what makes them (placement, network, via,
pod_sysctls, image: k8s_manifests.pod_shape). A test pod that never becomes ready fails
that point's tests with the reason (ImagePullBackOff, Unschedulable, SysctlForbidden...);
at start it stops the study, after deleting what was made.

close() deletes everything this run made: the namespace nettune created (which takes its
pods and Services with it), or each object in a namespace the study named. run_study
calls it at the end, on error, Ctrl-C and SIGTERM; objects a killed run left carry its
labels and `nettune k8s clean` removes them. All API calls go through k8s_api (tests
replace it with a recording fake: API_FACTORY).
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ...errors import NettuneError
from ...studyfile.kubernetes_target import NODE_PREFIX, NodePlacement
from ..base import TargetBase
from ..facts import linux_facts
from .k8s_api import KubeApi, KubeError, PodState
from .k8s_manifests import RunNames, namespace_manifest, node_pod, point_manifests, pod_shape
from .kubernetes_cpu import PodCgroupCpu
from .kubernetes_host import KubeHost
from ...record.point_state import PointState

log = logging.getLogger("nettune.kubernetes")
# A pod waiting for one of these will not become ready by waiting longer.
HOPELESS = {"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError",
            "SysctlForbidden", "UnexpectedAdmissionError", "OutOfcpu", "OutOfmemory", "NodeAffinity"}
POLL = 0.5


def _real_api(spec: Any) -> Any:
    return KubeApi(spec.context, spec.kubeconfig)


API_FACTORY: Callable[[Any], Any] = _real_api  # the test seam: tests put a recording fake here


class KubeTarget(TargetBase):
    kind = "kubernetes"

    def __init__(self, study: Any, run: str | None = None):
        from ...plan.points import expand_and_check  # noqa: PLC0415 - the first point's pods

        spec = study.target
        if spec.via != "pod-ip" and study.workload.bind:
            raise NettuneError('[target] via = "service": the client connects to the Service\'s ClusterIP, which the '
                               "server cannot bind to; set [workload] bind = false")
        self.spec, self.study = spec, study
        self.api = API_FACTORY(spec)
        _check_nodes(self.api, spec)
        self.names = RunNames.make(study.name, spec.namespace, run)
        ns = self.names.namespace
        self.hosts: dict[str, KubeHost] = {h: KubeHost(h, self.api, ns, self.names.pod_name(h), h if spec.pods == "per-node" else None)
                                          for h in spec.pod_hosts}
        self.node_hosts = {h: KubeHost(h, self.api, ns, self.names.pod_name(h), h.removeprefix(NODE_PREFIX)) for h in spec.node_hosts}
        self.hosts.update(self.node_hosts)
        self._pod_cpu = {h: PodCgroupCpu(self.hosts[h]) for h in spec.pod_hosts}
        self._made: list[tuple[str, str]] = []  # (kind, name) created in the namespace, oldest first
        self._shape: Any = None
        self._closed = False
        self.notes: list[str] = []
        try:
            if self.names.own_namespace:
                self._create(namespace_manifest(self.names, spec.node_access))
            for h in self.node_hosts.values():
                self._create(node_pod(self.names, spec, str(h.node)))
            self._wait(list(self.node_hosts.values()))
            bad = [f"{h.name}: {h.not_ready}" for h in self.node_hosts.values() if h.not_ready]
            if bad:
                raise KubeError("node access pods not ready: " + "; ".join(bad))
            first = expand_and_check(study)[0]
            self._pods(first.target, first.workload.pairs)
            bad = [f"{self.hosts[h].pod} ({h}): {self.hosts[h].not_ready}" for h in spec.pod_hosts if self.hosts[h].not_ready]
            if bad:
                raise KubeError("test pods not ready: " + "; ".join(bad))
        except BaseException:
            self.close()
            raise

    # -- objects -----------------------------------------------------------------------
    def _create(self, manifest: dict[str, Any]) -> None:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        self._made.append((kind, name))  # before the call: a timeout may still have created it
        self.api.create(manifest)

    def _delete(self, kind: str, name: str) -> None:
        self.api.delete(kind, None if kind == "Namespace" else self.names.namespace, name)
        if (kind, name) in self._made:
            self._made.remove((kind, name))

    def _pods(self, spec: Any, pairs: Any) -> None:
        """Make the test pods (and Services) of a point whose pod shape differs from now's."""
        shape = pod_shape(spec)
        if shape == self._shape:
            return
        for kind, name in [m for m in reversed(self._made) if m[0] == "Service" or (m[0] == "Pod" and m[1] in self._test_pods())]:
            self._delete(kind, name)
        for h in self.spec.pod_hosts:
            self.hosts[h].not_ready = "being re-created"
        self._wait_gone()
        self._shape = shape
        for m in point_manifests(self.names, spec, pairs):
            self._create(m)
        tests = [self.hosts[h] for h in spec.pod_hosts]
        self._wait(tests)
        for m in point_manifests(self.names, spec, pairs):
            if m["kind"] == "Service":
                host = self.hosts[m["metadata"]["labels"]["nettune/host"]]  # host names are DNS labels already
                host.address = self.api.service_ip(self.names.namespace, m["metadata"]["name"]) or host.address

    def _test_pods(self) -> set[str]:
        return {self.hosts[h].pod for h in self.spec.pod_hosts}

    def _wait_gone(self) -> None:
        """Deleted test pods gone (a re-created pod of the same name must not meet its old self)."""
        deadline = time.monotonic() + self.spec.ready_timeout
        for pod in self._test_pods():
            while self.api.pod(self.names.namespace, pod) is not None and time.monotonic() < deadline:
                time.sleep(POLL)

    def _wait(self, hosts: list[KubeHost]) -> None:
        """Each pod Ready, or its host's not_ready says why not (bounded by ready_timeout)."""
        deadline = time.monotonic() + self.spec.ready_timeout
        waiting = list(hosts)
        last: dict[str, PodState | None] = {}
        while waiting:
            for h in list(waiting):
                st = last[h.name] = self.api.pod(self.names.namespace, h.pod)
                if st is not None and st.ready:
                    h.not_ready, h.pod_ip, h.node = None, st.ip, st.node
                    h.address = st.ip or ""
                    waiting.remove(h)
                elif st is not None and (st.phase in ("Failed", "Succeeded") or st.reason in HOPELESS):
                    h.not_ready = _why(st)
                    waiting.remove(h)
            if not waiting:
                return
            if time.monotonic() >= deadline:
                for h in waiting:
                    st = last.get(h.name)
                    h.not_ready = f"not Ready after {self.spec.ready_timeout:.0f}s" + (f" ({_why(st)})" if st is not None else " (pod not found)")
                return
            time.sleep(POLL)

    # -- the Target protocol -------------------------------------------------------------
    @property
    def test_hosts(self) -> list[str]:
        return list(self.spec.pod_hosts)

    @property
    def extra_machines(self) -> dict[str, Any]:
        """Sampled during every test: each test pod's cgroup CPU ("pod:NAME") and, with
        node_access, each node's CPU ("node:NAME")."""
        return {f"pod:{h}": self._pod_cpu[h] for h in self.spec.pod_hosts} | dict(self.node_hosts)

    @property
    def warnings(self) -> list[str]:
        return list(self.notes)

    def prepare(self, resolved: Any) -> PointState:
        self._pods(resolved.target, resolved.workload.pairs)
        return self.state()

    def state(self) -> PointState:
        hosts = {n: {"pod": h.pod, "node": h.node, "ip": h.pod_ip, "address": h.address, **({"not_ready": h.not_ready} if h.not_ready else {})}
                 for n, h in self.hosts.items()}
        out: dict[str, Any] = {"context": self.api.context, "namespace": self.names.namespace, "hosts": hosts}
        if self.spec.pods == "server-client":
            s, c = self.hosts["server"].node, self.hosts["client"].node
            out["same_node"] = None if not (s and c) else s == c
        return PointState.model_validate(out)

    def facts(self) -> dict[str, dict[str, Any]]:
        def one(h: KubeHost) -> dict[str, Any]:
            f: dict[str, Any] = {}
            if not h.not_ready:
                try:
                    f = linux_facts(h)
                except KubeError as e:
                    f = {"error": str(e)}
            f.update(context=self.api.context, namespace=h.namespace, pod=h.pod, node=h.node, pod_ip=h.pod_ip)
            return f

        with ThreadPoolExecutor(min(8, len(self.hosts))) as ex:
            return dict(zip(self.hosts, ex.map(one, self.hosts.values())))

    def close(self) -> None:
        """Delete what this run made; say what could not be (`nettune k8s clean` removes it)."""
        if self._closed:
            return
        self._closed = True
        for h in self.hosts.values():
            try:
                h.close()
            except Exception:  # the pod is gone already
                pass
        left: list[str] = []
        made = list(reversed(self._made))
        if self.names.own_namespace and ("Namespace", self.names.namespace) in made:
            made = [("Namespace", self.names.namespace)]  # its pods and Services go with it
        for kind, name in made:
            try:
                self._delete(kind, name)
            except KubeError as e:
                left.append(f"{kind} {name} ({e})")
        if left:
            msg = (f"could not delete {', '.join(left)}; remove them with `nettune k8s clean --context {self.api.context} "
                   f"--run {self.names.run}`")
            log.warning(msg)
            self.notes.append(msg)


def _check_nodes(api: Any, spec: Any) -> None:
    """Nodes the study names exist, before anything is created (a typo is not "Unschedulable")."""
    named = list(spec.nodes) + ([spec.placement.server, spec.placement.client] if isinstance(spec.placement, NodePlacement) else [])
    if not named:
        return
    have = set(api.nodes())
    missing = [n for n in dict.fromkeys(named) if n not in have]
    if missing:
        raise NettuneError(f"[target] names node(s) {', '.join(missing)}, not in cluster context {api.context!r} "
                           f"(nodes: {', '.join(sorted(have)) or 'none'}); fix nodes/placement (kubectl get nodes)")


def _why(st: PodState) -> str:
    text = st.reason or st.phase
    return f"{text}: {st.message}" if st.message else text
