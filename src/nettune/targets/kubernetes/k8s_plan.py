"""What a kubernetes study would create, for `nettune run --dry-run` and `nettune k8s
manifests` (nothing connects).

Every point's objects are built with the run's own code (k8s_manifests) and dumped as
one YAML stream `kubectl apply -f -` takes: the namespace and node pods once, then the
test pods and Services of each distinct pod shape (placement, network, via,
pod_sysctls, image, resources), each set under a comment naming the points that use it
and named apart from the others (nettune-server, nettune-server-2, ...: one consistent
set of objects, where a run replaces one set by the next under the same names). The run
token in names and labels is "dryrun" (a run makes its own). `kubectl apply
--dry-run=server` cannot check pods in a namespace the same command creates (the server
does not keep it), so the namespace alone (`only="namespace"`) is applied first, for real,
and the rest (`only="objects"`) checked against it. Engine commands are shown as the
`kubectl exec` lines that run them.
"""
from __future__ import annotations

import shlex
from typing import Any

import yaml

from .k8s_manifests import CONTAINER, RunNames, namespace_manifest, node_pod, pod_security_level, point_manifests, pod_shape

DRY_RUN_TOKEN = "dryrun"
PARTS = ("namespace", "objects")


def dry_run_names(study: Any) -> RunNames:
    return RunNames.make(study.name, study.target.namespace, DRY_RUN_TOKEN)


def manifests_yaml(study: Any, resolved: list[Any], only: str | None = None, version: str | None = None) -> str:
    """The YAML stream of every object the study's points create (`only`: "namespace" or
    "objects", the two halves `kubectl apply --dry-run=server` needs one after the other)."""
    names = dry_run_names(study)
    shapes: dict[Any, tuple[list[str], Any]] = {}
    for rp in resolved:
        shapes.setdefault(pod_shape(rp.target), ([], rp))[0].append(f"#{rp.point.index}")
    docs: list[str] = []
    if names.own_namespace and only != "objects":
        level = pod_security_level([rp.target for rp in resolved], version)
        docs.append("# made once per run\n" + yaml.safe_dump(namespace_manifest(names, level), sort_keys=False))
    if only == "namespace":
        return "---\n".join(docs)
    first = resolved[0].target
    for i, node in enumerate(first.nodes if first.node_access else []):
        docs.append(("# node access pods, once per run\n" if i == 0 else "") + yaml.safe_dump(node_pod(names, first, node), sort_keys=False))
    for n, (labels, rp) in enumerate(shapes.values(), start=1):
        t = rp.target
        what = f"placement={t.placement if isinstance(t.placement, str) else t.placement.model_dump()}, network={t.network}, via={t.via}"
        note = f"# test pods for {what}: points {' '.join(labels)}"
        if len(shapes) > 1:
            note += " (a run makes one set at a time, named nettune-server/-client; here each set is named apart)"
        objs = point_manifests(names.test_set(n), t, rp.workload.pairs)
        docs += [(note + "\n" if i == 0 else "") + yaml.safe_dump(m, sort_keys=False) for i, m in enumerate(objs)]
    return "---\n".join(docs)


def kubectl_exec(study: Any, host: str, argv: list[str]) -> str:
    """`argv` as nettune runs it in `host`'s pod (through the API's exec, like kubectl exec)."""
    names = dry_run_names(study)
    ctx = ["--context", study.target.context] if study.target.context else []
    return shlex.join(["kubectl", *ctx, "-n", names.namespace, "exec", names.pod_name(host), "-c", CONTAINER, "--", *argv])
