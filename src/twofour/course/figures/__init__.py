"""The chapters' figures, drawn in the house style of :mod:`twofour.course.plotting`.

One module per chapter or topic: :mod:`.layouts` (chapters 1-2: non-zeros per group, the
CUTLASS metadata layout), :mod:`.dispatch_path` (chapter 3: the SVG of the dispatch road),
:mod:`.kernel_speed` (chapter 4: roofline, speedup against M, timing modes, published points),
:mod:`.kernel_launch` (chapter 4: the kernel model's tiles and CTAs, bandwidth, error, flags),
:mod:`.quality` (chapter 5: criteria, size sweep, published LLaMA-2 numbers) and
:mod:`.funnel` (chapters 6-7: from the data sheet's 2x to the request). Each takes numbers the
toolkit computed and only draws them.
"""
