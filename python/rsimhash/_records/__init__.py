"""Record readers: JSON lines, hash TSV, decimal lines and Parquet, in chunks.

A ``Source`` opens one input (a path, or ``-`` for stdin) and yields
``Chunk``s of at most about ``chunk_bytes`` of input: the records' line
numbers, ids, texts (or fingerprints, for hash inputs) and, for the line
formats, each record's line as read, so that a command can write records
back byte for byte. Memory is bounded by the chunk size, never by the input.

Formats (``auto`` guesses from the file name; stdin defaults to ``json``):

* ``json``: one JSON object per line with a text field (``--text-column``,
  default ``text``) and an id field (``--id-column``, default ``id``; an int
  or a str, kept as written). When ``--id-column`` is not given and the first
  record has no ``id`` field, every record's id is its line number. Blank
  lines are skipped. gzip and zstd compressed input is recognised by its
  first bytes, whatever the file is called. These are read, parsed and
  fingerprinted by the core (``_rsimhash.JsonLines``) on threads of its own;
  the few lines it leaves to ``json.loads`` (invalid ones, whose errors are
  worded there, and rare forms such as lone surrogates) go through the
  reference reader (``json_lines``), which is also the reader of record for tests.
* ``hash``: a TSV whose header line names the columns ``id`` and ``hash``
  (the original simhash tool's format); the hash is a decimal u64.
* ``lines``: one decimal u64 fingerprint per line (simhash-find-all's input);
  the id of each is its line number; blank lines are skipped.

  Both are read and parsed by the core too (``format=`` of
  ``_rsimhash.JsonLines``), compressed or not; the header and any line it
  cannot read go through the reference reader (``fingerprints``), which words the error.
* ``parquet``: a Parquet file (needs ``pyarrow``) with a string text column
  and, optionally, an int or string id column (else the 1-based row number).

Line numbers are 1-based and count every physical line, the header included.

One module per format (``json_lines``, ``fingerprints``, ``parquet``), the
reference reader's stream and blocks (``blocks``), ``Chunk`` (``chunk``) and
the ``Source`` that reads them (``source``). This package is part of the
library: it imports nothing from the command line. Its errors are
``errors.RecordError`` (the data is wrong) and ``errors.RecordRequestError``
(the request is: an unknown format, a missing package, a closed stdin), both
``ValueError``s; the command line prints either as one line. Messages name
the command line's flags (``--text-column``); callers that take arguments
instead reword them (``batch._texts_in``).
"""

from .chunk import Chunk, Id
from .errors import RecordError, RecordRequestError
from .source import CHUNK_BYTES, FORMATS, MAX_RECORD_BYTES, Source, guess_format

__all__ = [
    "CHUNK_BYTES",
    "FORMATS",
    "MAX_RECORD_BYTES",
    "Chunk",
    "Id",
    "RecordError",
    "RecordRequestError",
    "Source",
    "guess_format",
]
