"""Read a study file (TOML) and turn every problem into a one-line SpecError.

This is the spec stage only: the file's text checked against the models. A study whose
every point must also resolve (templates filled, values in range) is loaded by
plan.study_file (load_study, parse_study), which calls this module first; the later
stages use spec_error and find_line from here to name the field of a problem."""
from __future__ import annotations

import difflib
import os
import re
import reprlib
import tomllib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from .models import TARGET_KINDS, Study, Template
from .study_text import MAX_STUDY_BYTES, decode_study as decode_study, read_bytes as read_bytes, read_study_text as read_study_text

def parse_spec(text: str, file: str = "<study>") -> Study:
    """A study's TOML text validated against the models (its points are not expanded:
    plan.study_file.parse_study does that too)."""
    if len(text) > MAX_STUDY_BYTES:
        raise SpecError(file, "", f"larger than {MAX_STUDY_BYTES >> 20} MiB, too big to be a study file; give the study's TOML file")
    nul = text.find("\0")
    if nul >= 0:  # tomllib would say "Illegal character"; this says what the file probably is
        line = text.count("\n", 0, nul) + 1
        raise SpecError(file, "", f"contains a NUL byte (column {nul - text.rfind(chr(10), 0, nul)}): a binary file, not a study; give the study's TOML text", line)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise SpecError(file, "", f"not valid TOML: {e}", int(m.group(1)) if m else None) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise SpecError(file, "", "arrays or inline tables nested hundreds of levels deep; a study file needs a few levels at most") from None
    except ValueError as e:  # int() inside tomllib: a number of more than 4300 digits
        raise SpecError(file, "", f"not valid TOML: {str(e).split(';')[0]}") from None
    return validate(data, text, file)


def validate(data: dict[str, Any], text: str, file: str) -> Study:
    try:
        # base_dir: relative paths in the file (an ssh target's inventory) are relative to it
        study = Study.model_validate(data, context={"base_dir": str(Path(file).parent)})
        return study.read_from(os.path.abspath(file), text) if file != "<study>" else study
    except ValidationError as e:
        raise spec_error(e, Study, text, file) from None


def spec_error(e: ValidationError, model: type[BaseModel], text: str, file: str) -> SpecError:
    """A pydantic error of `model` as one SpecError: its most specific problem, the field's
    dotted name and line in `text`, and how many other problems there are."""
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
    return isinstance(x, str) and (x in {*TARGET_KINDS, "int", "str", "bool", "float", "list[...]", "none"} or x.startswith(("constrained-", "function-", "list[", "literal[")))


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
        allowed = _range_of(model, loc, {str(x) for x in err["loc"] if _is_union_tag(x)})
        return f"{_show(inp)} is out of range: " + (f"allowed {allowed}" if allowed else msg.lower())
    if kind in _TYPE_ERRORS or kind.startswith(("int_", "float_", "bool_")):
        expected = _expected(model, loc, {str(x) for x in err["loc"] if _is_union_tag(x)})
        if expected:
            return f"expected {expected}, got {_show(inp)}"
    if kind.startswith("int_") or kind == "int_type":
        return f"expected a whole number (or a '{{param}}' template), got {_show(inp)}"
    if kind.startswith("bool"):
        return f"expected true or false, got {_show(inp)}"
    if kind == "literal_error":
        return f"got {_show(inp)}; {msg.lower()}"
    if kind == "too_short" and not inp:
        return "empty list: give at least one value (or remove the key)"
    if kind in ("too_short", "too_long"):
        return f"{len(inp)} items: {msg.lower().removeprefix('list ').removeprefix('value ')}"
    if kind == "union_tag_not_found":
        known = [f'"{k}"' for k in TARGET_KINDS]
        return f"{err.get('ctx', {}).get('discriminator', 'kind')} is missing; add kind = {', '.join(known[:-1])} or {known[-1]}"
    if kind == "union_tag_invalid":
        tag = err.get("ctx", {}).get("tag", inp)
        return f"unknown kind {tag!r}; use one of: {err.get('ctx', {}).get('expected_tags', 'lab, local')}"
    if kind == "string_pattern_mismatch" and loc[-1:] == ["name"]:
        return f"{_show(inp)} is not a valid study name; use letters, digits, '.', '_' or '-' (at most 64)"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"{msg.lower()}, got {_show(inp)}"
    msg = msg.removeprefix("Value error, ")
    return msg


