"""Unit tests of the site hooks' pure parts: notebook rendering, math, execution cache keys, API page."""

from __future__ import annotations

import base64
import doctest
import sys
from pathlib import Path

import nbformat.v4 as v4
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "site_hooks"))

import mathml  # noqa: E402
import nb_execute  # noqa: E402
import nb_render  # noqa: E402
import reference  # noqa: E402

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


def test_fill_outputs_replaces_every_placeholder():
    html = "<p><!-- nb-output 1 --></p><p>text</p>\n<!-- nb-output 0 -->"
    assert nb_render.fill_outputs(html, ["A", "B"]) == "B<p>text</p>\nA"


def test_fence_survives_backticks_in_code():
    fenced = nb_render._fence('s = """```"""')
    assert fenced.startswith("````python") and fenced.endswith("````")


@pytest.mark.parametrize("module", [nb_render, mathml])
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
