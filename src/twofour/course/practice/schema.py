"""The bank's structure, as a JSON Schema whose every node's "x-message" says what an author got wrong.

:func:`_schema_error` adds where and the value found; :func:`~.load.parse_question` checks the rest.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping

from ..._common.text import printable
from .terms import (BASES, CALCULATOR_KEYS, FORMULAS, GRADES, KINDS, KINDS_BY_LEVEL, LEVELS, RUBRIC_FIELDS, TOPICS, UNITS, BankError,
                    NAME, SLUG)


def _text_schema(message: str) -> dict:
    return {"type": "string", "pattern": r"\S", "x-message": message}


def _texts_schema(key: str, low: int, high: int) -> dict:
    return {"type": "array", "minItems": low, "maxItems": high,
            "items": _text_schema(f"{key}[{{index}}] must be non-empty text"),
            "x-message": f"{key!r} must be a list of {low}-{high} texts", "x-count": f"{key!r} must have {low}-{high} entries"}


def _object_schema(properties: dict, required: list[str], message: str, unknown: str) -> dict:
    """A mapping of only ``properties``; an unknown key is named after ``unknown``, with the valid keys."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False,
            "x-message": message, "x-unknown": f"{unknown} {{unknown}}; valid: " + ", ".join(properties)}


# A quick check whose tolerance is this wide or wider says which approximation it accepts.
ACCEPTS_FROM = 0.02

_NUMBER_SCHEMA = _object_schema(
    {
        "name": {"type": "string", "pattern": NAME.pattern, "x-message": "number name must be lower_snake_case"},
        "expr": {"anyOf": [{"type": "string", "pattern": r"\S"}, {"type": "number"}],
                 "x-message": "number {name!r} needs an expr"},
        "fmt": {"type": "string", "pattern": r"\{", "x-message": "number {name!r}: fmt must be a format template like '{{:.3f}}'"},
        "label": _text_schema("number {name!r} needs a label"),
        "source": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": r"\S"}],
                   "x-message": "number {name!r}: source must be text"},
    },
    ["name", "expr", "label"], "each number must be a mapping",
    "unknown number keys",
)
_ACCEPT_SCHEMA = _object_schema(
    {
        "number": {"type": "string", "x-message": "quick_check.accepts[{index}].number must name one of the question's numbers"},
        "why": _text_schema("quick_check.accepts[{index}].why must say which approximation it is, e.g. '1/0.5625 ~ 1.78 from memory'"),
    },
    ["number", "why"], "each quick_check.accepts entry must be a mapping with number and why",
    "unknown quick_check.accepts keys",
)
_QUICK_CHECK_SCHEMA = {
    **_object_schema(
        {
            "ask": _text_schema("'ask' must be non-empty text"),
            "answer": {"type": "string", "x-message": "quick_check.answer must name one of the question's numbers"},
            "unit": {"enum": sorted(UNITS), "x-message": f"quick_check.unit must be one of {sorted(UNITS)} "
                                                         "(bytes as MB/MiB/GB/GiB explicitly)"},
            "tolerance": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5,
                          "x-message": "quick_check.tolerance must be a relative tolerance in (0, 0.5)"},
            "accepts": {"type": "array", "minItems": 1, "maxItems": 3, "items": _ACCEPT_SCHEMA,
                        "x-message": "quick_check.accepts must be a list of 1-3 approximations ({number, why})",
                        "x-count": "'accepts' must have 1-3 entries"},
            "derivation": _text_schema("'derivation' must be non-empty text"),
            "scale": {"type": "number", "exclusiveMinimum": 0, "x-message": "quick_check.scale must be a positive number"},
            "basis": {"enum": sorted(BASES), "x-message": f"quick_check.basis must be one of {sorted(BASES)} "
                                                          "(never a model's prediction)"},
        },
        ["ask", "answer", "derivation", "basis"], "quick_check must be a mapping",
        "unknown quick_check keys",
    ),
    # The standard estimates a wide tolerance admits are written down and tested to land inside it.
    "if": {"required": ["tolerance"], "properties": {"tolerance": {"type": "number", "minimum": ACCEPTS_FROM}}},
    "then": {"required": ["accepts"], "properties": {"accepts": {
        "x-message": f"a quick check with a tolerance of {ACCEPTS_FROM:.0%} or more must list the approximations it "
                     "accepts (quick_check.accepts: [{{number, why}}])"}},
             "x-message": "quick_check.accepts is missing"},
}
_RUBRIC_SCHEMA = _object_schema(
    {
        "must": _texts_schema("must", 2, 5),
        "strong": _texts_schema("strong", 1, 4),
        "red_flags": _texts_schema("red_flags", 1, 4),
    },
    list(RUBRIC_FIELDS),
    "rubric must be a mapping: must (an answer without any of these fails), strong (signals of a strong answer), "
    "red_flags",
    "unknown rubric keys",
)
_LEVELS_SCHEMA = _object_schema(
    {grade: _text_schema(f"levels.{grade} must say what a pass looks like for a {label.lower()}")
     for grade, label in GRADES.items()},
    list(GRADES), f"levels must be a mapping with what a pass looks like at each of {list(GRADES)}",
    "unknown levels keys",
)
_DESIGN_SCHEMA = _object_schema(
    {"assumptions": _texts_schema("assumptions", 2, 5), "changes": _texts_schema("changes", 2, 5)},
    ["assumptions", "changes"],
    "design must be a mapping: assumptions (what the worked answer assumes) and changes (what would change the decision)",
    "unknown design keys",
)


