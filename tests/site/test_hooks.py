"""Unit tests of the site hooks' pure parts: notebook rendering, math, execution cache keys, API page."""

from __future__ import annotations

import base64
import doctest
import os
import re
import sys
from pathlib import Path

import nbformat.v4 as v4
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "site_hooks"))

import mathml  # noqa: E402
import nav_whitespace  # noqa: E402
import nb_execute  # noqa: E402
import nb_links  # noqa: E402
import griffe_doctests  # noqa: E402
import nb_render  # noqa: E402
import practice  # noqa: E402
import quick  # noqa: E402
import reference  # noqa: E402
import search_terms  # noqa: E402

PNG = base64.b64encode(b"\x89PNG fake").decode()


def _notebook():
    install = v4.new_code_cell('%pip install twofour', metadata={"tags": ["hide-on-site"]})
    shown = v4.new_code_cell("print('hi')")
    shown.outputs = [v4.new_output("stream", name="stdout", text="hi <b>\n")]
    figure = v4.new_code_cell("plot()", metadata={"tags": ["hide-input"]})
    figure.outputs = [v4.new_output("display_data", {"image/png": PNG, "text/plain": "<Figure>"})]
    quiet = v4.new_code_cell("x = 1", metadata={"tags": ["hide-output"]})
    quiet.outputs = [v4.new_output("stream", name="stdout", text="SECRET")]
    return v4.new_notebook(cells=[
        v4.new_markdown_cell("# Title\n\nIntro with $x^2$."), install, shown, figure, quiet,
    ])


def test_render_applies_cell_tags_and_escapes_output():
    r = nb_render.render(_notebook(), stem="demo", actions_html='<div class="nb-actions">A</div>')
    md = r.markdown
    assert "%pip install" not in md  # hide-on-site
    assert "plot()" not in md  # hide-input
    assert "x = 1" in md and "SECRET" not in "".join(r.outputs)  # hide-output
    assert md.index("# Title") < md.index("<!-- nb-output 0 -->") < md.index("Intro")
    assert r.outputs[0] == '<div class="nb-actions">A</div>'
    assert "hi &lt;b&gt;" in r.outputs[1]  # program output is escaped, never parsed as HTML
    assert r.images == {"demo-cell3-0.png": b"\x89PNG fake"}
    assert 'src="demo-cell3-0.png"' in r.outputs[2] and "alt=" in r.outputs[2]


def test_lab_check_messages_are_marked_to_wrap_and_other_output_is_not():
    cells = []
    for text, name in [("passed: all 6 weights judged right\n", "stdout"),
                       ("not done yet: `prune_2to4` still raises NotImplementedError.\n  Write it ...\n", "stdout"),
                       ("M      t_ms\npassed: 2\n", "stdout"), ("passed: warned\n", "stderr")]:
        cell = v4.new_code_cell("check(f)")
        cell.outputs = [v4.new_output("stream", name=name, text=text)]
        cells.append(cell)
    r = nb_render.render(v4.new_notebook(cells=[v4.new_markdown_cell("# T"), *cells]), stem="lab")
    classes = [out.split('<pre class="', 1)[1].split('"')[0] for out in r.outputs]
    # a check message wraps; aligned columns keep their lines; other sentences wrap too
    assert classes == ["nb-stream nb-check", "nb-stream nb-check", "nb-stream nb-wrap", "nb-stream nb-stderr nb-wrap"]


def test_printed_sentences_wrap_and_columns_scroll():
    cells = []
    for text in ("end to end 0.05x, below the 0.71x the GEMMs alone explain: the rest is the step\n",
                 "M      dense    2:4\n1      10.0     12.0\n"):  # two lines aligned: columns
        cell = v4.new_code_cell("print(x)")
        cell.outputs = [v4.new_output("stream", name="stdout", text=text)]
        cells.append(cell)
    r = nb_render.render(v4.new_notebook(cells=[v4.new_markdown_cell("# T"), *cells]), stem="demo")
    classes = [out.split('<pre class="', 1)[1].split('"')[0] for out in r.outputs]
    assert classes == ["nb-stream nb-wrap", "nb-stream"]


