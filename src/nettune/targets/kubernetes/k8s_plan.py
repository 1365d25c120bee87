"""What a kubernetes study would create, for `nettune run --dry-run` (nothing connects).

Every point's objects are built with the run's own code (k8s_manifests) and dumped as
one YAML stream `kubectl apply -f -` takes: the namespace and node pods once, then the
test pods and Services of each distinct pod shape (placement, network, via,
pod_sysctls, image), each under a comment naming the points that use it. The run token
in names and labels is "dryrun" (a run makes its own). Engine commands are shown as the
`kubectl exec` lines that run them.
"""
from __future__ import annotations

import shlex
from typing import Any

import yaml

from .k8s_manifests import CONTAINER, RunNames, all_manifests, point_manifests, pod_shape

DRY_RUN_TOKEN = "dryrun"


def dry_run_names(study: Any) -> RunNames:
    return RunNames.make(study.name, study.target.namespace, DRY_RUN_TOKEN)


def manifests_yaml(study: Any, resolved: list[Any]) -> str:
    """The YAML stream of every object the study's points create."""
    names = dry_run_names(study)
    shapes: dict[Any, tuple[list[str], list[dict[str, Any]]]] = {}
    for rp in resolved:
        key = pod_shape(rp.target)
        if key not in shapes:
            shapes[key] = ([], point_manifests(names, rp.target, rp.workload.pairs))
        shapes[key][0].append(f"#{rp.point.index}")
    first = resolved[0]
    everything = all_manifests(names, first.target, first.workload.pairs)
    shared = everything[:len(everything) - len(point_manifests(names, first.target, first.workload.pairs))]
    docs = [("# made once per run\n" if i == 0 else "") + yaml.safe_dump(m, sort_keys=False) for i, m in enumerate(shared)]
    for labels, objs in shapes.values():
        t = next(rp.target for rp in resolved if f"#{rp.point.index}" == labels[0])
        what = f"placement={t.placement if isinstance(t.placement, str) else t.placement.model_dump()}, network={t.network}, via={t.via}"
        note = f"# test pods for {what}: points {' '.join(labels)}" + ("" if len(shapes) == 1 else " (one set at a time: the next replaces it)") + "\n"
        docs += [(note if i == 0 else "") + yaml.safe_dump(m, sort_keys=False) for i, m in enumerate(objs)]
    return "---\n".join(docs)


def kubectl_exec(study: Any, host: str, argv: list[str]) -> str:
    """`argv` as nettune runs it in `host`'s pod (through the API's exec, like kubectl exec)."""
    names = dry_run_names(study)
    ctx = ["--context", study.target.context] if study.target.context else []
    return shlex.join(["kubectl", *ctx, "-n", names.namespace, "exec", names.pod_name(host), "-c", CONTAINER, "--", *argv])
