"""What each command reads and writes, declared to the write gate
(``rsimhash._gate``) before the command runs.

``main`` calls ``plan(args)`` for every command line: the inputs are
resolved (globs, directories, several ``--input``), every path read and
written is declared, and the gate refuses, before anything is written, an
output that would touch what the run did not make. The output directories
and stores are then locked for the run (``Plan.hold``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Dict, Optional

from .._gate import Plan, is_special
from .shards import is_sharded, resolve_args


def _inputs(plan: Plan, args: argparse.Namespace, lenient: Optional[str] = None) -> None:
    """``--input``, resolved (``shards.resolve``): a file, or every shard and
    every directory read."""
    if getattr(args, "input", None) is None:
        return
    resolve_args(args, lenient_default=lenient)
    value = args.input
    if is_sharded(value):
        for d in value.directories:
            plan.read("--input", d)
        for s in value:
            plan.read("--input", s.path)
    elif isinstance(value, str):
        plan.read("--input", value)


def _against(plan: Plan, args: argparse.Namespace) -> None:
    for path in getattr(args, "against", None) or []:
        if os.path.isdir(path):
            plan.read_store("--against", path)
        else:
            plan.read("--against", path)
            plan.read("--against", path + ".ids")


def _output(plan: Plan, args: argparse.Namespace, flag: str = "--output") -> None:
    plan.write(flag, getattr(args, flag[2:].replace("-", "_"), None))


def _records(args: argparse.Namespace, plan: Plan, lenient: Optional[str] = None) -> None:
    """``dedup``, ``cluster``, ``find-all``: shards in, one output (or a directory of them)."""
    _inputs(plan, args, lenient)
    _against(plan, args)
    sharded_out = args.command == "dedup" and is_sharded(args.input) and not is_special(args.output)
    if sharded_out:
        plan.tree("--output", args.output, [(s.rel, s.path) for s in args.input])
    else:
        _output(plan, args)
    for flag in ("--removed", "--report"):
        _output(plan, args, flag)
    store = getattr(args, "save_fingerprints", None)
    if store is not None:
        plan.store("--save-fingerprints", store)


def _find_all(args: argparse.Namespace, plan: Plan) -> None:
    _records(args, plan, lenient="lines")


def _fingerprint(args: argparse.Namespace, plan: Plan) -> None:
    _inputs(plan, args)
    _output(plan, args)


def _tune(args: argparse.Namespace, plan: Plan) -> None:
    _inputs(plan, args)
    for flag in ("--json", "--plot"):
        _output(plan, args, flag)


def _report(args: argparse.Namespace, plan: Plan) -> None:
    _inputs(plan, args)
    for flag in ("--removed", "--clusters", "--pairs", "--log"):
        plan.read(flag, getattr(args, flag[2:], None))
    _output(plan, args)


def _index(args: argparse.Namespace, plan: Plan) -> None:
    action = args.index_command
    if action == "build":
        _inputs(plan, args)
        if args.output != "-":
            plan.write("--output", args.output)
            plan.write("--output", args.output + ".ids")
    elif action == "add":  # IDX and IDX.ids are rewritten from themselves: outputs, not inputs
        _inputs(plan, args)
        plan.write("IDX", args.index)
        plan.write("IDX", args.index + ".ids")
    elif action == "query":
        _inputs(plan, args)
        plan.read("IDX", args.index)
        plan.read("IDX", args.index + ".ids")
        _output(plan, args)


_COMMANDS: Dict[str, Callable[[argparse.Namespace, Plan], None]] = {
    "dedup": _records,
    "cluster": _records,
    "find-all": _find_all,
    "fingerprint": _fingerprint,
    "tune": _tune,
    "report": _report,
    "index": _index,
}


def plan(args: argparse.Namespace) -> Plan:
    """The checked plan of the command line ``args`` (``GateError`` where it may not write)."""
    p = Plan()
    args.notes = []  # what the summary line adds: "resumed: ...", "already done: ..."
    declare: Any = _COMMANDS.get(getattr(args, "command", None) or "")
    if declare is not None:
        declare(args, p)
    p.check()
    args.plan = p
    return p
