"""twofour.course.tables: tabular results as HTML in notebooks, aligned text elsewhere."""

from __future__ import annotations

import pytest

from twofour.course.tables import Table, table


def test_dict_rows_keep_column_order_and_right_align_numbers():
    t = table([{"gpu": "A100", "sms": 108}, {"gpu": "H100 SXM", "sms": 132}])
    assert t.columns == ["gpu", "sms"] and t.numeric == [False, True]
    lines = str(t).splitlines()
    assert lines[0].split() == ["gpu", "sms"]
    assert lines[2].endswith("108") and lines[3].endswith("132")
    assert len({len(line) for line in lines[1:]}) == 1, "every row is as wide as the rule"


def test_formats_headers_and_caption():
    t = table([(1, 0.51234), (4096, 1.6)], columns=["M", "speedup"], formats={"speedup": "{:.2f}x"},
              headers={"speedup": "2:4 speedup"}, caption="Llama-3-8B q_proj")
    text = str(t)
    assert text.splitlines()[0] == "Llama-3-8B q_proj"
    assert "0.51x" in text and "1.60x" in text and "2:4 speedup" in text
    html = t._repr_html_()
    assert html.startswith('<table class="twofour-table">') and "<caption>Llama-3-8B q_proj</caption>" in html
    assert html.count('<td class="num">') == 4 and '<th scope="col" class="num">' in html


def test_html_escapes_cells_and_markdown_escapes_pipes():
    t = table([{"name": "<b>x</b>", "note": "a|b"}])
    assert "&lt;b&gt;x&lt;/b&gt;" in t._repr_html_()
    assert "a\\|b" in t.to_markdown()
    assert t.to_markdown().splitlines()[1] == "|:---|:---|"


def test_missing_values_and_mixed_columns():
    t = table([{"a": 1, "b": "x"}, {"a": None, "b": 2}])
    assert t.numeric == [True, False]  # None does not make a column textual; a str does
    assert t.rows[1][0] == ""


@pytest.mark.parametrize(
    ("rows", "kwargs", "match"),
    [
        ([], {}, "columns is required"),
        ([(1, 2)], {}, "rows are sequences"),
        ([(1, 2)], {"columns": ["a"]}, "row 0 has 2 cells"),
        ([{"a": 1}], {"formats": {"b": "{}"}}, "not one of"),
    ],
)
def test_errors_say_what_to_pass(rows, kwargs, match):
    with pytest.raises(ValueError, match=match):
        table(rows, **kwargs)


def test_ipython_shows_html_and_text():
    from IPython.core.formatters import DisplayFormatter

    data, _ = DisplayFormatter().format(table([{"a": 1}]))
    assert data["text/html"].startswith("<table") and data["text/plain"].startswith("a")
    assert isinstance(table([{"a": 1}]), Table) and len(table([{"a": 1}, {"a": 2}])) == 2


def test_long_words_may_break_at_separators_so_the_table_fits_its_column():
    name = "sm90_xmma_sparse_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
    html = table([{"kernel": name, "module": "torch.sparse.to_sparse_semi_structured", "short": "a_b.c"}])._repr_html_()
    assert "sm90_<wbr>xmma_<wbr>sparse_<wbr>" in html and "tilesize128x128x64</td>" in html
    assert "torch.<wbr>sparse.<wbr>to_<wbr>sparse_<wbr>semi_<wbr>structured" in html
    assert "<td>a_b.c</td>" in html, "short words are left alone"
    assert html.replace("<wbr>", "").count(name) == 1, "the text is unchanged but for the break points"
    assert name in str(table([{"kernel": name}])), "plain text never gets markup"
