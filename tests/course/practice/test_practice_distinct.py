"""No two questions of the practice bank are one question asked twice.

Texts are compared as sets of content words (lower case, ``{{placeholders}}`` and common function
words removed; token-set Jaccard): the prompts, every pair of must-haves, every pair of "common
mistakes". Word sets, not character diffs, because a re-worded copy keeps its words and loses its
order. The thresholds sit between what the bank's distinct questions reach and what a copy
reaches: two prompts that share the scenario and the ask share about half their content words,
a copied must-have or mistake shares nearly all of them (the shipped bank had three mistakes
copied word for word, at 1.0), while different questions about the same deployment stay near a
quarter. A pair above a threshold fails with both ids and both texts.
"""

from __future__ import annotations

import itertools
import re

import pytest

from twofour.course.practice import load_bank

BANK = load_bank()
# Words every question about 2:4 uses; they say nothing about which question it is.
STOP = frozenset(
    "a an the of to in on at for and or is are be it its this that with by as from what which why how does do you "
    "your not no than then each one into when would will can".split()
)
THRESHOLDS = {"prompt": 0.36, "must": 0.36, "mistakes": 0.5}


def words(text: str) -> frozenset[str]:
    """Content words of ``text``.

    >>> sorted(words("What does {{s}} mean for the 2:4 GEMM?"))
    ['2:4', 'gemm', 'mean']
    """
    text = re.sub(r"\{\{\s*\w+\s*\}\}", " ", text.lower())
    return frozenset(w for w in re.findall(r"[a-z0-9][a-z0-9:+\-]*", text) if w not in STOP)