def test_checking_cells_fold_their_code_and_keep_their_output():
    checking = v4.new_code_cell("y = f(x)\nassert y > 0\nassert y < 1\nassert y != 0.5\nprint(y)")
    checking.outputs = [v4.new_output("stream", name="stdout", text="0.25\n")]
    teaching = v4.new_code_cell("W24, mask = prune(W)\nassert check(W24).valid")
    long_one = v4.new_code_cell("\n".join(f"a{i} = {i}" for i in range(nb_render.CHECK_LINES + 1)))
    kept = v4.new_code_cell("assert a\nassert b\nassert c", metadata={"tags": ["show-code"]})
    tagged = v4.new_code_cell("setup()", metadata={"tags": ["collapse-code"]})
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# T"), checking, teaching, long_one, kept, tagged])
    md = nb_render.render(nb, stem="demo").markdown
    folded = re.findall(r"<details class=\"nb-code\".*?</details>", md, re.S)
    assert len(folded) == 3, md
    assert '<summary>Show the code (5 lines, 3 checks)</summary>' in md
    assert "prune(W)" not in "".join(folded) and "assert c" not in "".join(folded) and "setup()" in "".join(folded)
    assert "<!-- nb-output 0 -->" in md.split("</details>", 1)[1]  # the output is outside the fold
    assert md.count("```python") == 5  # every cell's code is on the page, folded or not


def test_fill_outputs_replaces_every_placeholder():
    html = "<p><!-- nb-output 1 --></p><p>text</p>\n<!-- nb-output 0 -->"
    assert nb_render.fill_outputs(html, ["A", "B"]) == "B<p>text</p>\nA"


def test_fence_survives_backticks_in_code():
    fenced = nb_render._fence('s = """```"""')
    assert fenced.startswith("````python") and fenced.endswith("````")


@pytest.mark.parametrize("module", [nb_render, nb_links, mathml, nav_whitespace, search_terms, quick, griffe_doctests])
def test_docstring_examples(module):
    assert doctest.testmod(module).failed == 0


def test_mathml_replaces_arithmatex_markup():
    page = type("P", (), {"file": type("F", (), {"src_uri": "x.md"})()})()
    html = '<p><span class="arithmatex">\\(a &lt; b\\)</span></p><div class="arithmatex">\\[\\frac{1}{2}\\]</div>'
    out = mathml.on_page_content(html, page, None, None)
    assert "arithmatex" not in out
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in out
    assert "<mo>&#x0003C;</mo>" in out and "<mfrac>" in out  # the escaped "<" survived as an operator


def test_cache_key_follows_notebook_and_package(tmp_path):
    nb = tmp_path / "a.ipynb"
    nb.write_text("{}")
    key = nb_execute.cache_key(nb, "pkg1")
    assert key == nb_execute.cache_key(nb, "pkg1")
    assert key != nb_execute.cache_key(nb, "pkg2")
    nb.write_text('{"changed": 1}')
    assert key != nb_execute.cache_key(nb, "pkg1")


@pytest.mark.slow
def test_a_cell_that_gets_no_answer_reruns_the_notebook_once_then_fails_saying_so(monkeypatch, capfd):
    """A kernel that stops answering (seen twice in a build's chapter 4) costs one cell timeout and
    one more run in a new kernel; a notebook that times out again fails with the cell named."""
    import nbformat

    folder = nb_execute.ROOT / "build" / "test-timeouts"
    folder.mkdir(parents=True, exist_ok=True)
    nb = folder / f"sleeps-{os.getpid()}.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time; time.sleep(60)")]), nb)
    monkeypatch.setenv("TWOFOUR_CELL_TIMEOUT_S", "2")
    try:
        with pytest.raises(nb_execute.NotebookExecutionError, match=r"(?s)sleeps-.*timed out"):
            nb_execute._execute_in_subprocess(nb, folder / "out.ipynb")
    finally:
        nb.unlink()
    err = capfd.readouterr().err
    assert err.count("running the notebook again in a new kernel") == 1, err
    assert not (folder / "out.ipynb").exists()