_TYPE_ERRORS = {"string_type", "list_type", "dict_type", "model_type", "model_attributes_type", "none_required", "not_bool"}


def _expected(model: type[BaseModel], loc: list[str], tags: set[str]) -> str:
    """What the field takes, in the file's terms: 'a whole number or a '{param}' template'."""
    owner = _model_at(model, loc[:-1], tags) if loc else None
    field = getattr(owner, "model_fields", {}).get(loc[-1]) if loc else None
    if field is None:
        return ""
    kinds: list[str] = []

    def walk(ann: Any) -> None:
        origin, args = get_origin(ann), get_args(ann)
        if origin is Annotated:
            if ann == Template:
                kinds.append("a '{param}' template")
            else:
                walk(args[0])
        elif origin in (Union, UnionType):
            for a in args:
                walk(a)
        elif origin is Literal:
            kinds.append("one of " + ", ".join(repr(a) for a in args))
        elif origin is list:
            kinds.append("a list")
        elif origin is dict or isinstance(ann, type) and issubclass(ann, BaseModel):
            kinds.append("a table")
        elif ann in _KIND:
            kinds.append(_KIND[ann])

    walk(field.annotation)
    kinds = list(dict.fromkeys(kinds))
    return " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)


_KIND = {bool: "true/false", int: "a whole number", float: "a number", str: "a quoted string"}
_repr = reprlib.Repr()  # keyword arguments only from Python 3.12
_repr.maxlevel, _repr.maxstring, _repr.maxother, _repr.maxlist, _repr.maxdict = 2, 40, 40, 4, 4


def _show(value: Any) -> str:
    """A value in an error message: short, one line, whatever its size or depth."""
    if isinstance(value, bool):
        return "true" if value else "false"  # as written in TOML
    return _repr.repr(value)


def _range_of(model: type[BaseModel], loc: list[str], tags: set[str]) -> str:
    """'1 to 86400' from the field's own bounds (Field(ge=..., le=...)), or ''."""
    owner = _model_at(model, loc[:-1], tags) if loc else None
    field = getattr(owner, "model_fields", {}).get(loc[-1]) if loc else None
    if field is None:
        return ""
    bounds: dict[str, Any] = {}

    def collect(meta: Any) -> None:
        for m in meta or ():
            if isinstance(getattr(m, "metadata", None), list):  # Annotated[int, Field(ge=1)]: a FieldInfo
                collect(m.metadata)
            for k in ("ge", "gt", "le", "lt"):
                if getattr(m, k, None) is not None:
                    bounds.setdefault(k, getattr(m, k))

    collect(field.metadata)
    todo = [field.annotation]
    while todo:  # the bounds of `Duration | Template` sit on the Annotated int inside the union
        ann = todo.pop()
        collect(getattr(ann, "__metadata__", None))
        todo += list(getattr(ann, "__args__", ()) or ())
    if "ge" in bounds and "le" in bounds:
        return f"{bounds['ge']} to {bounds['le']}"
    words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
    return ", ".join(f"{words[k]} {bounds[k]}" for k in ("ge", "gt", "le", "lt") if k in bounds)


def _known_fields(model: type[BaseModel], loc: list[str], tags: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    return list(getattr(_model_at(model, loc, tags), "model_fields", {}))


def _model_at(model: type[BaseModel], loc: list[str], tags: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
    """The model whose fields are at `loc` (None if loc leads elsewhere)."""
    cur: Any = model
    keyed = False  # the previous field was a table of named entries ([target.hosts.NAME])
    for i, part in enumerate(loc):
        fields = getattr(cur, "model_fields", {})
        if part not in fields:
            if keyed:
                keyed = False
                continue
            return None
        ann = fields[part].annotation
        keyed = "dict" in str(ann)
        cur = _model_in(ann, loc[i + 1] if i + 1 < len(loc) else None, tags)
        if cur is None:
            return None
    return cur


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
