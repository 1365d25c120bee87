"""The CLI prints names, paths and values as they are: rich's emoji codes (`:b:` in a host
`node:b:`) and markup (`[bold]` in a path) in user data are never interpreted."""
from typer.testing import CliRunner

from nettune.cli.app import console, err_console
from nettune.cli.main import app

WEIRD = "node:b:[bold]x[/]:thumbs_up:"


def run(*args: str, tmp_path) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args), env={"NETTUNE_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "200"})
    return r.exit_code, r.output


def test_an_error_line_shows_the_users_text_verbatim(tmp_path):
    code, out = run("run", str(tmp_path / WEIRD / "study.toml"), "--dry-run", tmp_path=tmp_path)
    assert code == 2 and f"{WEIRD}/study.toml: no such file" in out, out


def test_a_bad_value_is_quoted_verbatim(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('name = "t-emoji:b:"\n[target]\nkind = "local"\n[workload]\nduration = 1\n')
    code, out = run("run", str(f), "--dry-run", tmp_path=tmp_path)
    assert code == 2 and "'t-emoji:b:' is not a valid study name" in out, out


def test_stdout_prints_a_path_verbatim(tmp_path):
    """stdout: `nettune restore` names its journal, in a state directory of the user's naming."""
    state = tmp_path / WEIRD
    r = CliRunner().invoke(app, ["restore"], env={"NETTUNE_STATE_DIR": str(state), "NETTUNE_RUN_DIR": str(tmp_path / "run"), "COLUMNS": "300"})
    assert r.exit_code == 0 and f"nothing to restore ({state}/" in r.output, r.output
    for c in (console, err_console):
        with c.capture() as cap:
            c.print(":b: :thumbs_up:", highlight=False)
        assert cap.get() == ":b: :thumbs_up:\n"


def test_the_api_progress_bar_shows_names_verbatim():
    """nettune.run's terminal bar: the study name and point label are its task description
    (rich markup), a finished test's line is printed by its own console."""
    from nettune.api.progress import ProgressUpdate, TerminalBar

    bar = TerminalBar()
    with bar.console.capture() as cap:
        bar(ProgressUpdate(event="start", study=WEIRD, done=0, total=1, text=""))
        bar(ProgressUpdate(event="test_start", study=WEIRD, done=0, total=1, text=WEIRD))
        assert bar.bar.columns[0].render(bar.bar.tasks[0]).plain == WEIRD  # what the bar shows
        bar(ProgressUpdate(event="test_end", study=WEIRD, done=1, total=1, text=WEIRD))
        bar.close()
    assert WEIRD in cap.get()
