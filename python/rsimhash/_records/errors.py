"""The errors of the record readers: library exceptions, never the command line's.

``RecordError`` is a problem in an input's data (a bad line, an unreadable
file): the command line prints it as one line and exits 1.
``RecordRequestError`` is a request the readers cannot serve (a format they
cannot tell from the name, a package that is missing, a standard input that
is closed): the command line prints it as one line and exits 2, as it does
for its own usage errors. Both are ``ValueError``s, and their text is the
whole message a user sees after ``rsimhash: error:``.
"""

from __future__ import annotations

from typing import Optional, Union


class RecordError(ValueError):
    """A problem in an input file, at a line when there is one.

    ``lineno`` is 1-based and counts every physical line, a header included;
    a Parquet row is named as ``row N``. ``message`` may be added to by a
    caller that knows more (the command line names the format it read as).
    """

    def __init__(self, path: str, line: Optional[Union[int, str]], message: str):
        super().__init__(message)
        self.path = path
        self.lineno = line
        self.message = message

    def where(self) -> str:
        path = "<stdin>" if self.path == "-" else self.path
        return path if self.lineno is None else f"{path}:{self.lineno}"

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"


class RecordRequestError(ValueError):
    """A request the record readers cannot serve, whatever the data."""


def raise_bad(error: RecordError) -> None:
    """The default bad-line policy: the first bad line stops the reading."""
    raise error