def similarity(a: str, b: str) -> float:
    """Token-set Jaccard of two texts (0: no shared content word, 1: the same words)."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def texts(q, part: str) -> tuple[str, ...]:
    return {"prompt": (q.prompt,), "must": q.rubric.must, "mistakes": q.mistakes}[part]


def closest_pairs(part: str, questions=None):
    """(similarity, id, id, text, text) for every pair of questions, most similar first."""
    out = []
    for x, y in itertools.combinations(questions or list(BANK), 2):
        best = max(((similarity(a, b), a, b) for a in texts(x, part) for b in texts(y, part)), key=lambda t: t[0])
        out.append((best[0], x.id, y.id, best[1], best[2]))
    return sorted(out, reverse=True)


@pytest.mark.parametrize("part", sorted(THRESHOLDS))
def test_no_two_questions_share_a_prompt_a_must_have_or_a_mistake(part):
    limit = THRESHOLDS[part]
    over = [p for p in closest_pairs(part) if p[0] >= limit]
    assert not over, "\n".join(f"{s:.2f} {a} ~ {b}:\n  {ta!r}\n  {tb!r}" for s, a, b, ta, tb in over[:5])


def test_the_measure_catches_a_copy_and_a_reworded_copy():
    q = BANK.get("run-to-run-variance")
    reworded = "Throughput of the serving benchmark varies run to run; a 2:4 build is claimed faster. With runs " \
               "alternating, how many runs of each do you need before the difference stands out?"
    assert similarity(q.prompt, q.prompt) == 1.0
    assert similarity(q.prompt, reworded) >= THRESHOLDS["prompt"]
    assert similarity(q.prompt, BANK.get("what-is-two-four").prompt) < 0.1


# ---- scenarios: no two questions are one setup asked twice ---------------------------------------
#
# Text similarity misses a question re-asked on the same setup in new words (the bank had a
# capacity question and its "follow-up" on one model, GPU, context and target, 1.42x and batch 46
# in both; an MFU question on the very GEMM and timings of a roofline one). So questions are also
# compared by their *setups*: the measurements and workload models behind the numbers they show.
# A setup is one call of a scenario function (the H200 run and its traces, published GEMM
# timings, the request and capacity models), with earlier numbers written out and its arguments
# bound to the function's signature (defaults filled in), less the argument that only picks which
# field of the result to read: measured_gemm(4096, 14336, 4096) and its 'dense_us' are one
# measurement. Facts of the hardware, a format or a model (a ridge point, the packed ratio, a KV
# size per token) are not setups, and neither is the worked deployment's verdict, one set of
# numbers every page quotes by design. One shared setup is a cross-reference (a question cites
# another's result as context), unless it is all that either question rests on (the MFU and the
# roofline question each rested on one and the same GEMM measurement); two are one setup asked twice.
SCENARIO_CALLS = re.compile(
    r"\b(?:measured_gemm|measured_phase_speedup|measured_bandwidth_ratio|measured_crossover_m|recorded_launch|"
    r"searched_gemm|replaced_timings|published_speedup|published_value|estimate|capacity_at_tpot|"
    r"break_even_bandwidth_ratio|decode_step_bytes|kv_batch_limit|WORKLOADS)\b")
WORKED_DEPLOYMENT = re.compile(r"\b(?:verdict_table|bf16_rows|decode_loss_explanation)\b")
READS_A_FIELD = frozenset({"what", "field_name"})
SHARED_LIMIT = 2
NAME = re.compile(r"(?<![.\w'\"])([a-z_]\w*)(?![\w'\"(])")


def expanded_expressions(q) -> dict[str, str]:
    """Each number's expression with the earlier numbers it names written out (whitespace removed).

    >>> ex = expanded_expressions(BANK.get("capacity-at-slo"))
    >>> "formats.capacity_at_tpot(LLAMA_3_70B" in ex["b_dense"]
    True
    """
    out: dict[str, str] = {}
    for n in q.numbers:
        expr = re.sub(r"\s+", "", n.expr)
        out[n.name] = NAME.sub(lambda m: f"({out[m.group(1)]})" if m.group(1) in out else m.group(0), expr)
    return out


def _registered(dotted: str):
    """The toolkit function a bank name stands for (``formats.capacity_at_tpot`` -> the function)."""
    from twofour.course.practice.registry import NAMESPACE

    head, _, attr = dotted.partition(".")
    entry = NAMESPACE[head].members[attr] if attr else NAMESPACE[head]
    return getattr(entry, "fn", entry)


def _outer_calls(expr: str) -> list[str]:
    """The outermost scenario calls (or ``WORKLOADS[...]`` lookups) in ``expr``, as source text."""
    spans, i = [], 0
    for m in SCENARIO_CALLS.finditer(expr):
        if m.start() < i:
            continue  # inside a call already taken
        start = m.start()
        while start > 0 and (expr[start - 1].isalnum() or expr[start - 1] in "._"):
            start -= 1  # the namespace: formats.capacity_at_tpot
        opening = expr[m.end():m.end() + 1]
        if opening not in ("(", "["):
            continue
        depth, j = 0, m.end()
        for j in range(m.end(), len(expr)):
            depth += expr[j] in "(["
            depth -= expr[j] in ")]"
            if depth == 0:
                break
        spans.append(expr[start:j + 1])
        i = j + 1
    return spans


def setup_of(call: str) -> str:
    """One scenario call as a setup: arguments bound to the signature, defaults filled, field choice dropped.

    >>> setup_of("measured_gemm(4096,14336,4096)") == setup_of("measured_gemm(4096,14336,4096,'bfloat16','graph','dense_us')")
    True
    """
    import ast
    import inspect

    node = ast.parse(call, mode="eval").body
    if isinstance(node, ast.Subscript):
        return ast.unparse(node)
    fn = _registered(ast.unparse(node.func).removeprefix("request.").removeprefix("twofour."))
    args = [ast.unparse(a) for a in node.args]
    kwargs = {k.arg: ast.unparse(k.value) for k in node.keywords}
    given = inspect.signature(fn).bind(*args, **kwargs).arguments  # source text of what the call spells out
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    shown = {k: given[k] if k in given else repr(v) for k, v in bound.arguments.items() if k not in READS_A_FIELD}
    return f"{ast.unparse(node.func)}({', '.join(f'{k}={v}' for k, v in shown.items())})"


def setups(q) -> frozenset[str]:
    """The setups behind the numbers ``q`` shows its reader (see the comment above)."""
    shown = q.prompt + q.answer
    return frozenset(
        setup_of(call) for name, expr in expanded_expressions(q).items()
        if re.search(r"\{\{\s*" + name + r"\s*\}\}", shown) and not WORKED_DEPLOYMENT.search(expr)
        for call in _outer_calls(expr))


def shared_setups(questions):
    """(count, id, id, shared setups) for each pair that is one setup asked twice, most shared first:
    SHARED_LIMIT setups or more in common, or one that is everything both questions rest on."""
    found = {q.id: setups(q) for q in questions}
    pairs = []
    for a, b in itertools.combinations(questions, 2):
        shared = found[a.id] & found[b.id]
        if len(shared) >= SHARED_LIMIT or (shared and shared == found[a.id] == found[b.id]):
            pairs.append((len(shared), a.id, b.id, sorted(shared)))
    return sorted(pairs, reverse=True)


def test_no_two_questions_share_a_setup():
    over = shared_setups(list(BANK))
    assert not over, "\n".join(f"{a} ~ {b} rest on {n} of the same setups:\n  " + "\n  ".join(s)
                               for n, a, b, s in over[:5])


def test_the_setup_measure_catches_a_setup_asked_again_in_new_words():
    import dataclasses

    original = BANK.get("capacity-at-slo")
    assert len(setups(original)) == 2  # the dense and the 2:4 capacity at one model, GPU, context, target
    # a re-asked copy: new prose, the numbers under new names, spelled with other spacing
    renamed = {n.name: f"{n.name}_again" for n in original.numbers}

    def rename(text: str) -> str:
        return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: "{{" + renamed[m.group(1)] + "}}", text)

    numbers = tuple(dataclasses.replace(n, name=renamed[n.name], expr=NAME.sub(
        lambda m: renamed.get(m.group(1), m.group(0)), n.expr).replace(", ", ",")) for n in original.numbers)
    again = dataclasses.replace(original, id="capacity-again", numbers=numbers,
                                prompt="A different story about " + rename(original.prompt),
                                answer=rename(original.answer))
    assert shared_setups([original, again])
    # one measurement read two ways is one setup, and a pair resting on nothing else is caught
    mfu_like = dataclasses.replace(BANK.get("compute-bound-ncu"), id="mfu-like")
    assert shared_setups([BANK.get("compute-bound-ncu"), mfu_like])
    assert setup_of("measured_gemm(4096, 14336, 4096)") == setup_of(
        "measured_gemm(4096, 14336, 4096, 'bfloat16', 'graph', 'sparse_us')")
    assert setup_of("measured_gemm(4096, 14336, 4096)") != setup_of("measured_gemm(4096, 14336, 4096, 'float16')")
    # the capacity pair the bank had: the break-even question now has its own (latency-bound) setup
    assert not shared_setups([original, BANK.get("capacity-break-even-kernel")])
    # a fact is not a setup, and the worked deployment's verdict is quoted freely
    assert not setups(BANK.get("packed-bytes"))
    assert not any(WORKED_DEPLOYMENT.search(s) for s in setups(BANK.get("two-minute-answer")))