# A follow-up (questions.FollowUp) is a bare question, or {ask, answer, strong}. Chains escalate.
_FOLLOW_UP_SCHEMA = {"anyOf": [
    {"type": "string", "pattern": r"\S"},
    _object_schema(
        {"ask": _text_schema("follow_ups[{index}].ask must be non-empty text"),
         "answer": _text_schema("follow_ups[{index}].answer must be non-empty text: the answer expected"),
         "strong": _text_schema("follow_ups[{index}].strong must be non-empty text: what a strong answer adds")},
        ["ask", "answer"], "each follow-up must be text or a mapping {ask, answer, strong}",
        "unknown follow-up keys"),
], "x-message": "follow_ups[{index}] must be non-empty text or a mapping {ask, answer, strong}"}


QUESTION_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "one question of the practice bank (twofour/course/data/practice.yaml)",
    **_object_schema(
        {
            "id": {"type": "string", "pattern": SLUG.pattern, "x-message": "id must be lower-case-with-dashes"},
            "level": {"enum": list(LEVELS), "x-message": f"level must be one of {LEVELS}"},
            "topic": {"enum": sorted(TOPICS), "x-message": f"topic must be one of {sorted(TOPICS)}"},
            "kind": {"enum": list(KINDS), "x-message": f"kind must be one of {list(KINDS)}"},
            "skill": {"type": "string", "pattern": SLUG.pattern,
                      "x-message": "skill must be lower-case-with-dashes: what the question tests"},
            "setting": {"type": "string", "pattern": SLUG.pattern,
                        "x-message": "setting must be lower-case-with-dashes: the scenario it is asked in"},
            "drills": {"type": "array", "maxItems": 2, "uniqueItems": True,
                       "items": {"enum": sorted(FORMULAS), "x-message": f"drills[{{index}}] must be one of {sorted(FORMULAS)}"},
                       "x-message": "drills must be a list of at most 2 formulas", "x-count": "'drills' must have 0-2 entries"},
            "title": _text_schema("'title' must be non-empty text"),
            "prompt": _text_schema("'prompt' must be non-empty text"),
            "rubric": _RUBRIC_SCHEMA,
            "levels": _LEVELS_SCHEMA,
            "answer": _text_schema("'answer' must be non-empty text"),
            "design": _DESIGN_SCHEMA,
            "mistakes": _texts_schema("mistakes", 1, 5),
            "follow_ups": {"type": "array", "minItems": 1, "maxItems": 3, "items": _FOLLOW_UP_SCHEMA,
                           "x-message": "'follow_ups' must be a list of 1-3 follow-ups",
                           "x-count": "'follow_ups' must have 1-3 entries"},
            "connects": _text_schema("'connects' must be non-empty text"),
            "numbers": {"anyOf": [{"type": "null"}, {"type": "array", "items": _NUMBER_SCHEMA}],
                        "x-message": "numbers must be a list"},
            "quick_check": {"anyOf": [{"type": "null"}, _QUICK_CHECK_SCHEMA], "x-message": "quick_check must be a mapping"},
            "calculator": {"type": "object", "minProperties": 1,
                           "propertyNames": {"enum": list(CALCULATOR_KEYS),
                                             "x-message": f"calculator keys must be the calculator's URL keys {list(CALCULATOR_KEYS)}"},
                           "additionalProperties": {"type": ["string", "number"], "x-message": "calculator values must be text or numbers"},
                           "x-message": "calculator must be a mapping of the calculator's URL keys to the state a task opens it in"},
            "chapter": {"type": ["string", "null"], "x-message": "chapter must be a path such as notebooks/06-amdahl.ipynb"},
            "sources": {"anyOf": [{"type": "null"}, {"type": "array", "items": {
                            "type": "string", "x-message": "sources must be a list of texts"}}],
                        "x-message": "sources must be a list of texts"},
        },
        ["id", "level", "topic", "kind", "skill", "setting", "title", "prompt", "rubric", "levels", "answer", "mistakes",
         "follow_ups", "connects"],
        "must be a mapping", "unknown keys",
    ),
    "allOf": [
        *({"if": {"required": ["level"], "properties": {"level": {"const": level}}},
           "then": {"properties": {"kind": {"enum": list(kinds), "x-message":
                                            f"a {level} question's kind must be one of {list(kinds)}"}}}}
          for level, kinds in KINDS_BY_LEVEL.items()),
        # A design question comes with its assumptions and what would change the decision; any
        # other kind has none (they would go unrendered as a design).
        {"if": {"required": ["kind"], "properties": {"kind": {"const": "design"}}},
         "then": {"required": ["design"], "properties": {"design": {
             "x-message": "a design question needs design: {{assumptions: [...], changes: [...]}} (what the answer "
                          "assumes, and what would change the decision)"}}},
         "else": {"not": {"required": ["design"]}, "x-message": "only a question of kind 'design' has a design block"}},
    ],
}
BANK_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["questions"], "properties": {"questions": {"type": "array"}},
    "x-message": "expected a mapping with a 'questions' list at the top",
}


