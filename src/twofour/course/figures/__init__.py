"""The chapters' figures, drawn in the house style of :mod:`twofour.course.plotting`.

One module per chapter or topic; each takes numbers the toolkit computed and only draws them.
"""
