"""The metric names a PromQL expression reads, for tests that check dashboards and rules
against the metrics the exporters, the validation writer and the recording rules produce.

A tokenizer, not a parser: it drops what cannot be a metric name (string literals, the
label matchers inside {...}, ranges and subquery steps inside [...], durations after
offset, numbers, `@` modifiers, the label lists after by/without/on/ignoring/
group_left/group_right, keywords, operators, function and aggregation names) and keeps
every other identifier of the form [a-zA-Z_:][a-zA-Z0-9_:]*, plus the names that
`__name__="x"` (or `__name__=~"a|b"`) matchers select. Function and aggregation names
are those of Prometheus 2.42 (Debian 12's). Anything it does not understand raises
PromQLTokenError naming the position, so a check never passes by skipping text.

`grafana_query_names` also reads Grafana's Prometheus template queries
(label_values(expr, label), query_result(expr), metrics(re)).
"""

from __future__ import annotations

import re

__all__ = [
    "AGGREGATIONS",
    "FUNCTIONS",
    "KEYWORDS",
    "PromQLTokenError",
    "grafana_query_names",
    "metric_names",
]

# promql/parser/functions.go of Prometheus 2.42.
FUNCTIONS = frozenset(
    [
        "abs",
        "absent",
        "absent_over_time",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "avg_over_time",
        "ceil",
        "changes",
        "clamp",
        "clamp_max",
        "clamp_min",
        "cos",
        "cosh",
        "count_over_time",
        "days_in_month",
        "day_of_month",
        "day_of_week",
        "day_of_year",
        "deg",
        "delta",
        "deriv",
        "exp",
        "floor",
        "histogram_count",
        "histogram_fraction",
        "histogram_quantile",
        "histogram_sum",
        "holt_winters",
        "hour",
        "idelta",
        "increase",
        "irate",
        "label_join",
        "label_replace",
        "last_over_time",
        "ln",
        "log10",
        "log2",
        "max_over_time",
        "min_over_time",
        "minute",
        "month",
        "pi",
        "predict_linear",
        "present_over_time",
        "quantile_over_time",
        "rad",
        "rate",
        "resets",
        "round",
        "scalar",
        "sgn",
        "sin",
        "sinh",
        "sort",
        "sort_desc",
        "sqrt",
        "stddev_over_time",
        "stdvar_over_time",
        "sum_over_time",
        "tan",
        "tanh",
        "time",
        "timestamp",
        "vector",
        "year",
    ]
)

# The aggregation operators of 2.42 (keywords: case-insensitive, like all PromQL keywords).
AGGREGATIONS = frozenset(
    [
        "avg",
        "bottomk",
        "count",
        "count_values",
        "group",
        "max",
        "min",
        "quantile",
        "stddev",
        "stdvar",
        "sum",
        "topk",
    ]
)

# Binary set operators, atan2, modifiers. The label list in (...) after a GROUPING
# keyword is label names, never metrics.
GROUPING = frozenset(["by", "without", "on", "ignoring", "group_left", "group_right"])
KEYWORDS = frozenset(["and", "or", "unless", "atan2", "bool", "offset"]) | GROUPING

# Number literals: hex, decimal/scientific, Inf and NaN (case-insensitive).
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_SPECIAL_NUMBER = frozenset({"inf", "nan"})
_DURATION = re.compile(r"(?:[0-9]+(?:ms|s|m|h|d|w|y))+")
_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_OPERATOR = re.compile(r"==|!=|>=|<=|[-+*/%^<>,]")
_PLAIN_ALTERNATION = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?:\|[a-zA-Z_:][a-zA-Z0-9_:]*)*")
_WS = re.compile(r"\s+")


class PromQLTokenError(ValueError):
    """The expression holds text the tokenizer cannot classify."""


def _fail(expr: str, pos: int, what: str) -> PromQLTokenError:
    return PromQLTokenError(f"{what} at offset {pos} of {expr!r}")


def _string_end(expr: str, pos: int) -> tuple[int, str]:
    """The index after the string literal starting at pos, and its (unescaped) value."""
    quote = expr[pos]
    value = []
    i = pos + 1
    while i < len(expr):
        char = expr[i]
        if quote != "`" and char == "\\" and i + 1 < len(expr):
            value.append(expr[i + 1])
            i += 2
            continue
        if char == quote:
            return i + 1, "".join(value)
        value.append(char)
        i += 1
    raise _fail(expr, pos, "unterminated string literal")


def _skip_ws(expr: str, pos: int) -> int:
    while pos < len(expr):
        match = _WS.match(expr, pos)
        if match:
            pos = match.end()
        elif expr[pos] == "#":  # a comment runs to the end of the line
            end = expr.find("\n", pos)
            pos = len(expr) if end < 0 else end + 1
        else:
            break
    return pos


def _matchers(expr: str, pos: int, names: set[str]) -> int:
    """Skip the {...} starting at pos; add what __name__ matchers select. Returns the index after '}'."""
    i = pos + 1
    while True:
        i = _skip_ws(expr, i)
        if i >= len(expr):
            raise _fail(expr, pos, "unterminated label matcher {")
        if expr[i] == "}":
            return i + 1
        if expr[i] == ",":
            i += 1
            continue
        label = _LABEL.match(expr, i)
        if not label:
            raise _fail(expr, i, "expected a label name in {...}")
        i = _skip_ws(expr, label.end())
        operator = next((op for op in ("=~", "!~", "!=", "=") if expr.startswith(op, i)), None)
        if operator is None:
            raise _fail(expr, i, f"expected a matcher operator after label {label.group()!r}")
        i = _skip_ws(expr, i + len(operator))
        if i >= len(expr) or expr[i] not in "\"'`":
            raise _fail(expr, i, f"expected a string after {label.group()}{operator}")
        i, value = _string_end(expr, i)
        if label.group() != "__name__" or operator in ("!=", "!~"):
            continue
        if operator == "=":
            names.add(value)
        elif _PLAIN_ALTERNATION.fullmatch(value):
            names.update(value.split("|"))
        else:
            raise _fail(expr, i, f"__name__=~{value!r} is not a plain list of names; name them one by one")


