"""The `compat-clone matrix` subcommand: options, `--list`, the parallel run, `--report`."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

from compat_clone.tools.matrix.procs import _Procs, default_jobs
from compat_clone.tools.matrix.runner import (
    _LOG_FILE,
    _RESULTS_DIR,
    _STAMP_FILE,
    _find_uv,
    _run_one,
    _self_source,
    env_stamp,
)
from compat_clone.tools.matrix.summary import _fmt_s, _Outcome, _tail, format_summary
from compat_clone.tools.matrix.table import Env, TableError, load_table, select_envs

__all__ = ["add_arguments", "run", "main"]

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run COMMAND in every environment of a version matrix (built with uv under "
        ".matrix/<env>/, reused while its pins are unchanged), in parallel, and print "
        "one summary table. Exits 1 if any environment fails."
    )
    parser.epilog = "Example: compat-clone matrix --env 'keras-3.15-*' -- python -m pytest -q tests"
    parser.add_argument("--env", action="append", metavar="NAME",
                        help="environment name or glob; repeat or comma-separate (default: every enabled one)")
    parser.add_argument("--tag", action="append", metavar="TAG",
                        help="every environment with this tag, enabled or not (`wide`: the whole built-in "
                             "matrix); --env then narrows the group")
    parser.add_argument("--table", metavar="FILE.toml", help="a matrix table of your own (default: the built-in one)")
    parser.add_argument("--jobs", "-j", type=int, metavar="N",
                        help=f"environments run at once (default: min(cores, memory GB // 4); here {default_jobs()})")
    parser.add_argument("--list", action="store_true", help="list the environments and exit")
    parser.add_argument("--root", default=".matrix", metavar="DIR", help="where environments live (default: .matrix)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the selected environments even if their stamp is fresh")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="kill COMMAND in an environment after this long")
    parser.add_argument("--report", metavar="FILE.md",
                        help="afterwards write the feature table (COMPATIBILITY.md) from the environments' "
                             "results; with no COMMAND, only write it")
    parser.add_argument("--readme", metavar="FILE.md",
                        help="with --report: also rewrite the table between <!-- compat-table:start/end --> in this file")
    parser.add_argument("--tail", type=int, default=40, metavar="N",
                        help="print the last N log lines of each failed environment (default: 40)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="the command to run in each environment, after `--`")
    parser.set_defaults(jobs=None)


def _list(envs: Sequence[Env], root: Path, source: Tuple[str, Path]) -> None:
    width = max(len(e.name) for e in envs)
    for e in envs:
        stamp_path = root / e.name / _STAMP_FILE
        state = "built" if stamp_path.is_file() and stamp_path.read_text().strip() == env_stamp(e, source) else "-"
        claim = " ".join(f"{k}={v}" for k, v in e.expect) or "(no claim)"
        flag = ("" if e.enabled else "  [disabled]") + (f"  tags: {','.join(e.tags)}" if e.tags else "")
        print(f"{e.name.ljust(width)}  {state:5}  {claim}{flag}")
        print(f"{' ' * width}         {' '.join(e.packages + tuple(f'--no-deps {p}' for p in e.no_deps))}")
        extra = [f"{k}={v}" for k, v in e.env] + ([f"fixup={e.fixup}"] if e.fixup else [])
        if extra:
            print(f"{' ' * width}         {' '.join(extra)}")
        if e.note:
            print(f"{' ' * width}         # {e.note}")


def run(args: argparse.Namespace) -> int:
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    try:
        table = load_table(args.table)
        selected = select_envs(table, args.env, args.tag)
    except TableError as e:
        print(f"compat-clone matrix: {e}", file=sys.stderr)
        return 2
    root = Path(args.root).resolve()
    source = _self_source()
    results = root / _RESULTS_DIR
    if args.list:
        _list(selected if args.env or args.tag else table, root, source)
        return 0
    if not command:
        if args.report:
            return _write_report(args, table, results, {})
        print("compat-clone matrix: no COMMAND given. Usage: compat-clone matrix [options] -- COMMAND...\n"
              "  e.g. compat-clone matrix -- python -m pytest -q", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        print(f"compat-clone matrix: expected --jobs >= 1. Received: {jobs}.", file=sys.stderr)
        return 2
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".gitignore").exists():
        (root / ".gitignore").write_text("*\n", encoding="utf-8")
    uv = _find_uv(Path.cwd())
    print(f"compat-clone matrix: {len(selected)} environment(s), {jobs} at a time, in {root}; "
          f"logs: {root}/<env>/{_LOG_FILE}", flush=True)
    lock = threading.Lock()
    t0 = time.monotonic()

    def say(name: str, text: str) -> None:
        with lock:
            print(f"[{_fmt_s(time.monotonic() - t0):>6}] {name}: {text}", flush=True)

    procs = _Procs()
    outcomes: Dict[str, _Outcome] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {
        e.name: pool.submit(_run_one, e, root=root, results=results, command=command, uv=uv, source=source,
                            procs=procs, timeout=args.timeout, rebuild=args.rebuild, say=say)
        for e in selected
    }
    try:
        for name, fut in futures.items():
            outcomes[name] = fut.result()
    except KeyboardInterrupt:
        procs.kill_all()
        pool.shutdown(wait=False, cancel_futures=True)
        print("\ncompat-clone matrix: interrupted", file=sys.stderr)
        return 130
    pool.shutdown()
    ordered = [outcomes[e.name] for e in selected]
    for o in ordered:
        if not o.ok and args.tail > 0:
            print(f"\n----- {o.env}: {o.status}; last {args.tail} lines of {o.log} -----")
            print(_tail(o.log, args.tail))
    print()
    print(format_summary(ordered, time.monotonic() - t0), flush=True)
    rc = 0 if all(o.ok for o in ordered) else 1
    if args.report:
        rc = max(rc, _write_report(args, table, results, {o.env: o.status for o in ordered}))
    return rc


def _write_report(args: argparse.Namespace, table: Sequence[Env], results: Path, statuses: Dict[str, str]) -> int:
    from compat_clone.tools.matrix import report as _report

    try:
        written = _report.write(results, table, Path(args.report), Path(args.readme) if args.readme else None,
                                statuses=statuses)
    except _report.ReportError as e:
        print(f"compat-clone matrix: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"compat-clone matrix: wrote {path}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m compat_clone.tools.matrix ...``: the subcommand on its own."""
    parser = argparse.ArgumentParser(prog="compat-clone matrix")
    add_arguments(parser)
    return run(parser.parse_args(argv))

