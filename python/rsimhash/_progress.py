"""Progress of a long job of the core, for the batch jobs, ``similar_pairs``
and the command line's verified (similar-pairs) mode: a caller's function,
or two tqdm bars on stderr.

The core reports ``(done, total, step, step_done, step_total)``: the whole
job in units of work, and the step under way in the items it names.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Union

from ._optional import module


class Bars:
    """Progress of a job: a caller's function, or two tqdm bars (the whole
    job, and the step under way) on stderr."""

    def __init__(self, progress: Union[None, bool, Callable[..., Any]], desc: str):
        self.callback: Optional[Callable[..., Any]] = None
        self.overall: Any = None
        self.step: Any = None
        self.step_name = ""
        self.desc = desc
        if callable(progress):
            self.callback = progress
            return
        show = progress if progress is not None else _isatty(sys.stderr)
        if show:
            self.tqdm = module("tqdm").tqdm

    def __call__(self, done: int, total: int, step: str, step_done: int, step_total: int) -> None:
        if self.callback is not None:
            self.callback(done, total, step, step_done, step_total)
            return
        if not hasattr(self, "tqdm"):
            return
        if self.overall is None:
            # The whole job as a share and the time left (its total is work
            # in fingerprint passes, not a count anyone needs to read); the
            # step in the items it names.
            self.overall = self.tqdm(
                total=total,
                desc=self.desc,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
                file=sys.stderr,
                position=0,
                leave=False,
                mininterval=0.2,
            )
            self.step = self.tqdm(
                total=step_total,
                desc=step,
                unit=_unit(step),
                unit_scale=True,
                file=sys.stderr,
                position=1,
                leave=False,
                mininterval=0.2,
            )
            self.step_name = step
        if done < self.overall.n:  # a job of several phases starts the next one
            self.overall.reset(total=total)
        if total != self.overall.total:
            self.overall.total = total
        if step != self.step_name:
            # The name and unit first: reset() draws the bar.
            self.step.set_description_str(step, refresh=False)
            self.step.unit = _unit(step)
            self.step.reset(total=step_total)
            self.step_name = step
        self.overall.update(max(0, done - self.overall.n))
        self.step.update(max(0, step_done - self.step.n))

    def close(self) -> None:
        for bar in (self.step, self.overall):
            if bar is not None:
                bar.close()
        self.overall = self.step = None


def _unit(step: str) -> str:
    """What a step of the core counts, by its name."""
    if step.startswith("writing"):
        return " pairs" if "pairs" in step else " candidates"
    if "shingle" in step:
        return " texts"
    return " fingerprints"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