def _brackets(expr: str, pos: int) -> int:
    """Skip a range [5m] or subquery [1h:5m] (durations and ':' only)."""
    end = expr.find("]", pos)
    if end < 0:
        raise _fail(expr, pos, "unterminated [")
    body = expr[pos + 1 : end].replace(" ", "")
    parts = body.split(":")
    if (
        len(parts) > 2
        or not _DURATION.fullmatch(parts[0])
        or (len(parts) == 2 and parts[1] and not _DURATION.fullmatch(parts[1]))
    ):
        raise _fail(expr, pos, f"[{body}] is not a range or subquery of durations")
    return end + 1


def _label_list(expr: str, pos: int) -> int:
    """Skip the (label, ...) after by/without/on/ignoring/group_left/group_right, if there is one."""
    i = _skip_ws(expr, pos)
    if i >= len(expr) or expr[i] != "(":
        return pos
    end = expr.find(")", i)
    if end < 0:
        raise _fail(expr, i, "unterminated label list")
    for label in expr[i + 1 : end].split(","):
        if label.strip() and not _LABEL.fullmatch(label.strip()):
            raise _fail(expr, i, f"{label.strip()!r} is not a label name")
    return end + 1


def _offset(expr: str, pos: int) -> int:
    i = _skip_ws(expr, pos)
    if i < len(expr) and expr[i] in "+-":
        i = _skip_ws(expr, i + 1)
    match = _DURATION.match(expr, i)
    if not match:
        raise _fail(expr, i, "expected a duration after offset")
    return match.end()


def _at(expr: str, pos: int) -> int:
    """Skip the value of an @ modifier: a number, start() or end()."""
    i = _skip_ws(expr, pos)
    for word in ("start", "end"):
        if expr.startswith(word, i):
            j = _skip_ws(expr, i + len(word))
            if expr.startswith("(", j):
                k = _skip_ws(expr, j + 1)
                if expr.startswith(")", k):
                    return k + 1
    if i < len(expr) and expr[i] in "+-":
        i += 1
    match = _NUMBER.match(expr, i)
    if not match:
        raise _fail(expr, i, "expected a timestamp, start() or end() after @")
    return match.end()


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects (raises PromQLTokenError on text it cannot classify)."""
    names: set[str] = set()
    i = 0
    while True:
        i = _skip_ws(expr, i)
        if i >= len(expr):
            return names
        char = expr[i]
        if char in "\"'`":
            i, _ = _string_end(expr, i)
        elif char == "{":
            i = _matchers(expr, i, names)
        elif char == "[":
            i = _brackets(expr, i)
        elif char in "()":
            i += 1
        elif char == "@":
            i = _at(expr, i + 1)
        elif char.isdigit() or (char == "." and expr[i + 1 : i + 2].isdigit()):
            # A duration is only valid in [...] or after offset, both handled there.
            i = _NUMBER.match(expr, i).end()
            if _IDENT.match(expr, i):
                raise _fail(expr, i, "a number or duration followed by a name (a duration outside [...]?)")
        elif _OPERATOR.match(expr, i):
            i = _OPERATOR.match(expr, i).end()
        elif _IDENT.match(expr, i):
            word = _IDENT.match(expr, i).group()
            lower = word.lower()
            i += len(word)
            follows_paren = expr.startswith("(", _skip_ws(expr, i))
            if lower in GROUPING:
                i = _label_list(expr, i)
            elif lower == "offset":
                i = _offset(expr, i)
            elif (
                lower in KEYWORDS
                or lower in AGGREGATIONS
                or lower in _SPECIAL_NUMBER
                or (word in FUNCTIONS and follows_paren)
            ):
                pass
            elif follows_paren:
                raise _fail(expr, i - len(word), f"{word}(...) is not a PromQL function of Prometheus 2.42")
            else:
                names.add(word)
        else:
            raise _fail(expr, i, f"unexpected character {char!r}")


_LABEL_VALUES = re.compile(r"^\s*label_values\s*\((?P<args>.*)\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\s*\((?P<expr>.*)\)\s*$", re.S)
_LABEL_NAMES = re.compile(r"^\s*label_names\s*\(\s*\)\s*$")
_METRICS = re.compile(r"^\s*metrics\s*\((?P<regex>.*)\)\s*$", re.S)


def grafana_query_names(query: str) -> set[str]:
    """The metric names a Grafana Prometheus template query reads.

    label_values(label) reads no metric; label_values(expr, label) and query_result(expr)
    read those of expr; metrics(re) is refused (it names no metric: nothing to check).
    """
    match = _LABEL_VALUES.match(query)
    if match:
        args = match.group("args")
        expr, comma, label = args.rpartition(",")
        if not comma:
            if not _LABEL.fullmatch(args.strip()):
                raise PromQLTokenError(f"label_values({args}) needs a label name")
            return set()
        if not _LABEL.fullmatch(label.strip()):
            raise PromQLTokenError(f"label_values(...): {label.strip()!r} is not a label name in {query!r}")
        return metric_names(expr)
    match = _QUERY_RESULT.match(query)
    if match:
        return metric_names(match.group("expr"))
    if _LABEL_NAMES.match(query):
        return set()
    if _METRICS.match(query):
        raise PromQLTokenError(f"{query!r}: metrics(...) selects names by regex; list them instead")
    return metric_names(query)
