"""Safe arithmetic over sweep parameters.

Sweep values such as "{queues} * {mult}" and templates such as "{streams}" are evaluated
with a tiny AST walker (never eval): integers/floats, names of other parameters,
+ - * // / %, unary minus, parentheses, min(), max().
"""
from __future__ import annotations

import ast
import operator
import re
from typing import Any

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}
_FUNCS = {"min": min, "max": max}
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
MAX_LENGTH = 500  # characters; real expressions are a few dozen, and Python's parser recurses
MAX_MAGNITUDE = 2**63  # any value past this is a mistake; checked at every step, so
# "{a} * {a}" chained over sweep keys cannot grow a number until memory runs out


class ExprError(ValueError):
    pass


def _parse(expr: str) -> ast.Expression:
    src = _PLACEHOLDER.sub(lambda m: f"({m.group(1)})", expr).strip()
    if len(src) > MAX_LENGTH:
        raise ExprError(f"expression {_short(expr)} is longer than {MAX_LENGTH} characters")
    try:
        return ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"cannot parse expression {_short(expr)}: {e.msg}") from None
    except (RecursionError, MemoryError):  # CPython's parser on deeply nested input
        raise ExprError(f"expression {_short(expr)} is nested too deeply") from None


def _short(expr: str) -> str:
    return repr(expr) if len(expr) <= 60 else repr(expr[:57] + "...")


def names_in(text: str) -> set[str]:
    """Parameter names an expression or template refers to."""
    try:
        tree = _parse(text)
    except ExprError:
        return set()  # evaluate() reports it
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS}


def evaluate(expr: str, env: dict[str, Any]) -> Any:
    """Evaluate an arithmetic expression; '{name}' and bare 'name' both mean a parameter."""
    body = _parse(expr).body
    if isinstance(body, ast.Name) and body.id in env:
        return env[body.id]  # a sweep value as written: the field it fills says its own range
    return _eval(body, env, expr)


def _checked(value: Any, expr: str) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > MAX_MAGNITUDE:
        shown = f"{value:.3g}" if isinstance(value, float) else f"a {len(str(abs(value)))}-digit number"
        raise ExprError(f"{_short(expr)} gives {shown}, beyond +-2**63")
    return value


def _eval(node: ast.AST, env: dict[str, Any], expr: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return _checked(node.value, expr)
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExprError(f"unknown parameter {node.id!r} in {_short(expr)} (known: {known})")
        return _checked(env[node.id], expr)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left, env, expr), _eval(node.right, env, expr)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise ExprError(f"arithmetic on a non-number in {_short(expr)}")
        try:
            return _checked(_BINOPS[type(node.op)](left, right), expr)
        except ZeroDivisionError:
            raise ExprError(f"division by zero in {_short(expr)}") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env, expr)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ExprError(f"arithmetic on a non-number in {_short(expr)}")
        return -v if isinstance(node.op, ast.USub) else v
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and node.args
        and not node.keywords
    ):
        try:
            return _FUNCS[node.func.id](*(_eval(a, env, expr) for a in node.args))
        except TypeError:  # min("a", 1)
            raise ExprError(f"{node.func.id}() of a non-number in {_short(expr)}") from None
    raise ExprError(f"{_short(expr)}: only numbers, parameter names, + - * / // %, min() and max() are allowed")


def fill(value: Any, env: dict[str, Any]) -> Any:
    """Fill '{...}' placeholders in a value from the current point.

    A string that is exactly one placeholder takes the parameter's own type ("{streams}"
    becomes the integer 4); placeholders inside longer strings are formatted as text.
    Lists and dicts are filled recursively; other values are returned unchanged.
    """
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole:
            return evaluate(whole.group(1), env)
        return _PLACEHOLDER.sub(lambda m: _fmt(evaluate(m.group(1), env)), value)
    if isinstance(value, list):
        return [fill(v, env) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, env) for k, v in value.items()}
    return value


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def has_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_PLACEHOLDER.search(value))
    if isinstance(value, list):
        return any(has_placeholder(v) for v in value)
    if isinstance(value, dict):
        return any(has_placeholder(v) for v in value.values())
    return False
