"""The kubernetes part of `nettune run --dry-run`: the kubectl exec lines of each point's
commands and the objects a run creates, as YAML (targets/kubernetes/k8s_plan.py builds them)."""
from __future__ import annotations

from typing import Any

from rich.markup import escape

from ..plan.points import expand_and_check
from ..targets.kubernetes.k8s_plan import kubectl_exec, manifests_yaml
from .app import console


def print_k8s_plan(study: Any, text: str, file: str, plan: Any) -> None:
    console.print("\n[bold]exec command lines[/] (nettune runs them through the API's exec stream; the same as):", highlight=False)
    for p in plan.planned:
        env = "".join(f"{k}=... " for k in p.client_env)  # secrets go over the stream's stdin, never on a command line
        console.print(escape(f"#{p.index} server: {kubectl_exec(study, p.server_host, p.server_argv)}"), highlight=False, soft_wrap=True)
        console.print(escape(f"#{p.index} client: {env}{kubectl_exec(study, p.client_host, p.client_argv)}"), highlight=False, soft_wrap=True)
    console.print(f"\n[bold]manifests[/] (what `kubectl apply -f` takes; alone: nettune k8s manifests {escape(file)}):", highlight=False)
    console.print(escape(manifests_yaml(study, expand_and_check(study, text, file))), highlight=False, soft_wrap=True, markup=False)
