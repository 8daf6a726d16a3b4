"""Kernel set-up for every notebook the site build and nbval execute (run as PYTHONSTARTUP).

The build's kernels are started with ``MPLBACKEND=Agg`` in their environment (the test
processes that share it must stay headless), and a kernel under Agg draws figures without
showing them. This file, run by IPython before the first cell, does what chapters used to do
in their first code cell, so no chapter needs site-build plumbing:

* matplotlib's inline backend (what Jupyter and Colab use by default), i.e. ``%matplotlib inline``;
* the house figure display: figures become 2x PNGs carrying their alt text and caption
  (:func:`twofour.course.plotting.install_notebook_display`), which the site renders as a
  numbered, captioned figure.

It runs in the notebook's namespace, so it leaves no names behind.
"""

try:
    get_ipython().run_line_magic("matplotlib", "inline")  # noqa: F821 (IPython provides it)
    from twofour.course.plotting import install_notebook_display as _twofour_install

    _twofour_install()
    del _twofour_install
except Exception as _twofour_err:  # a kernel must start even if twofour is broken
    import sys as _sys

    print(f"site kernel set-up skipped: {type(_twofour_err).__name__}: {_twofour_err}", file=_sys.stderr)
    del _sys, _twofour_err
