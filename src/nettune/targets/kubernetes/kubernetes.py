"""The kubernetes target: iperf3/iperf between pods, through the API server.

Start (the constructor): the cluster is read and the study checked against it
(k8s_cluster: server version, nodes' kubelets, kernels and taints, the namespace's
PodSecurity level), then a namespace (unless the study names one) and a privileged pod per
node in `nodes` with node_access, each waited for until Ready.

Per point, in the point runner's order: prepare(point) (before the knobs) deletes test pods
of another pod shape (placement, network, via, pod_sysctls, image, resources:
k8s_manifests.pod_shape) and re-makes a test pod that died since (evicted); the knobs then
change node values; settle(point) (after them) makes the test pods the point needs and
re-makes them when a node value a pod copies at creation (tcp_rmem, tcp_wmem,
tcp_congestion_control: k8s_sysctl_classes) changed since they were made, so no pod keeps
the previous point's values, and reads the sysctls in force back inside each pod (stored
with every test: settings.hosts.NAME.sysctls). A pod that cannot run (SysctlForbidden,
Unschedulable, a PodSecurity refusal, Evicted...) fails that point's tests with the reason.

close() deletes everything this run made: the namespace nettune created (which takes its
pods and Services with it), or each object in a namespace the study named. run_study
calls it at the end, on error, Ctrl-C and SIGTERM; objects a killed run left carry its
labels and `nettune k8s clean` removes them. All API calls go through k8s_api (tests
replace it with a recording fake: API_FACTORY).
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ...errors import NettuneError
from ...record.point_state import PointState
from ...studyfile.k8s_sysctl_classes import ACTS, COPIED_NAMES
from ...studyfile.kubernetes_target import NODE_PREFIX
from ..base import TargetBase
from ..facts import linux_facts
from .k8s_api import STUDY_FLAGS, KubeApi, KubeError
from .k8s_cluster import plan_cluster
from .k8s_manifests import RunNames, namespace_manifest, node_pod, point_manifests, pod_shape
from .k8s_pods import read_sysctls, route_mtu, wait_gone, wait_ready
from .kubernetes_cpu import PodCgroupCpu
from .kubernetes_host import KubeHost

log = logging.getLogger("nettune.kubernetes")


def _real_api(spec: Any, flags: tuple[str, str] = STUDY_FLAGS) -> Any:
    return KubeApi(spec.context, spec.kubeconfig, flags)


API_FACTORY: Callable[..., Any] = _real_api  # the test seam: tests put a recording fake here


class KubeTarget(TargetBase):
    kind = "kubernetes"

    def __init__(self, study: Any, run: str | None = None):
        from ...plan.points import expand_and_check  # noqa: PLC0415 - every point's pods decide the cluster's checks

        spec = study.target
        self.spec, self.study = spec, study
        points = expand_and_check(study)
        bad = next((rp for rp in points if rp.target.via != "pod-ip" and study.workload.bind), None)
        if bad is not None:  # a swept via: the file's literal one is refused when it is read
            raise NettuneError(f'point #{bad.point.index}: [target] via = "service": the client connects to the Service\'s '
                               "ClusterIP, which the server cannot bind to; set [workload] bind = false")
        self.api = API_FACTORY(spec)
        self.cluster = plan_cluster(self.api, spec, [rp.target for rp in points], own_namespace=spec.namespace is None)
        self.notes: list[str] = list(self.cluster.notes)
        self.names = RunNames.make(study.name, spec.namespace, run)
        ns = self.names.namespace
        self.hosts: dict[str, KubeHost] = {h: KubeHost(h, self.api, ns, self.names.pod_name(h), h if spec.pods == "per-node" else None)
                                          for h in spec.pod_hosts}
        self.node_hosts = {h: KubeHost(h, self.api, ns, self.names.pod_name(h), h.removeprefix(NODE_PREFIX)) for h in spec.node_hosts}
        self.hosts.update(self.node_hosts)
        restore_pod = {"image": spec.image, "tolerations": [t.manifest() for t in spec.tolerations],
                       "image_pull_secrets": list(spec.image_pull_secrets)}
        for h in self.node_hosts.values():
            h.restore_pod = restore_pod  # what `nettune restore` needs to make a node pod again (k8s_reach)
        self._pod_cpu = {h: PodCgroupCpu(self.hosts[h]) for h in spec.pod_hosts}
        knob_sysctls = spec.knob_sysctls(study.knobs)
        # node values a new pod copies: compared before and after each point's knobs
        # (none with hostNetwork pods: they share the node's namespace and see every change at once)
        self._copied = list(dict.fromkeys([*COPIED_NAMES, *(n for n in knob_sysctls if n not in ACTS)])) if spec.node_access and spec.network != "host" else []
        # read back in every test pod at every point: the catalog, the pods' own and the knobs' sysctls
        self._readback = list(dict.fromkeys([*ACTS, *(n for rp in points for n in rp.target.pod_sysctls), *knob_sysctls]))
        self._made: list[tuple[str, str]] = []  # (kind, name) created in the namespace, oldest first
        self._shape: Any = None  # the pod shape of the test pods that exist (or were tried)
        self._copied_at: dict[str, dict[str, str]] = {}  # node -> the values the test pods copied when made
        self._pod_info: dict[str, Any] = {}  # when and why the test pods were last made
        self._sets = 0  # test pod sets made so far (a set's number tells the runs it served apart)
        self._sysctls: dict[str, dict[str, str]] = {}  # host -> sysctls read back in it this point
        self._closed = False
        try:
            if self.names.own_namespace:
                self._create(namespace_manifest(self.names, self.cluster.level))
            for h in self.node_hosts.values():
                self._create(node_pod(self.names, spec, str(h.node)))
            wait_ready(self.api, ns, list(self.node_hosts.values()), spec.ready_timeout)
            bad_nodes = [f"{h.name}: {h.not_ready}" for h in self.node_hosts.values() if h.not_ready]
            if bad_nodes:
                raise KubeError("node access pods not ready: " + "; ".join(bad_nodes))
            # the first point's test pods: the run asks them for their tools before the study
            self._shape = pod_shape(points[0].target)
            self._make_pods(points[0], "first point")
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

    def _test_pods(self) -> list[str]:
        return [self.hosts[h].pod for h in self.spec.pod_hosts]

    def _drop_pods(self) -> None:
        """Delete the test pods and Services (they are re-made by settle)."""
        for kind, name in [m for m in reversed(self._made) if m[0] == "Service" or (m[0] == "Pod" and m[1] in self._test_pods())]:
            self._delete(kind, name)
        for h in self.spec.pod_hosts:
            self.hosts[h].not_ready = "being re-created"
        wait_gone(self.api, self.names.namespace, self._test_pods(), self.spec.ready_timeout)
        self._copied_at = {}

    def _node_values(self) -> dict[str, dict[str, str]]:
        """The copied sysctls' values on each node now (read in its node pod)."""
        return {str(h.node): read_sysctls(h, self._copied) for h in self.node_hosts.values() if not h.not_ready} if self._copied else {}

    def _make_pods(self, rp: Any, why: str) -> None:
        """Make a point's test pods (and Services) and wait for them; a pod that cannot run
        keeps its reason in not_ready (that point's tests fail with it)."""
        self._copied_at = self._node_values()
        tests = [self.hosts[h] for h in self.spec.pod_hosts]
        made = point_manifests(self.names, rp.target, rp.workload.pairs)
        try:
            for m in made:
                self._create(m)
        except KubeError as e:  # PodSecurity admission, a quota: this point's pods cannot exist
            for h in tests:
                h.not_ready = str(e)
            self._sets += 1
            self._pod_info = {"set": self._sets, "made_at_point": rp.point.index, "why": why, "refused": str(e)}
            return
        wait_ready(self.api, self.names.namespace, tests, self.spec.ready_timeout)
        for m in made:
            if m["kind"] == "Service":
                host = self.hosts[m["metadata"]["labels"]["nettune/host"]]  # host names are DNS labels already
                host.address = self.api.service_ip(self.names.namespace, m["metadata"]["name"]) or host.address
        self._sets += 1
        self._pod_info = {"set": self._sets, "made_at_point": rp.point.index, "why": why, "ready": all(h.not_ready is None for h in tests)}

    def _died(self) -> str:
        """Why a test pod that was ready no longer is (evicted, deleted), or ''. A set whose
        pods never became ready is not tried again for the same shape."""
        if not self._pod_info.get("ready"):
            return ""
        for h in self.spec.pod_hosts:
            host = self.hosts[h]
            st = self.api.pod(self.names.namespace, host.pod)
            if st is None or not st.ready:
                return f"{host.pod} {'is gone' if st is None else (st.reason or st.phase).lower()}"
        return ""

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
        """Before the point's knobs: test pods of another shape, or one that died, go. Their
        successors are made now, unless node knobs may change a value they copy: then
        settle makes them, after the knobs (the first point's exist from the start, and
        settle re-makes them if the knobs changed such a value)."""
        shape, died = pod_shape(resolved.target), self._died()
        if shape != self._shape or died:
            self._drop_pods()
            self._shape, self._pod_info = shape, {}
            if not self._copied:
                self._make_pods(resolved, f"re-made: {died}" if died else "the pod shape changed")
        return self.state()

    def settle(self, resolved: Any) -> PointState:
        """After the point's knobs: make the point's test pods if prepare left them to now,
        re-make them if a node value they copied has changed, read their sysctls back."""
        if not self._pod_info:
            self._make_pods(resolved, "made after this point's node knobs")
        elif self._copied_at:
            now = self._node_values()
            changed = sorted({n for node, vals in now.items() for n, v in vals.items() if self._copied_at.get(node, {}).get(n) != v})
            if changed:
                self._drop_pods()
                self._make_pods(resolved, f"re-made: node value(s) {', '.join(changed)} changed (a pod copies them when it is made)")
        self._read_back()
        return self.state()

    def _read_back(self) -> None:
        """The sysctls in force inside each ready test pod; a note when a copied value differs
        from the one its node had when the pod was made (something else set it)."""
        self._sysctls = {}
        for h in self.spec.pod_hosts:
            host = self.hosts[h]
            if host.not_ready:
                continue
            try:
                self._sysctls[h] = got = read_sysctls(host, self._readback)
            except KubeError:
                continue
            node_had = self._copied_at.get(str(host.node), {})
            off = [f"{n} = {got[n]!r} (node {host.node}: {v!r})" for n, v in node_had.items() if n in got and got[n] != v]
            if off:
                self.notes.append(f"pod {host.pod}: {'; '.join(off)}: the value in the pod is not the node's it was made with")

    def state(self) -> PointState:
        hosts = {n: {"pod": h.pod, "node": h.node, "ip": h.pod_ip, "address": h.address, **({"not_ready": h.not_ready} if h.not_ready else {}),
                     **({"sysctls": self._sysctls[n]} if n in self._sysctls else {})}
                 for n, h in self.hosts.items()}
        out: dict[str, Any] = {"context": self.api.context, "namespace": self.names.namespace, "hosts": hosts,
                               "server_version": self.cluster.version}
        if self._pod_info:
            out["test_pods"] = dict(self._pod_info)
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
                route = route_mtu(h) if not h.not_ready else {}
                if route:  # a test pod: the CNI's interface and MTU; a node pod (hostNetwork): the node's
                    f["mtu" if h.privileged else "cni_mtu"], f["interface"] = route["mtu"], route["interface"]
            f.update(context=self.api.context, namespace=h.namespace, pod=h.pod, node=h.node, pod_ip=h.pod_ip)
            return f

        with ThreadPoolExecutor(min(8, len(self.hosts))) as ex:
            out = dict(zip(self.hosts, ex.map(one, self.hosts.values())))
        node_mtu = {out[h].get("node"): out[h]["mtu"] for h in self.node_hosts if "mtu" in out[h]}
        for h in self.spec.pod_hosts:  # the pod's MTU beside its node's (overlay: the pod's is smaller)
            if out[h].get("node") in node_mtu:
                out[h]["node_mtu"] = node_mtu[out[h]["node"]]
        for f in out.values():
            f["cluster"] = self.cluster.facts()
        return out

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
