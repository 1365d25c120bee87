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


class ExprError(ValueError):
    pass


def names_in(text: str) -> set[str]:
    """Parameter names an expression or template refers to."""
    src = _PLACEHOLDER.sub(lambda m: f"({m.group(1)})", text)
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS}


def evaluate(expr: str, env: dict[str, Any]) -> Any:
    """Evaluate an arithmetic expression; '{name}' and bare 'name' both mean a parameter."""
    src = _PLACEHOLDER.sub(lambda m: f"({m.group(1)})", expr).strip()
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"cannot parse expression {expr!r}: {e.msg}") from None
    return _eval(tree.body, env, expr)


def _eval(node: ast.AST, env: dict[str, Any], expr: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise ExprError(f"unknown parameter {node.id!r} in {expr!r} (known: {known})")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left, env, expr), _eval(node.right, env, expr)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise ExprError(f"arithmetic on a non-number in {expr!r}")
        try:
            return _BINOPS[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ExprError(f"division by zero in {expr!r}") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env, expr)
        return -v if isinstance(node.op, ast.USub) else v
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and node.args
        and not node.keywords
    ):
        return _FUNCS[node.func.id](*(_eval(a, env, expr) for a in node.args))
    raise ExprError(f"{expr!r}: only numbers, parameter names, + - * / // %, min() and max() are allowed")


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