def test_api_page_follows_the_rooms_toolkit_first():
    groups = reference.api_groups()
    rooms = [room for room, *_ in groups]
    assert rooms == sorted(rooms, key=[reference.TOOLKIT, reference.CLI, reference.COURSE].index)
    listed = [m for *_, modules in groups for m in modules]
    assert sorted(listed) == sorted(reference._documented_modules()), "a module is missing or listed twice"
    assert all(title != "Other modules" for _, title, *_ in groups), "put every module in its stage's group"
    assert all(reference._room_of(m) == room for room, _, _, modules in groups for m in modules)


def test_api_page_shows_an_unlisted_module_at_the_end_of_its_room(monkeypatch):
    trimmed = [(r, t, b, [m for m in ms if m != "twofour.funnel"]) for r, t, b, ms in reference.API_GROUPS]
    monkeypatch.setattr(reference, "API_GROUPS", trimmed)
    groups = reference.api_groups()
    other = [i for i, g in enumerate(groups) if g[1] == "Other modules"]
    assert len(other) == 1 and groups[other[0]][3] == ["twofour.funnel"]
    assert groups[other[0] - 1][0] == reference.TOOLKIT and groups[other[0] + 1][0] == reference.CLI


# ---- figures: numbered, captioned, each with its own alt text ---------------------------------


def _png(title: str | None = None, description: str | None = None, size=(40, 20)) -> str:
    import io

    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if title:
        info.add_text("Title", title)
    if description:
        info.add_text("Description", description)
    buf = io.BytesIO()
    Image.new("RGB", size, (255, 255, 255)).save(buf, format="PNG", pnginfo=info)
    return base64.b64encode(buf.getvalue()).decode()


def _figure_notebook():
    from_metadata = v4.new_code_cell("fig", metadata={"figure": {"alt": "Cell alt.", "caption": "Cell caption."}})
    from_metadata.outputs = [v4.new_output("display_data", {"image/png": _png("PNG title")})]
    from_display = v4.new_code_cell("fig2")
    from_display.outputs = [v4.new_output(
        "display_data", {"image/png": _png(size=(80, 40))},
        metadata={"image/png": {"width": 40, "height": 20, "alt": "Display alt.", "title": "Display title"}},
    )]
    from_png = v4.new_code_cell("fig3")
    from_png.outputs = [v4.new_output("display_data", {"image/png": _png("Speedup against M", "Lines per GPU.")})]
    bare = v4.new_code_cell("fig4")
    bare.outputs = [v4.new_output("display_data", {"image/png": _png()}),
                    v4.new_output("display_data", {"image/png": _png()})]
    svg = v4.new_code_cell("svg")
    svg.outputs = [v4.new_output("display_data", {"image/svg+xml": '<svg viewBox="0 0 10 10"><title>Dispatch path</title></svg>'})]
    return v4.new_notebook(cells=[
        v4.new_markdown_cell("# Chapter *one*"), from_metadata, from_display, from_png,
        v4.new_markdown_cell("## Run it"), bare, svg,
    ])


def test_figures_are_numbered_with_captions_and_specific_alt_text():
    import re

    r = nb_render.render(_figure_notebook(), stem="ch")
    html = "".join(r.outputs)
    captions = re.findall(r'<figcaption><span class="nb-figure__number">Figure (\d+)\.</span> ([^<]*)'
                          r'(?:<span class="nb-zoom-hint">[^<]*</span>)?</figcaption>', html)
    # every picture (PNG or JPEG) opens full size on a tap, for a phone
    assert html.count('<a class="nb-zoom" href="') == html.count("<img ")
    assert [int(n) for n, _ in captions] == [1, 2, 3, 4, 5, 6]
    alts = re.findall(r'alt="([^"]*)"', html) + re.findall(r'aria-label="([^"]*)"', html)
    assert alts[:3] == ["Cell alt.", "Display alt.", "Lines per GPU."]
    assert [c for _, c in captions[:3]] == ["Cell caption.", "Display title", "Speedup against M"]
    # No metadata at all: the page and section say which figure it is, and no two alts repeat.
    assert alts[3] == "Figure 4 of Chapter one, section Run it" and alts[4] == "Figure 5 of Chapter one, section Run it"
    assert "Dispatch path" in alts[5] and captions[5][1] == "Dispatch path"
    assert len(set(alts)) == len(alts) and "Figure produced by the code above" not in html
    # The display metadata's size is the size shown (a 2x PNG shown at half its pixels).
    assert 'width="40" height="20"' in html


