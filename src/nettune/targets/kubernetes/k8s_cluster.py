"""What a kubernetes study needs of the cluster, decided when the run starts and before
anything is created: the server version (which sysctls PodSecurity admits), each node's
kubelet and kernel (which the kubelet admits), the nodes' taints against the study's
tolerations, and the PodSecurity level of the namespace the pods go to.

What can never work is refused here with one line and the fix (a named node that does not
exist or whose taints the pods do not tolerate, a namespace that does not exist or
enforces a stricter PodSecurity level than the pods need); what needs a cluster change
is said as a warning naming the exact kubelet flag and PodSecurity level, and the pod's
SysctlForbidden (or PodSecurity refusal) then fails the points that use it, with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import NettuneError
from ...studyfile.k8s_sysctl_classes import UNSAFE_FLAG, classify, plan_minor
from ...studyfile.kubernetes_target import NodePlacement
from .k8s_api import KubeError, NodeInfo
from .k8s_manifests import LEVELS, PSA, pod_security_level

HARD_EFFECTS = ("NoSchedule", "NoExecute")  # a pod that does not tolerate these is never placed there
# taints the node lifecycle controller sets for a node's condition (not-ready, unreachable,
# cordoned, disk/memory/PID pressure, network-unavailable): tolerating one would place the
# pods on a node that cannot run them, so the advice is the node's condition, never a toleration
CONDITION_TAINTS = "node.kubernetes.io/"


@dataclass
class ClusterPlan:
    version: str  # the API server's ("v1.29.3")
    level: str  # the PodSecurity level the pods need
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # warnings said before the study

    def facts(self) -> dict[str, Any]:
        return {"server_version": self.version, "pod_security_level": self.level,
                "nodes": {n: {"kernel": i.kernel, "kubelet": i.kubelet, "taints": [list(t) for t in i.taints]} for n, i in self.nodes.items()}}


def named_nodes(spec: Any) -> list[str]:
    out = list(spec.nodes) + ([spec.placement.server, spec.placement.client] if isinstance(spec.placement, NodePlacement) else [])
    return list(dict.fromkeys(out))


def tolerated(spec: Any, taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for t in spec.tolerations:
        if t.effect not in (None, effect):
            continue
        if t.operator == "Exists" and (not t.key or t.key == key):
            return True
        if t.operator == "Equal" and t.key == key and (t.value or "") == value:
            return True
    return False


def _taint_text(t: tuple[str, str, str]) -> str:
    return f"{t[0]}{'=' + t[1] if t[1] else ''}:{t[2]}"


def _toleration_toml(t: tuple[str, str, str]) -> str:
    key, value, effect = t
    body = f'key = "{key}", operator = "Equal", value = "{value}"' if value else f'key = "{key}", operator = "Exists"'
    return f'{{ {body}, effect = "{effect}" }}'


def check_nodes(spec: Any, nodes: dict[str, NodeInfo], context: str) -> None:
    """Nodes the study names exist and take its pods (a typo or a taint is not "Unschedulable")."""
    named = named_nodes(spec)
    missing = [n for n in named if n not in nodes]
    if missing:
        raise NettuneError(f"[target] names node(s) {', '.join(missing)}, not in cluster context {context!r} "
                           f"(nodes: {', '.join(sorted(nodes)) or 'none'}); fix nodes/placement (kubectl get nodes)")
    for n in named:
        if not nodes[n].ready:
            raise NettuneError(f"node {n} is not Ready ({nodes[n].not_ready}); fix it (kubectl describe node {n}) or use other nodes")
        hard = [t for t in nodes[n].taints if t[2] in HARD_EFFECTS and not tolerated(spec, t)]
        cond = [t for t in hard if t[0].startswith(CONDITION_TAINTS)]
        if cond:
            raise NettuneError(f"node {n} has taint(s) {', '.join(map(_taint_text, cond))}, which Kubernetes sets for a node condition "
                               f"(not ready, cordoned, under pressure): fix it (kubectl describe node {n}) or use other nodes")
        if hard:
            raise NettuneError(f"node {n} has taint(s) {', '.join(map(_taint_text, hard))} that the pods do not tolerate; add "
                               f"[target] tolerations = [{', '.join(map(_toleration_toml, hard))}] (or use other nodes)")


def namespace_level(labels: dict[str, str] | None, namespace: str, need: str) -> str:
    """A note on a namespace the study names, or NettuneError when it cannot take the pods."""
    if labels is None:
        raise NettuneError(f"[target] namespace {namespace!r} does not exist; create it (kubectl create namespace {namespace}) "
                           "or leave namespace out (nettune makes one per run)")
    have = labels.get(PSA)
    if have is None:
        return (f"namespace {namespace} has no {PSA} label: the cluster's default PodSecurity level applies, which nettune cannot "
                f"read; the pods need {need}")
    if have in LEVELS and LEVELS.index(have) < LEVELS.index(need):
        raise NettuneError(f"namespace {namespace} enforces PodSecurity {have!r}; the pods need {need!r} ("
                           f"{'node access pods are privileged' if need == 'privileged' else 'test pods run as root'}); "
                           f"kubectl label namespace {namespace} {PSA}={need} --overwrite, or use another namespace")
    return ""


def sysctl_notes(specs: list[Any], version: str, nodes: list[NodeInfo]) -> list[str]:
    """A warning per pod sysctl that needs a cluster change, on the nodes that need it."""
    notes: list[str] = []
    minor, vnote = plan_minor(version)
    if vnote:
        notes.append(vnote)
    seen: dict[str, list[str]] = {}
    for spec in specs:
        for name in spec.pod_sysctls:
            admitted = classify(name, version).safe  # PodSecurity admission: the server's version
            for n in nodes:  # the kubelet's admission: its own version and the node's kernel
                c = classify(name, n.kubelet or version, n.kernel, spec.network == "host")
                if c.per_pod and (c.safe is False or admitted is False):
                    seen.setdefault(name, []).append(n.name)
    for name, on in seen.items():
        c = classify(name, version)
        why = f" ({c.kernel_note})" if c.kernel_note else ""
        notes.append(f"pod sysctl {name} is not safe on Kubernetes {version}{why}: nodes {', '.join(sorted(set(on)))} need kubelet "
                     f"{UNSAFE_FLAG}={name} (KubeletConfiguration allowedUnsafeSysctls), and the namespace PodSecurity "
                     "privileged; else the pod fails with SysctlForbidden and its points are recorded as failed")
    return notes


def plan_cluster(api: Any, spec: Any, specs: list[Any], own_namespace: bool) -> ClusterPlan:
    """Read the cluster (version, nodes, namespace) and decide, before anything is created."""
    version = api.server_version()
    infos = {n.name: n for n in api.node_info()}
    check_nodes(spec, infos, api.context)
    use = [infos[n] for n in named_nodes(spec)] or [i for i in infos.values() if i.ready and all(t[2] not in HARD_EFFECTS or tolerated(spec, t) for t in i.taints)]
    if not use:
        raise NettuneError(f"no node of context {api.context!r} takes the pods: every node is not Ready or has a taint they do not "
                           "tolerate; fix the nodes or set [target] tolerations (kubectl get nodes; kubectl describe nodes | grep Taints)")
    level = pod_security_level(specs, version)
    plan = ClusterPlan(version, level, infos)
    if not own_namespace:
        try:
            note = namespace_level(api.namespace_labels(spec.namespace), spec.namespace, level)
        except KubeError as e:  # no right to read it (namespaces get): the pods' creation will tell
            note = f"cannot read namespace {spec.namespace}'s PodSecurity label ({e}); the pods need {level}"
        if note:
            plan.notes.append(note)
    plan.notes += sysctl_notes(specs, version, use)
    if not spec.image.partition("@")[2].startswith("sha256:"):
        plan.notes.append(f"image {spec.image} is a tag, not a digest: a moved tag changes what runs; pin it as NAME@sha256:...")
    return plan
