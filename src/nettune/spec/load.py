"""Read a study file (TOML) and turn every problem into a one-line SpecError."""
from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from .models import Study


def load_study(path: str | Path) -> Study:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(str(path), "", "no such file; give the path of a study TOML file (see examples/)") from None
    except OSError as e:
        raise SpecError(str(path), "", f"cannot read: {e.strerror}") from None
    return parse_study(text, str(path))


def parse_study(text: str, file: str = "<study>") -> Study:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise SpecError(file, "", f"not valid TOML: {e}", int(m.group(1)) if m else None) from None
    study = validate(data, text, file)
    # Expanding the plan checks every sweep expression and every filled-in value now,
    # before any host is touched.
    from ..plan.points import expand_and_check

    expand_and_check(study, text, file)
    return study


def validate(data: dict[str, Any], text: str, file: str) -> Study:
    try:
        # base_dir: relative paths in the file (an ssh target's inventory) are relative to it
        return Study.model_validate(data, context={"base_dir": str(Path(file).parent)})
    except ValidationError as e:
        raise _to_spec_error(e, Study, text, file) from None


def _to_spec_error(e: ValidationError, model: type[BaseModel], text: str, file: str) -> SpecError:
    errors = e.errors(include_url=False)
    err = _most_specific(errors)
    loc = [str(x) for x in err["loc"] if not _is_union_tag(x)]
    field = ".".join(loc) or "(top level)"
    problem = _explain(err, loc, model)
    more = len({tuple(str(y) for y in x["loc"] if not _is_union_tag(y)) for x in errors}) - 1
    if more > 0:
        problem += f" (and {more} more problem{'s' if more > 1 else ''})"
    return SpecError(file, field, problem, find_line(text, loc))


def _is_union_tag(x: Any) -> bool:
    # pydantic puts union member tags in loc ('lab', 'int', 'constrained-str'...)
    return isinstance(x, str) and (x in {"lab", "local", "ssh", "int", "str", "bool", "float", "list[...]", "none"} or x.startswith(("constrained-", "function-", "list[")))


def _most_specific(errors: list[dict[str, Any]]) -> dict[str, Any]:
    # Prefer unknown-field errors, then errors not produced by the Template alternative of a union.
    for e in errors:
        if e["type"] == "extra_forbidden":
            return e
    # A value that failed every alternative of `int | Template`: the int error says more.
    for e in errors:
        if e["type"] not in ("string_pattern_mismatch", "string_type"):
            return e
    return errors[0]


def _explain(err: dict[str, Any], loc: list[str], model: type[BaseModel]) -> str:
    kind, msg, inp = err["type"], err["msg"], err.get("input")
    if kind == "extra_forbidden":
        tags = {str(x) for x in err["loc"] if _is_union_tag(x)}
        known = _known_fields(model, loc[:-1], tags)
        close = difflib.get_close_matches(loc[-1], known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known fields: {', '.join(known)}"
        return f"unknown field{hint}"
    if kind == "missing":
        return "required field is missing; add it"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"{inp!r} is out of range: {msg.lower()}"
    if kind.startswith("int_") or kind == "int_type":
        return f"expected a whole number (or a '{{param}}' template), got {inp!r}"
    if kind.startswith("bool"):
        return f"expected true or false, got {inp!r}"
    if kind == "literal_error":
        return f"got {inp!r}; {msg.lower()}"
    if kind == "union_tag_invalid":
        tag = err.get("ctx", {}).get("tag", inp)
        return f"unknown kind {tag!r}; use one of: {err.get('ctx', {}).get('expected_tags', 'lab, local')}"
    if kind == "string_pattern_mismatch" and loc[-1:] == ["name"]:
        return f"{inp!r} is not a valid study name; use letters, digits, '.', '_' or '-' (at most 64)"
    msg = msg.removeprefix("Value error, ")
    return msg


def _known_fields(model: type[BaseModel], loc: list[str], tags: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    cur: Any = model
    keyed = False  # the previous field was a table of named entries ([target.hosts.NAME])
    for i, part in enumerate(loc):
        fields = getattr(cur, "model_fields", {})
        if part not in fields:
            if keyed:
                keyed = False
                continue
            return []
        ann = fields[part].annotation
        keyed = "dict" in str(ann)
        cur = _model_in(ann, loc[i + 1] if i + 1 < len(loc) else None, tags)
        if cur is None:
            return []
    return list(getattr(cur, "model_fields", {}))


def _model_in(ann: Any, want: str | None = None, tags: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
    """The model inside an annotation; in a union, the member that has field `want`."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    found = []
    for arg in getattr(ann, "__args__", ()) or ():
        m = _model_in(arg, want, tags)
        if m is not None:
            found.append(m)
    meta = getattr(ann, "__metadata__", None)
    if meta is not None and not found:
        m = _model_in(ann.__origin__, want, tags)
        found += [m] if m is not None else []
    for m in found:  # the union member pydantic chose (its kind is in the error's loc)
        kind = m.model_fields.get("kind")
        if kind is not None and str(kind.default) in tags or (kind is not None and getattr(kind.annotation, "__args__", (None,))[0] in tags):
            return m
    for m in found:
        if want is None or want in m.model_fields:
            return m
    return found[0] if found else None


def find_line(text: str, loc: list[str]) -> int | None:
    """Best-effort line of a field: the key inside its [table], or the table header."""
    if not loc:
        return None
    lines = text.splitlines()
    table, key = loc[:-1], loc[-1]
    section: list[str] = []
    header_line = None
    for i, raw in enumerate(lines, 1):
        s = raw.split("#", 1)[0].strip()
        m = re.fullmatch(r"\[+\s*([^\]]+?)\s*\]+", s)
        if m:
            section = [p.strip().strip('"') for p in m.group(1).split(".")]
            if section == loc:
                header_line = i
            continue
        km = re.match(r'^"?([^"=]+?)"?\s*=', s)
        if km and section == table and km.group(1).strip() == key:
            return i
    return header_line
