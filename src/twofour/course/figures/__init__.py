"""The chapters' figures, drawn in the house style of :mod:`twofour.course.plotting`.

One module per chapter or topic: :mod:`.layouts` (chapters 1-2), :mod:`.dispatch_path` (3),
:mod:`.kernel_speed` and :mod:`.kernel_launch` (4), :mod:`.quality` (5) and :mod:`.funnel` (6-7).
Each takes numbers the toolkit computed and only draws them.
"""
