"""The course room: what exists only for the chapters, labs, practice sets and widgets.

The toolkit never imports from this package. It holds the house figure style (:mod:`.plotting`),
tables (:mod:`.tables`), each chapter's figures (:mod:`.figures`), the chapters' weights
(:mod:`.examples`), what a lossy step did to a weight (:mod:`.damage`), the traced CUTLASS metadata
layout (:mod:`.meta_layout`), the notebook calculators (:mod:`.widgets`), the practice bank
(:mod:`.practice`), chapter 7's verdict (:mod:`.answer`), the status box (:mod:`.status`) and the
lab checkers (:mod:`.labs`).
"""
