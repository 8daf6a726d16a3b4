"""The course room: what exists only for the chapters, labs, practice sets and widgets.

Nothing here is needed to use the toolkit on your own model; the toolkit (the top level of
``twofour``) never imports from this package. What it holds:

* :mod:`.plotting`: the house figure style (one size, one palette, white background), and
  figures' alt text and captions.
* :mod:`.tables`: tabular results as HTML tables in notebooks and aligned text elsewhere.
* :mod:`.figures`: each chapter's figures, one module per chapter or topic
  (``layouts`` for chapters 1-2, ``dispatch_path`` 3, ``kernel_speed`` and ``kernel_launch`` 4, ``quality`` 5,
  ``funnel`` 6-7).
* :mod:`.examples`: the reproducible weights the chapters prune (one really trained).
* :mod:`.damage`: what a lossy step did to a weight (mass kept, PyTorch's silent drop).
* :mod:`.meta_layout`: where each metadata word lands in the CUTLASS layout, traced.
* :mod:`.widgets`: the ipywidgets calculators of the live notebooks.
* :mod:`.practice`: the interview practice bank (``data/practice.yaml``) and its computed answers.
* :mod:`.answer`: chapter 7's worked deployment and its verdict as a range (the home page's bottom line).
* :mod:`.status`: the dated "2:4 in late 2026" status box (``data/status.md``), one text for four pages.
* :mod:`.labs`: the checkers of the lab notebooks, one module per lab.
"""
