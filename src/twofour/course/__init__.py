"""The course room: what exists only for the chapters, labs, practice sets and widgets.

The toolkit never imports from this package.
"""