def _path_text(path) -> str:
    """``numbers[0].fmt`` for the path ``["numbers", 0, "fmt"]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _narrowest(error):
    """The error to report: inside an anyOf, the branch that got furthest (a wrong item in a list
    beats "not null"); otherwise the error itself."""
    if error.validator == "anyOf" and error.context:
        deepest = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        if len(deepest.absolute_path) > len(error.absolute_path) or "x-message" in deepest.schema:
            return _narrowest(deepest)
    return error


def _schema_error(error, where: str, document=None) -> BankError:
    """A BankError for one jsonschema error: where, the path in the document, what is wrong and valid."""
    error = _narrowest(error)
    path = list(error.absolute_path)
    schema, instance = error.schema, error.instance
    if error.validator == "required":
        missing = next(p for p in error.validator_value if p not in instance)
        path, schema, instance = path + [missing], schema["properties"][missing], None
    name, node = None, document  # the name of the nearest enclosing number, for its messages
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, Mapping) and "name" in node:
            name = node["name"]
    ints = [part for part in path if isinstance(part, int)]
    fields = {"name": name, "index": ints[-1] if ints else ""}
    if error.validator == "additionalProperties":
        unknown = sorted(set(instance) - set(schema.get("properties", {})))
        message = schema["x-unknown"].format(unknown=unknown)
    elif error.validator in ("minItems", "maxItems") and "x-count" in schema:
        message = f"{schema['x-count']}, got {len(instance)}"
    else:
        # jsonschema's own message may hold braces of the document ("{'a', 'b'} is not ..."): only
        # the schema's x-message is a template; a value from the file is shown escaped and short.
        template = schema.get("x-message")
        text = template.format(**fields) if template else printable(error.message, 200)
        if error.validator == "not":  # the whole mapping matched what it must not: nothing to quote
            message = text
        else:
            got = type(instance).__name__ if schema.get("type") in ("array", "object") else printable(repr(instance), 200)
            message = f"{text}, got {got}"
    at = f" (at {_path_text(path)})" if path else ""
    return BankError(f"{where}{at}: {message}")


@functools.lru_cache(maxsize=None)
def _validator(which: str):
    import jsonschema

    schema = QUESTION_SCHEMA if which == "question" else BANK_SCHEMA
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _answer_schema(raw) -> dict:
    """QUESTION_SCHEMA with quick_check.answer restricted to the names of the question's numbers."""
    numbers = raw.get("numbers") if isinstance(raw, Mapping) else None
    names = sorted({n.get("name") for n in numbers if isinstance(n, Mapping) and isinstance(n.get("name"), str)}
                   if isinstance(numbers, list) else set())
    schema = copy.deepcopy(QUESTION_SCHEMA)
    quick_check = schema["properties"]["quick_check"]["anyOf"][1]
    quick_check["properties"]["answer"] = {
        "enum": names, "x-message": f"quick_check.answer must name one of the question's numbers {names}"}
    quick_check["properties"]["accepts"]["items"]["properties"]["number"] = {
        "enum": names, "x-message": f"quick_check.accepts[{{index}}].number must name one of the question's numbers {names}"}
    return schema


def validate(raw, which: str, where: str) -> None:
    validator = _validator(which)
    if which == "question" and isinstance(raw, Mapping) and isinstance(raw.get("quick_check"), Mapping):
        validator = type(validator)(_answer_schema(raw))
    error = next(iter(validator.iter_errors(raw)), None)
    if error is not None:
        raise _schema_error(error, where, raw)
    if which == "question":
        _check_texts(raw, where)


# Bank texts become Markdown on the site, which passes raw HTML through: a tag, a comment or a
# javascript: link in a question would be page markup, not text. A lone surrogate (YAML's "\ud800")
# is not text at all: it cannot be written as UTF-8.
_MARKUP = re.compile(r"<[A-Za-z!/?]|\]\(\s*(?:javascript|data|vbscript):", re.IGNORECASE)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_texts(value, where: str, path: str = "") -> None:
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise BankError(f"{where}: {path or 'a text'} holds a lone surrogate ({printable(value, 60)!r}): not text; "
                            "write the character itself")
        hit = _MARKUP.search(value)
        if hit:
            raise BankError(f"{where}: {path or 'a text'} holds markup ({printable(value[hit.start():hit.start() + 30], 40)!r}): "
                            "bank texts are Markdown text, never HTML or script links; write '&lt;' or 'a < b' with spaces")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_texts(v, where, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_texts(v, where, f"{path}[{i}]")


def require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise BankError(f"{where}: {message}")
