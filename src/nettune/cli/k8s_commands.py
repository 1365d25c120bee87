"""`nettune k8s clean|manifests`: what a kubernetes study leaves or would create."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from .app import app, console, user_errors

k8s_app = typer.Typer(help="Kubernetes studies: remove what a killed run left, show what a run creates.", no_args_is_help=True)
app.add_typer(k8s_app, name="k8s")


@k8s_app.command("clean")
@user_errors
def clean(
    context: Optional[str] = typer.Option(None, "--context", help="kubeconfig context (default: the current one)."),
    kubeconfig: Optional[Path] = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
    study: Optional[str] = typer.Option(None, "--study", help="Only the objects of this study (its name)."),
    run: Optional[str] = typer.Option(None, "--run", help="Only the objects of this run (the token a warning named)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; delete nothing."),
) -> None:
    """Delete every object labelled app.kubernetes.io/managed-by=nettune (of a study or run).
    Runs still going lose their pods too: use it when no nettune run uses the cluster."""
    from ..targets.kubernetes.k8s_clean import clean_cluster  # noqa: PLC0415 - the kubernetes client only when asked

    found, failed = clean_cluster(context, str(kubeconfig) if kubeconfig else None, study, run, dry_run)
    if not found:
        console.print("nothing of nettune's found")
        return
    verb = "would delete" if dry_run else "deleted"
    for kind, ns, name in found:
        console.print(escape(f"{verb} {kind} {ns + '/' if ns else ''}{name}"), highlight=False)
    for line in failed:
        console.print(f"[red]not deleted[/]: {escape(line)}", highlight=False)
    if failed:
        raise typer.Exit(1)


@k8s_app.command("manifests")
@user_errors
def manifests(file: Path = typer.Argument(..., help="Study file whose [target] kind = \"kubernetes\".")) -> None:
    """Print the objects a run of the study creates, as YAML (`| kubectl apply --dry-run=server -f -` checks them)."""
    from ..plan.points import expand_and_check  # noqa: PLC0415
    from ..plan.study_file import parse_study  # noqa: PLC0415
    from ..studyfile.load import read_study_text  # noqa: PLC0415
    from ..targets import require_kind  # noqa: PLC0415
    from ..targets.kubernetes.k8s_plan import manifests_yaml  # noqa: PLC0415

    text = read_study_text(file)
    study = parse_study(text, str(file))
    require_kind(study, "kubernetes", str(file), "`nettune k8s manifests`")
    print(manifests_yaml(study, expand_and_check(study, text, str(file))), end="")
