"""Private utilities that many modules of the toolkit share, written once so they behave alike.

* :mod:`.args`: argument checks with one wording for every message;
* :mod:`.atomic`: every file written: never over an input or a FIFO, renamed into place when complete;
* :mod:`.fit`: printed reports that fit the width they are printed to;
* :mod:`.jsonfile`: reading the shipped JSON data files with errors that say where;
* :mod:`.lazy`: a package's names imported on first use;
* :mod:`.stderr`: standard error without the profiler's start/stop chatter;
* :mod:`.text`: strings from files made safe to print on a terminal.

Nothing here is public API.
"""
