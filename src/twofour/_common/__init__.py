"""Private utilities that many modules of the toolkit share, written once so they behave alike:
argument checks (:mod:`.args`), writers that never destroy (:mod:`.atomic`), reports that fit their
width (:mod:`.fit`), the shipped JSON data files (:mod:`.jsonfile`), names imported on first use
(:mod:`.lazy`), stderr without profiler chatter (:mod:`.stderr`) and file strings made printable
(:mod:`.text`). Nothing here is public API.
"""