def test_png_text_chunks_are_read_and_kept_when_recompressed():
    raw = base64.b64decode(_png("T", "D", size=(200, 100)))
    assert nb_render.png_text(raw) == {"Title": "T", "Description": "D"}
    small = nb_render.smaller_png(raw)
    assert len(small) <= len(raw) and nb_render.png_text(small).get("Description") == "D"
    assert nb_render.png_text(b"not a png") == {} and nb_render.smaller_png(b"not a png") == b"not a png"


def test_a_recompressed_figure_is_kept_by_its_hash_and_read_back_next_build(tmp_path, monkeypatch):
    raw = base64.b64decode(_png("T", "D", size=(200, 100)))
    small = nb_render.smaller_png(raw, cache=tmp_path)
    assert [f.read_bytes() for f in tmp_path.iterdir()] == [small]
    monkeypatch.setattr(nb_render, "_smaller_png", lambda png: pytest.fail("re-encoded a cached figure"))
    assert nb_render.smaller_png(raw, cache=tmp_path) == small


def test_pending_note_says_outputs_are_coming_or_shows_the_error():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "site_hooks"))
    import notebooks

    assert "Outputs are being computed" in notebooks.pending_html()
    failed = notebooks.pending_html("Traceback...\nValueError: <bad>")
    assert "failed" in failed and "ValueError: &lt;bad&gt;" in failed


def test_make_serve_records_a_failed_notebook_and_does_not_run_it_again(tmp_path, monkeypatch):
    ran = []

    def fake(path, out):
        ran.append(path.name)
        if path.name == "bad.ipynb":
            raise nb_execute.NotebookExecutionError("bad.ipynb failed to execute: boom")
        out.parent.mkdir(parents=True, exist_ok=True)
        nb_execute.nbformat.write(v4.new_notebook(), out)

    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    for path in (good, bad):
        nb_execute.nbformat.write(v4.new_notebook(), path)
    monkeypatch.setattr(nb_execute, "_execute_in_subprocess", fake)
    monkeypatch.setattr(nb_execute, "_cache_path", lambda path, key: tmp_path / "cache" / f"{path.stem}-{key}.ipynb")
    monkeypatch.setattr(nb_execute, "FAILURES_DIR", tmp_path / "failed")
    with pytest.raises(nb_execute.NotebookExecutionError, match="boom"):
        nb_execute.execute_notebooks([good, bad], keep_going=True)
    assert sorted(ran) == ["bad.ipynb", "good.ipynb"]
    _done, missing = nb_execute.lookup([good, bad])
    assert list(missing) == [bad] and "boom" in nb_execute.failure(missing[bad])  # what its page shows
    with pytest.raises(nb_execute.NotebookExecutionError, match="boom"):  # still failing, still said
        nb_execute.execute_notebooks([good, bad], keep_going=True)
    assert sorted(ran) == ["bad.ipynb", "good.ipynb"]  # not run again for the same sources
    nb_execute.nbformat.write(v4.new_notebook(metadata={"edited": True}), bad)
    with pytest.raises(nb_execute.NotebookExecutionError):
        nb_execute.execute_notebooks([good, bad], keep_going=True)
    assert sorted(ran) == ["bad.ipynb", "bad.ipynb", "good.ipynb"]  # edited: a new key, a new run


# ---- labs overview and lab footers ----------------------------------------------------------


