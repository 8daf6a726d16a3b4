"""How the toolkit walks a weight: the private passes behind :mod:`twofour.structure` and :mod:`twofour.packing`.

* :mod:`.tensors`: input validation and block iteration, where every public function starts;
* :mod:`.bits`: zero, NaN and inf decided by each dtype's bits;
* :mod:`.groupcount`: non-zeros per group of ``m``, counted with word arithmetic;
* :mod:`.wordpack`: 2:4 pack and unpack of 8- and 16-bit weights on whole words;
* :mod:`.overlap`: group counts of views whose elements share storage;
* :mod:`.threads`: how the passes use threads (whole blocks per thread).

Nothing here is public API: import from :mod:`twofour` instead.
"""
