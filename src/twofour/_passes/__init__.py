"""How the toolkit walks a weight: the private passes behind :mod:`twofour.structure` and :mod:`twofour.packing`.

Input checks and blocks (:mod:`.tensors`), zero/NaN/inf by the bits (:mod:`.bits`), group counts
with word arithmetic (:mod:`.groupcount`), 2:4 pack and unpack on whole words (:mod:`.wordpack`),
views that share storage (:mod:`.overlap`), and threads (:mod:`.threads`). Nothing here is public
API: import from :mod:`twofour` instead.
"""