def test_labs_list_matches_the_notebooks_and_footers_link_solutions():
    import labs

    root = Path(__file__).resolve().parents[2]
    listed = sorted(lab.notebook for lab in labs.LABS)
    found = sorted(p.relative_to(root).as_posix() for p in (root / "labs").glob("lab*.ipynb"))
    assert listed == found
    for lab in labs.LABS:
        assert (root / lab.solutions).is_file() and (root / lab.chapter).is_file()
    table = labs.overview_markdown("labs/index.md")
    assert table.count("\n| [Lab ") == len(labs.LABS)
    assert "(lab1-find-the-broken-groups.ipynb)" in table and "(solutions/lab1-solutions.ipynb)" in table
    assert "(../notebooks/01-structure.ipynb)" in table
    footer = labs.footer_markdown("labs/lab1-find-the-broken-groups.ipynb")
    assert "(solutions/lab1-solutions.ipynb)" in footer and "(index.md)" in footer
    back = labs.footer_markdown("labs/solutions/lab1-solutions.ipynb")
    assert "(../lab1-find-the-broken-groups.ipynb)" in back and "(../lab2-pack-it-by-hand.ipynb)" in back
    assert labs.footer_markdown("notebooks/01-structure.ipynb") is None


# ---- API reference: one page per module, in the nav -----------------------------------------


def test_api_nav_has_every_module_page_toolkit_first():
    nav = [{"Home": "index.md"}, {"Reference": [{"Glossary": "g.md"}, {"Toolkit API": "reference/api.md"}]}]
    new = reference._replace_api_entry(nav)
    section = new[1]["Reference"][1]["Toolkit API"]
    assert section[0] == {"Overview": "reference/api.md"}
    assert [next(iter(group)) for group in section[1:]] == ["Toolkit", "Command line", "Course helpers"]
    pages = [next(iter(p.values())) for group in section[1:] for p in next(iter(group.values()))]
    listed = [m for *_, ms in reference.api_groups() for m in ms]
    assert pages == [reference.module_src(m) for m in listed]
    page = reference.module_page_markdown("twofour.structure")
    assert page.startswith(f"---\nsearch:\n  boost: {reference.API_SEARCH_BOOST}\n---") and "# `twofour.structure`" in page
    assert "\n::: twofour.structure\n" in page


def test_a_package_page_adds_the_names_mkdocstrings_cannot_see_in_its_files():
    # a function that shares its module's name, one imported under another name, and lazy names
    assert reference.unseen_reexports("twofour.structure") == []
    assert reference.unseen_reexports("twofour.packing") == []
    dispatch = reference.unseen_reexports("twofour.dispatch")
    assert {"twofour.dispatch.audit.audit", "twofour.dispatch.probe.probe",
            "twofour.dispatch.trace.analyze.analyze"} <= set(dispatch)
    assert "twofour.serve.predict.predict" in reference.unseen_reexports("twofour.serve")
    practice = reference.unseen_reexports("twofour.course.practice")
    assert "twofour.course.practice.load.load_bank" in practice and len(practice) >= 40
    page = reference.module_page_markdown("twofour.dispatch")
    assert "::: twofour.dispatch\n" in page and "::: twofour.dispatch.audit.audit\n    options:" in page


def test_the_api_summary_is_the_module_docstrings_first_paragraph_read_without_importing():
    assert reference.summary("twofour.packing") == "Stage 2 of the answer: is the weight stored packed?"
    assert reference._inline("see :func:`twofour.check`, ``x < y`` and <stem>") == "see `twofour.check`, `x < y` and &lt;stem>"
    assert reference._ROLE_HTML.sub(r"\1", "a :func:<code>check</code>") == "a <code>check</code>"


# ---- make serve's quick first build (quick.py): what it leaves out says so ------------------


def test_a_quick_build_titles_every_api_page_and_imports_no_module(monkeypatch):
    monkeypatch.setenv(quick.ENV, "quick")
    monkeypatch.setattr(reference.importlib, "import_module", lambda name: pytest.fail(f"a quick build imported {name}"))
    listed = [m for *_, ms in reference.api_groups() for m in ms]
    for name in listed:
        page = reference.module_page_markdown(name)
        assert f"# `{name}`" in page and quick.DEFERRED_NOTE in page and ":::" not in page
    overview = reference.api_markdown()
    assert quick.DEFERRED_NOTE in overview and not re.search(r"\]\(api/[^)]*#", overview)  # no anchor to miss
    assert [line.split("](api/")[1].split(".md)")[0] for line in overview.splitlines() if "](api/" in line] == listed
    monkeypatch.undo()
    monkeypatch.setenv(quick.ENV, "full")  # any other value: the full build
    page = reference.module_page_markdown("twofour.structure")
    assert quick.DEFERRED_NOTE not in page and "::: twofour.structure" in page


