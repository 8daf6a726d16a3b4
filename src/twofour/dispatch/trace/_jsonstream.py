"""Stream the events of a Chrome-trace JSON file without holding the file in memory.

A PyTorch profiler trace is one JSON object whose ``traceEvents`` array of small objects can
be gigabytes long. :class:`ChromeTraceStream` reads the file in chunks and hands out one event at
a time, each parsed by the standard library's C JSON decoder (``raw_decode``). The other
top-level keys are kept in ``meta`` while their text adds up to at most 1 MB
(``deviceProperties`` always, when it is under 1 MB itself); larger ones are parsed and
dropped. The Chrome trace format's other form, a bare array of events, is read too. Bare
``NaN`` and ``Infinity`` are read as floats here and refused as invalid events by :mod:`.validate`.

>>> import io
>>> s = ChromeTraceStream(io.BytesIO(b'{"schemaVersion": 1, "traceEvents": [{"ph": "X"}, {"ph": "M"}]}'))
>>> [e["ph"] for e in s.events()], s.meta
(['X', 'M'], {'schemaVersion': 1})
"""

from __future__ import annotations

import codecs
import json
import re

__all__ = ["StreamError", "ChromeTraceStream"]

_CHUNK = 1 << 20  # characters decoded per read
_MAX_ITEM = 64 << 20  # one event larger than this is not a profiler event
_KEEP_META = 1 << 20  # characters of top-level values kept in .meta, all values together
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class StreamError(ValueError):
    """The file is not a readable Chrome trace; the message is one sentence saying what is wrong and where."""


