"""`[target] kind = "kubernetes"`: iperf3/iperf between pods of a real cluster.

    [target]
    kind = "kubernetes"
    context = "prod-eu"              # kubeconfig context (default: the current one)
    namespace = "nettune"            # default: a fresh namespace per run, deleted at the end
    placement = "{placement}"        # same-node | cross-node | { server = "node-a", client = "node-b" }
    network = "pod"                  # pod | host (hostNetwork)
    via = "pod-ip"                   # pod-ip | service (a ClusterIP Service in front of the server)
    node_access = true               # a privileged pod per node in `nodes`: node CPU and node knobs
    nodes = ["node-a", "node-b"]

Without `nodes` the test hosts are two pods, `server` and `client`, placed by `placement`.
With `pods = "per-node"` the test hosts are the nodes in `nodes` (one pod pinned to
each), for `[workload] pairs = "mesh" | "star:NODE"`; with `node_access = true` every node in `nodes` also gets a host named
`node:NAME` (its privileged pod) on which node knobs act and whose CPU is sampled.
`pod_sysctls` are namespaced sysctls set on the test pods (securityContext.sysctls): a
pod setting, so the pods are re-created when a point changes them.

What can never work is refused here, before anything exists (study_problem): a node-level
sysctl as a pod sysctl, a knob on a test pod (a pod cannot change its own settings), a
node knob whose value never reaches a pod's network namespace (k8s_sysctl_classes).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, StringConstraints, field_validator, model_validator

from .k8s_sysctl_classes import DEFAULT, IPC, NODE, WHERE_TEXT, where
from .field_types import OtherMachines, Strict

# nicolaka/netshoot carries iperf3 and iperf (2.x), sh and kill; pinned by digest so a run is
# repeatable and a moved tag cannot change what runs (docs/kubernetes.md says where it comes from)
DEFAULT_IMAGE = "nicolaka/netshoot:v0.13@sha256:a20c2531bf35436ed3766cd6cfe89d352b050ccc4d7005ce6400adf97503da1b"
QUANTITY = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # a DNS subdomain
SYSCTL_NAME = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
Template = Annotated[str, StringConstraints(pattern=r"\{[^{}]+\}")]
NODE_PREFIX = "node:"


class NodePlacement(Strict):
    """Both pods pinned to named nodes (nodeSelector kubernetes.io/hostname)."""

    server: str
    client: str

    @field_validator("server", "client")
    @classmethod
    def _node(cls, v: str) -> str:
        if not NODE_NAME.match(v):
            raise ValueError(f"{v!r} is not a node name (lower-case letters, digits, '-' and '.')")
        return v


Placement = Union[Literal["same-node", "cross-node"], NodePlacement, Template]


class Toleration(Strict):
    """A taint the pods tolerate, as in a pod spec (kubectl describe node shows the taints)."""

    key: str | None = Field(default=None, description="The taint's key; empty with operator Exists: every taint.")
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = Field(default=None, description="The taint's value (operator Equal).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(default=None, description="Only taints of this effect (default: every effect).")

    @model_validator(mode="after")
    def _check(self) -> "Toleration":
        if self.operator == "Exists" and self.value is not None:
            raise ValueError('operator = "Exists" takes no value (it tolerates every value of the key)')
        if self.operator == "Equal" and not self.key:
            raise ValueError('operator = "Equal" needs a key (an empty key with operator = "Exists" tolerates every taint)')
        return self

    def manifest(self) -> dict[str, str]:
        return {k: v for k, v in {"key": self.key, "operator": self.operator, "value": self.value, "effect": self.effect}.items() if v}


class KubernetesTargetSpec(Strict, OtherMachines):
    """Pods of a Kubernetes cluster, reached through the API server (exec)."""

    kind: Literal["kubernetes"]
    context: str | None = Field(default=None, description="kubeconfig context (default: the current context).")
    kubeconfig: str | None = Field(default=None, description="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")
    namespace: str | None = Field(default=None, description="Namespace to create the pods in (must exist); default: a fresh nettune-<study>-<run> namespace, deleted at the end.")
    image: str = Field(default=DEFAULT_IMAGE, description=f"Image of every pod; needs sh, kill, iperf3 and iperf (default {DEFAULT_IMAGE}).")
    placement: Placement = Field(default="cross-node", description='"same-node" (podAffinity), "cross-node" (podAntiAffinity) or {server = NODE, client = NODE}; sweepable.')
    network: Literal["pod", "host"] | Template = Field(default="pod", description='"pod": the CNI\'s pod network; "host": hostNetwork (the node\'s own interfaces).')
    via: Literal["pod-ip", "service"] | Template = Field(default="pod-ip", description='"pod-ip": the client connects to the server pod\'s IP; "service": to a ClusterIP Service in front of it (needs [workload] bind = false).')
    node_access: bool = Field(default=False, description="A privileged hostPID/hostNetwork pod per node in `nodes`, as host node:NAME: node CPU and node knobs (sysctls).")
    nodes: list[str] = Field(default_factory=list, description="Nodes nettune may use. With [workload] pairs: one test pod per node, the hosts named after the nodes. With node_access: the nodes that get a privileged pod.")
    pods: Literal["server-client", "per-node"] = Field(default="server-client", description='"server-client": two pods, server and client, placed by `placement`; "per-node": one pod pinned to each node in `nodes`, the hosts named after the nodes (for [workload] pairs = "mesh" or "star:NODE").')
    pod_sysctls: dict[str, Union[str, int]] = Field(default_factory=dict, description="Namespaced sysctls on the test pods (securityContext.sysctls, scope \"pod\"); sweepable values.")
    ready_timeout: float = Field(default=120.0, gt=0, le=3600, description="Seconds a pod may take to become Ready before the point fails with the reason.")
    tolerations: list[Toleration] = Field(default_factory=list, description="Taints the test pods and node pods tolerate (tainted nodes: kubectl describe node).")
    cpu: int = Field(default=2, ge=0, le=1024, description="Whole CPUs each test pod requests and is limited to (Guaranteed QoS: a static CPU manager gives it cores of its own); 0: no requests or limits (BestEffort).")
    memory: Annotated[str, StringConstraints(pattern=QUANTITY)] = Field(default="1Gi", description="Memory each test pod requests and is limited to (with cpu > 0), e.g. \"1Gi\".")
    image_pull_secrets: list[str] = Field(default_factory=list, description="Secrets (in the pods' namespace) the kubelet pulls the image with.")
    run_as_user: int = Field(default=65534, ge=0, le=2147483647, description="UID the test pods run as (runAsNonRoot unless 0: PodSecurity restricted needs a non-root UID).")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, v: str | None) -> str | None:
        if v is not None and not DNS_LABEL.match(v):
            raise ValueError(f"{v!r} is not a namespace name (lower-case letters, digits and '-', at most 63)")
        return v

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: list[str]) -> list[str]:
        for n in v:
            if not NODE_NAME.match(n):
                raise ValueError(f"{n!r} is not a node name (lower-case letters, digits, '-' and '.')")
        if len(set(v)) != len(v):
            raise ValueError("node names must be unique")
        return v

    @field_validator("pod_sysctls")
    @classmethod
    def _sysctls(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            if not SYSCTL_NAME.match(k):
                raise ValueError(f"{k!r} is not a sysctl name such as 'net.ipv4.tcp_rmem'")
            if where(k) == NODE:  # the kubelet would pass it to the runtime, which fails the pod sandbox
                raise ValueError(f"{k!r} is {WHERE_TEXT[NODE]}: set it as a knob on node:NAME hosts "
                                 f"([target] node_access = true, [knobs.hosts] \"sysctl:{k}\" = [\"node:...\"])")
        return {k: str(x) if not isinstance(x, str) else x for k, x in v.items()}

    @field_validator("image_pull_secrets")
    @classmethod
    def _secrets(cls, v: list[str]) -> list[str]:
        for n in v:
            if not NODE_NAME.match(n):
                raise ValueError(f"{n!r} is not a Secret name (lower-case letters, digits, '-' and '.')")
        return v

    @field_validator("kubeconfig")
    @classmethod
    def _kubeconfig(cls, v: str | None) -> str | None:
        if v is None:
            return v
        path = Path(v).expanduser()
        if not path.is_file():
            raise ValueError(f"{v!r} does not exist; give the path of a kubeconfig file")
        return str(path.resolve())

    @model_validator(mode="after")
    def _check(self) -> "KubernetesTargetSpec":
        if self.node_access and not self.nodes:
            raise ValueError('node_access = true needs nodes = ["NODE", ...]: the nodes that get a privileged pod')
        if self.pods == "per-node" and len(self.nodes) < 2:
            raise ValueError('pods = "per-node" needs at least two nodes in nodes = [...]')
        if isinstance(self.placement, NodePlacement) and self.nodes:
            missing = [n for n in (self.placement.server, self.placement.client) if n not in self.nodes]
            if missing:
                raise ValueError(f"placement names {', '.join(missing)}, which is not in nodes ({', '.join(self.nodes)})")
        if self.network == "host" and any(k.startswith("net.") for k in self.pod_sysctls):
            raise ValueError("pod_sysctls: net.* sysctls cannot be set on pods with network = \"host\" (they share the node's)")
        return self

    def study_problem(self, bind: bool, knobs: Any) -> str | None:
        """What can never work in a study on this target, as one line (None: nothing).
        `knobs` is the study's KnobsSpec (or None)."""
        if self.via == "service" and bind:
            return ('target.via = "service": the client connects to the Service\'s ClusterIP, which the server cannot '
                    "bind to; set [workload] bind = false")
        if knobs is None:
            return None
        from ..knobs.keys import linux_sysctls  # noqa: PLC0415 - which sysctls a knob writes is the knob kind's (test_layering)

        for key in knobs.knobs():
            names = linux_sysctls(key)
            hosts = [h for h in knobs.hosts.get(key) or self.hosts if "{" not in h]
            pods = [h for h in hosts if not h.startswith(NODE_PREFIX)]
            if pods and names is not None:  # None: a command knob, the user's own commands
                return (f"knobs: {key!r} would act on test pod(s) {', '.join(pods)}: a test pod cannot change its own settings "
                        "(its /proc/sys and interfaces are read-only); set node settings on node:NAME hosts "
                        f"([knobs.hosts] {key!r} = [\"node:...\"], [target] node_access = true) and per-pod sysctls in [target] pod_sysctls")
            if self.network != "pod" or not hosts:
                continue
            for name in names or []:
                w = where(name)
                if w in (DEFAULT, IPC):
                    return (f"knobs: {key!r} on {', '.join(hosts)}: {name} is {WHERE_TEXT[w]}, so the test pods never see "
                            f"the node's value; set it per pod instead: [target] pod_sysctls = {{ {name!r} = ... }}")
        return None

    def knob_sysctls(self, knobs: Any) -> list[str]:
        """The sysctls the study's knobs write (those a kind can tell), each once."""
        if knobs is None:
            return []
        from ..knobs.keys import linux_sysctls  # noqa: PLC0415 - as in study_problem

        return list(dict.fromkeys(n for key in knobs.knobs() for n in linux_sysctls(key) or []))

    @property
    def pod_hosts(self) -> list[str]:
        """The test pods' host names: the nodes (one pod pinned to each), else server and client."""
        return list(self.nodes) if self.pods == "per-node" else ["server", "client"]

    @property
    def node_hosts(self) -> list[str]:
        return [NODE_PREFIX + n for n in self.nodes] if self.node_access else []

    @property
    def hosts(self) -> list[str]:
        return self.pod_hosts + self.node_hosts

    @property
    def test_hosts(self) -> list[str]:
        return self.pod_hosts

    def reboot_refusal(self, hosts: tuple[str, ...]) -> str | None:
        return "needs a reboot, and nettune never reboots a kubernetes target's nodes; use an ssh target host with allow_reboot = true"

    @property
    def hypervisors(self) -> list[str]:
        return []

    def disruption_refusal(self, what: str, opt_in: str, hosts: tuple[str, ...]) -> str | None:
        """A node is never rebooted; a pod's interface is its own (created for the study)."""
        return self.reboot_refusal(hosts) if what == "reboot" else None