def test_the_module_list_is_read_from_the_files_as_walk_packages_reads_it():
    import pkgutil

    import twofour

    walked = [info.name for info in pkgutil.walk_packages(twofour.__path__, prefix="twofour.")]
    assert list(reference._walk_modules(reference.PACKAGE_DIR, "twofour.")) == walked


def test_a_quick_build_reads_no_practice_bank(monkeypatch):
    class Page:
        class file:
            src_uri = "practice/fundamentals.md"

    monkeypatch.setattr(practice, "_bank", lambda: pytest.fail("a quick build read the bank"))
    monkeypatch.setenv(quick.ENV, "quick")
    out = practice.on_page_markdown("# Fundamentals\n\n<!-- practice-level fundamentals -->\n", Page, None, None)
    assert out.startswith("# Fundamentals") and quick.DEFERRED_NOTE in out and "practice-level" not in out
    Page.file.src_uri = "practice/index.md"
    out = practice.on_page_markdown("<!-- practice-mode -->", Page, None, None)
    assert quick.DEFERRED_NOTE in out and "data-practice-mode" not in out


def test_markdown_output_joins_the_page_markdown_between_other_outputs():
    cell = v4.new_code_cell("status_box()", metadata={"tags": ["hide-input"]})
    cell.outputs = [
        v4.new_output("stream", name="stdout", text="before\n"),
        v4.new_output("display_data", {"text/markdown": "!!! note \"Box\"\n    **body**\n", "text/plain": "<Box>"}),
        v4.new_output("stream", name="stdout", text="after\n"),
    ]
    r = nb_render.render(v4.new_notebook(cells=[v4.new_markdown_cell("# T"), cell]), stem="demo")
    md = r.markdown
    assert "status_box()" not in md  # hide-input
    assert '!!! note "Box"\n    **body**' in md  # Markdown by declaration: left for Material to render
    assert md.index("<!-- nb-output 0 -->") < md.index("!!! note") < md.index("<!-- nb-output 1 -->")
    assert "before" in r.outputs[0] and "after" in r.outputs[1] and "<Box>" not in "".join(r.outputs)


def test_markdown_beside_html_stays_program_output():
    cell = v4.new_code_cell("df")
    cell.outputs = [v4.new_output("execute_result", {"text/markdown": "| a |", "text/html": "<table></table>"},
                                  execution_count=1)]
    r = nb_render.render(v4.new_notebook(cells=[cell]), stem="demo")
    assert "| a |" not in r.markdown and "<table></table>" in r.outputs[0]


def test_a_downloaded_notebook_links_to_the_site_not_to_files_beside_it():
    import json

    import nb_links

    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("See [chapter 6](06-amdahl.ipynb#the-funnel), [the lab](../labs/lab4-x.ipynb), "
                             "[sources](../reference/sources.md#amdahl-inputs), [calc](../calculator/index.md), "
                             "[PyTorch](https://github.com/pytorch/pytorch) and [here](#run-it)."),
        v4.new_markdown_cell('<a href="solutions/lab1-solutions.ipynb">solutions</a>'),
        v4.new_code_cell('open("../data/x.json")  # [not](a-link.ipynb)'),
    ])
    out = json.loads(nb_links.absolute_links(json.dumps(nb), "notebooks/07-the-answer.ipynb", "https://x.io/s/"))
    first, second, code = ("".join(c["source"]) for c in out["cells"])
    assert first == ("See [chapter 6](https://x.io/s/notebooks/06-amdahl/#the-funnel), [the lab](https://x.io/s/labs/lab4-x/), "
                     "[sources](https://x.io/s/reference/sources/#amdahl-inputs), [calc](https://x.io/s/calculator/), "
                     "[PyTorch](https://github.com/pytorch/pytorch) and [here](#run-it).")
    assert second == '<a href="https://x.io/s/notebooks/solutions/lab1-solutions/">solutions</a>'
    assert code == 'open("../data/x.json")  # [not](a-link.ipynb)'