class ChromeTraceStream:
    """Iterate the ``traceEvents`` of a Chrome-trace JSON read from a binary file object.

    Args:
        raw: a binary file object (already un-gzipped if the file was gzipped).
        on_read: optional, called after each chunk is read (a caller's progress bar).

    ``meta`` holds the small top-level keys seen so far (complete after :meth:`events` is
    exhausted); ``n_events`` counts the events handed out.
    """

    def __init__(self, raw, on_read=None):
        self._raw = raw
        self._decode = codecs.getincrementaldecoder("utf-8")("strict").decode
        self._on_read = on_read
        self.buf = ""
        self.pos = 0
        self.offset = 0  # characters dropped from the front of buf so far
        self.eof = False
        self.meta: dict = {}
        self._meta_left = _KEEP_META  # characters of top-level values .meta may still keep
        self.n_events = 0
        self._started = False

    # -- buffer ------------------------------------------------------------------------------
    def _more(self) -> bool:
        """Read one more chunk into the buffer; False at end of file."""
        if self.eof:
            return False
        try:
            data = self._raw.read(_CHUNK)
        except EOFError:  # gzip stream cut short
            what = "the gzip stream ends early: the file is truncated"
            raise StreamError(self._where(what) if self.n_events else what) from None
        except OSError as exc:  # gzip.BadGzipFile and friends
            raise StreamError(f"cannot read the file: {exc}") from None
        if self._on_read is not None:
            self._on_read()
        try:
            text = self._decode(data, final=not data)
        except UnicodeDecodeError:
            raise StreamError(self._where("the file is not UTF-8 text, so not a JSON trace")) from None
        if not data:
            self.eof = True
        if self.pos:
            self.offset += self.pos
            self.buf = self.buf[self.pos:]
            self.pos = 0
        self.buf += text
        return bool(text) or not self.eof

    def _peek(self) -> str:
        """The next non-whitespace character ('' at end of file), without consuming it."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def _where(self, what: str) -> str:
        place = f"at character {self.offset + self.pos:,}"
        if self._started:
            place += f", after {self.n_events:,} events"
        return f"{what} ({place})"

    def _value(self, context: str):
        """Parse one JSON value at the current position, reading more of the file as needed."""
        self._peek()
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except RecursionError:  # [[[[... 100,000 deep: the C decoder gives up; one line, not a traceback
                raise StreamError(self._where(f"JSON nested too deeply in {context}: not a profiler trace")) from None
            except json.JSONDecodeError as exc:
                # Cut by the chunk boundary (the error sits at the buffer's end, or a string was
                # left open) -> read on. Anywhere else it is a real syntax error.
                if not (exc.pos >= len(self.buf) - 64 or exc.msg.startswith("Unterminated string")):
                    raise StreamError(self._where(f"invalid JSON in {context}: {exc.msg}")) from None
                if self.eof:
                    raise StreamError(self._where(f"the file ends inside {context}: it is truncated")) from None
                if len(self.buf) - self.pos > _MAX_ITEM:
                    raise StreamError(self._where(f"{context} is larger than {_MAX_ITEM >> 20} MB: not a profiler trace"))
                self._more()
                continue
            except ValueError:  # not a syntax error: an integer past Python's 4,300-digit conversion limit
                raise StreamError(self._where(f"a number of more than 4,300 digits in {context}: not a profiler "
                                              "trace")) from None
            if end == len(self.buf) and not self.eof and not isinstance(obj, (dict, list, str)):
                self._more()  # a number or literal may continue in the next chunk
                continue
            self.pos = end
            return obj

    def _expect(self, ch: str, context: str) -> None:
        got = self._peek()
        if got != ch:
            if got == "":
                raise StreamError(self._where(f"the file ends where {context} expected {ch!r}: it is truncated"))
            raise StreamError(self._where(f"invalid JSON: expected {ch!r} in {context}, found {got!r}"))
        self.pos += 1

    def _closed(self, close: str, inside: str, between: str) -> bool:
        """Consume the ',' after an element (False) or the ``close`` that ends its container (True)."""
        sep = self._peek()
        if sep in (",", close):
            self.pos += 1
            return sep == close
        if sep == "":
            raise StreamError(self._where(f"the file ends inside {inside}: it is truncated"))
        raise StreamError(self._where(f"invalid JSON: expected ',' or '{close}' {between}, found {sep!r}"))

    # -- structure ---------------------------------------------------------------------------
    def events(self):
        """Yield each element of ``traceEvents`` (usually a dict) in file order."""
        first = self._peek()
        if first == "\ufeff":  # a byte-order mark some editors write
            self.pos += 1
            first = self._peek()
        if first == "":
            raise StreamError("the file is empty: no JSON in it")
        if first == "[":  # the Chrome trace format's array form
            yield from self._array()
            self._end()
            return
        if first != "{":
            raise StreamError(f"not a JSON trace: it starts with {self.buf[self.pos:self.pos + 20]!r}, not '{{' or '['")
        self.pos += 1
        keys = []
        closed = self._peek() == "}"
        if closed:
            self.pos += 1
        while not closed:
            key = self._value("a key of the top-level object")
            if not isinstance(key, str):
                raise StreamError(self._where("invalid JSON: a key of the top-level object is not a string"))
            self._expect(":", "the top-level object")
            keys.append(key)
            if key == "traceEvents":
                if self._peek() != "[":
                    raise StreamError(self._where("\"traceEvents\" is not an array: not a profiler trace"))
                yield from self._array()
            else:
                start = self.offset + self.pos
                value = self._value(f"the top-level key {key!r}")
                size = self.offset + self.pos - start
                if key == "deviceProperties" and size <= _KEEP_META:
                    self.meta[key] = value  # what the analysis reads: its own allowance
                elif size <= self._meta_left:
                    self.meta[key] = value
                    self._meta_left -= size
                del value
            closed = self._closed("}", "the top-level object", "in the top-level object")
        if "traceEvents" not in keys:
            shown = ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "") if keys else "none"
            raise StreamError(f"JSON, but not a profiler trace: no \"traceEvents\" array (top-level keys: {shown})")
        self._end()

    def _array(self):
        """Yield the elements of the array at the current position.

        The fast path parses element after element straight from the buffer with local names;
        anything unusual (a chunk boundary, a syntax error) falls back to :meth:`_value` and
        :meth:`_peek`, which read more of the file or raise the right error.
        """
        self._expect("[", "traceEvents")
        self._started = True
        if self._peek() == "]":
            self.pos += 1
            return
        ws = _WS.match
        decode = _DECODER.raw_decode
        container = (dict, list, str)
        while True:
            buf, pos = self.buf, self.pos
            n = len(buf)
            # fast path: whole elements and their separators inside the buffer
            while True:
                pos = ws(buf, pos).end()
                try:
                    item, end = decode(buf, pos)
                except (ValueError, RecursionError):  # the slow path reads on or names the error
                    break
                if end >= n and not isinstance(item, container):
                    break  # a number cut by the chunk boundary
                sep_at = ws(buf, end).end()
                if sep_at >= n:
                    break
                sep = buf[sep_at]
                if sep == ",":
                    pos = sep_at + 1
                    self.n_events += 1
                    yield item
                    continue
                if sep == "]":
                    self.pos = sep_at + 1
                    self.n_events += 1
                    yield item
                    return
                break
            # slow path: one element, reading more of the file as needed
            self.pos = pos
            if self._peek() == "]":  # after a comma: a trailing comma, as some writers leave
                self.pos += 1
                return
            item = self._value(f"event {self.n_events:,} of traceEvents")
            self.n_events += 1
            yield item
            if self._closed("]", "the traceEvents array", "between events"):
                return

    def _end(self) -> None:
        rest = self._peek()
        if rest not in ("", "\x00"):
            raise StreamError(self._where(f"invalid JSON: unexpected {rest!r} after the end of the trace"))
