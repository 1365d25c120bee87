"""User-facing errors.

Anything a user can cause (a bad study file, a missing tool, not being root) raises
NettuneError with a message that fits on one line and says what to do. The CLI prints
it without a traceback and exits 2. Everything else is a bug and keeps its traceback.
"""


def one_line(text: str) -> str:
    """Text with every line break and control character written as an escape, so a message
    that quotes a file name, a TOML key or a tool's output stays on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class NettuneError(Exception):
    """An error the user can fix; str(err) is the one-line message (what, where, the fix).

    Every refusal nettune makes is one: a bad study file (`SpecError`), a missing tool,
    not being root, a database that is not nettune's. Example::

        try:
            nettune.run_study("study.toml")
        except nettune.NettuneError as e:
            print(e)        # one line, no traceback needed
    """

    def __init__(self, *args: object):
        super().__init__(*(one_line(a) if isinstance(a, str) else a for a in args))


class SpecError(NettuneError):
    """The study file is invalid. Raised before anything is changed on any host; `file`,
    `line`, `field` and `problem` say where and what. Example::

        try:
            nettune.parse_study('name = "x"\n[target]\nkind = "lab"\nhosts = ["a"]\n[workload]\nengine = "iperf4"\n')
        except nettune.SpecError as e:
            e.line, e.field     # 6, 'workload.engine'
    """

    def __init__(self, file: str, field: str, problem: str, line: int | None = None):
        self.file, self.field, self.problem, self.line = file, field, problem, line
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


class ToolMissing(NettuneError):
    """A system tool nettune drives (iperf3, iperf, ethtool...) is not installed."""


class NotRoot(NettuneError):
    pass


class PointFailed(NettuneError):
    """One point's settings could not be brought into force (a value that does not read
    back, a kernel that booted without its command-line value): that point's tests are
    recorded as failed with this reason and the study goes on; the journal still restores
    whatever was changed."""
