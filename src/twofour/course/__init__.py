"""The course room: what exists only for the chapters, labs, practice sets and widgets.

Nothing here is needed to use the toolkit on your own model; the toolkit (the top level of
``twofour``) never imports from this package. It holds the house figure style (:mod:`.plotting`),
tables (:mod:`.tables`), each chapter's figures (:mod:`.figures`), the reproducible weights the
chapters prune (:mod:`.examples`), what a lossy step did to a weight (:mod:`.damage`), the traced
CUTLASS metadata layout (:mod:`.meta_layout`), the notebook calculators (:mod:`.widgets`), the
interview practice bank (:mod:`.practice`), chapter 7's verdict (:mod:`.answer`), the dated status
box (:mod:`.status`) and the lab checkers (:mod:`.labs`).
"""
