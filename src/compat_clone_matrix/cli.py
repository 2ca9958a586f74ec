"""The `compat-clone matrix` subcommand: options, `--list`, the parallel run, `--report`."""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from compat_clone_matrix.build import LOG_FILE, STAMP_FILE, env_stamp, find_uv, prepare_env
from compat_clone_matrix.install import InstallSource
from compat_clone_matrix.procs import Procs, default_jobs, workers_share
from compat_clone_matrix.results import RESULTS_DIR
from compat_clone_matrix.runner import RunSettings, run_one
from compat_clone_matrix.schedule import durations_file, longest_first, read_durations, record_durations
from compat_clone_matrix.summary import (
    EXIT_FAILED,
    EXIT_MISLABELED,
    EXIT_USAGE,
    Outcome,
    format_summary,
    log_tail,
)
from compat_clone_matrix.table import Env, TableError, load_table, select_envs, table_id

__all__ = ["add_arguments", "run", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `compat-clone matrix` options to `parser`.

    Args:
        parser: the subcommand's parser (or a parser of its own, as `main` does).
    """
    parser.description = (
        "Run COMMAND in every environment of a version matrix (built with uv under "
        ".matrix/<env>/, reused while its pins are unchanged), in parallel, and print "
        "one summary table. Exits 1 if any environment fails, 3 if one is not what its table entry claims "
        "(MISLABELED), 2 on a usage error."
    )
    parser.epilog = "Example: compat-clone matrix --env 'keras-3.15-*' -- python -m pytest -q tests"
    add = parser.add_argument
    add(
        "--env",
        action="append",
        metavar="NAME",
        help="environment name or glob; repeat or comma-separate (default: every enabled one)",
    )
    add(
        "--tag",
        action="append",
        metavar="TAG",
        help="every environment with this tag, enabled or not (`wide`: the whole built-in matrix); --env then narrows the group",
    )
    add("--table", metavar="FILE.toml", help="a matrix table of your own (default: the built-in one)")
    add(
        "--overlay",
        metavar="FILE.toml",
        help="add a project's test needs to the table's environments: [defaults] and per-[[env]] packages, no_deps, "
        'pip_args, env (docs/matrix.md, "What your tests need"); the built-in table installs the Keras pins '
        "and pytest only",
    )
    add(
        "--jobs",
        "-j",
        type=int,
        metavar="N",
        help=f"environments run at once (default: min(cores, memory GB // 4); here {default_jobs()}); each command's "
        "`pytest -n auto` starts its share of the cores (PYTEST_XDIST_AUTO_NUM_WORKERS, unless set)",
    )
    add("--list", action="store_true", help="list the environments (with a legend: state, claim, flags) and exit")
    add(
        "--root",
        metavar="DIR",
        help="where environments, their logs and the results live, one per project (default: .matrix; for "
        "--declared and --bisect, a folder of the project's own in the per-user cache, ~/.cache/compat-clone/matrix/derived on Linux)",
    )
    add(
        "--declared",
        action="store_true",
        help="instead of the table's environments: for each Keras family the project's declared dependencies reach "
        "(pyproject.toml, setup.cfg or setup.py, read from the current folder), build the lowest and the highest "
        "release the range allows (from the table's environment of that series) and run COMMAND there; exits 1 "
        "when an end fails (the declared range does not hold); with --list, only say what it would build",
    )
    add(
        "--bisect",
        metavar="FAMILY",
        choices=("keras2", "tf_keras", "keras3"),
        help="find the first release of FAMILY (keras2, tf_keras, keras3) where COMMAND stops passing, between "
        "--good and --bad, building an environment for each release it tries (every release and patch release "
        "of the series the table pins); prints the last good and first bad release, the failing tests and the "
        "known-issue rows between them; with --list, only list the releases between",
    )
    add(
        "--good",
        metavar="RELEASE",
        help="with --bisect: a release where COMMAND passes (3.2.1; a series, 3.2, is its release in the table)",
    )
    add("--bad", metavar="RELEASE", help="with --bisect: a release where COMMAND fails (older or newer than --good)")
    add("--rebuild", action="store_true", help="rebuild the selected environments even if their stamp is fresh")
    add("--timeout", type=float, metavar="SECONDS", help="kill COMMAND in an environment after this long")
    _add_output_options(add)
    parser.set_defaults(jobs=None)


def _add_output_options(add: Callable[..., Any]) -> None:
    """What a run prints and writes besides its environments' output (report, README, CI files, progress), and
    the command itself (last: it takes the rest of the line)."""
    add(
        "--report",
        metavar="FILE.md",
        help="afterwards write the results table (COMPATIBILITY.md) from the environments' results, keeping the "
        "existing file's columns (of the same table) that have no newer results; with no COMMAND, only write "
        "it. A pytest COMMAND gets --compat-results (one result line per test) outside compat_clone's own "
        "checkout",
    )
    add(
        "--readme",
        metavar="FILE.md",
        help="with --report: also rewrite the table between <!-- compat-table:start/end --> in this file",
    )
    add("--tail", type=int, default=40, metavar="N", help="print the last N log lines of each failed environment (default: 40)")
    add(
        "--emit",
        choices=("github", "workflow"),
        help="print, instead of running: `github`, the GitHub Actions strategy matrix (JSON) of the selected "
        "environments; `workflow`, a complete workflow file using it (COMMAND default: python -m pytest -q)",
    )
    add(
        "--install-from",
        metavar="SOURCE",
        help="with --emit workflow: where CI installs compat_clone from: a version (0.2.0), a path in the project "
        "(a checkout or wheel of compat_clone), or a VCS URL (git+https://...@TAG) (default: the project's own "
        "pin of compat-clone, how the running compat_clone was installed when that is inside the project, else a "
        "compat_clone wheel kept in the project; with none of these it refuses: no index serves compat-clone yet)",
    )
    add(
        "--schedule",
        metavar="CRON",
        help="with --emit workflow: run the workflow on this cron schedule (UTC, e.g. '0 3 * * 6') and by hand, "
        "instead of on every push and pull request (a second workflow beside the first, e.g. for --tag wide)",
    )
    add(
        "--workflow-env",
        action="append",
        metavar="NAME=VALUE",
        help="with --emit workflow: a variable every job sets, passed on to each environment's command; repeat for more",
    )
    add(
        "--progress",
        type=float,
        metavar="SECONDS",
        help="while commands run, show the running environments and their elapsed time: a live line on a "
        "terminal, else a plain line every SECONDS (default: 60); 0 turns it off",
    )
    add(
        "--merge",
        nargs="+",
        metavar="DIR",
        help="with --report: build the report from result folders collected from several runs or machines "
        "(refuses one environment's results twice; lists selected environments without results)",
    )
    add("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run in each environment, after `--`")


def _list(envs: Sequence[Env], root: Path, source: InstallSource) -> None:
    from compat_clone_matrix.table_text import LIST_LEGEND, list_footer

    print(LIST_LEGEND)
    width = max(len(e.name) for e in envs)
    for e in envs:
        stamp_path = root / e.name / STAMP_FILE
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
    print(f"\n{list_footer(envs)}")


def _fail(message: str, status: int = EXIT_USAGE) -> int:
    print(f"compat-clone matrix: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace, *, install: Callable[[], InstallSource]) -> int:
    """Runs `compat-clone matrix` with parsed arguments.

    Args:
        args: from a parser that `add_arguments` set up.
        install: says which package the environments get (`InstallSource`);
            called only when an environment is listed or built, so that a
            run that builds nothing never asks.

    Returns:
        The exit status: 0 when every environment passed (or nothing ran),
        1 when one failed or the report could not be written, 2 for a usage
        error (bad table, unknown environment, no command), 3 when an
        environment is not what its table entry claims (MISLABELED).

    Example:

    >>> run(args, install=lambda: source)  # doctest: +SKIP
    0
    """
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    try:
        table = load_table(args.table)
        if args.overlay:
            from compat_clone_matrix.overlay import apply_overlay

            table = apply_overlay(table, args.overlay)
        selected = select_envs(table, args.env, args.tag)
    except TableError as e:
        return _fail(str(e))
    if args.declared or args.bisect:
        return _range_run(args, table, command, install)
    if args.good or args.bad:
        return _fail("--good and --bad go with --bisect FAMILY.")
    root = Path(args.root or ".matrix").resolve()
    results = root / RESULTS_DIR
    if args.emit != "workflow" and (args.schedule or args.workflow_env):
        return _fail("--schedule and --workflow-env shape the workflow `--emit workflow` prints: add --emit workflow.")
    if args.emit:
        return _emit(args, selected, command, install)
    if args.merge:
        if not args.report:
            return _fail("--merge needs --report FILE.md: the report to build from the merged results.")
        return _write_report(args, table, [Path(d) for d in args.merge], {}, selected)
    if args.list:
        _list(selected if args.env or args.tag else table, root, install())
        return 0
    if not command:
        if args.report:
            return _write_report(args, table, [results], {}, selected)
        return _fail(
            "no COMMAND given. Usage: compat-clone matrix [options] -- COMMAND...\n"
            "  e.g. compat-clone matrix -- python -m pytest -q"
        )
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        return _fail(f"expected --jobs >= 1. Received: {jobs}.")
    if args.report and not _own_checkout():
        # A project's suite writes no feature records: one result line per test is what the report shows.
        from compat_clone_matrix.ci import with_results_option

        command = with_results_option(command)
    ordered, wall = _run_all(args, selected, command, root, jobs, install())
    if ordered is None:
        return 130
    for o in ordered:
        if not o.ok and args.tail > 0:
            print(f"\n----- {o.env}: {o.status}; last {args.tail} lines of {o.log} -----")
            print(log_tail(o.log, args.tail))
    print()
    print(format_summary(ordered, wall), flush=True)
    rc = 0 if all(o.ok for o in ordered) else EXIT_FAILED
    if any(o.status == "MISLABELED" for o in ordered):
        rc = EXIT_MISLABELED
    if args.report:
        rc = max(rc, _write_report(args, table, [results], {o.env: o.status for o in ordered}, selected))
    return rc


def _run_all(
    args: argparse.Namespace, selected: Sequence[Env], command: Sequence[str], root: Path, jobs: int, source: InstallSource
) -> Tuple[Optional[List[Outcome]], float]:
    """Runs the environments, `jobs` at a time; (outcomes in table order or None if interrupted, seconds)."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".gitignore").exists():
        (root / ".gitignore").write_text("*\n", encoding="utf-8")
    uv = find_uv(Path.cwd())
    from compat_clone_matrix.progress import Progress

    print(
        f"compat-clone matrix: {len(selected)} environment(s), {jobs} at a time, in {root}; logs: {root}/<env>/{LOG_FILE}",
        flush=True,
    )
    t0 = time.monotonic()
    interval = 60.0 if args.progress is None else max(0.0, args.progress)
    live = sys.stdout.isatty() and os.environ.get("TERM", "") != "dumb" and not os.environ.get("CI")
    progress = Progress(sys.stdout, live=live, interval=interval)
    say = progress.say
    table = table_id(args.table)
    procs = Procs()
    pool = ThreadPoolExecutor(max_workers=jobs)
    names = [e.name for e in selected]
    try:
        # Phase 1: every environment is built (or reused) before a command runs
        # in any, so a command may use a sibling's interpreter (the conversion
        # tests read Keras 2 files in keras-2.2.4 from keras-3.15-jax).
        built = {
            e.name: pool.submit(prepare_env, e, root=root, uv=uv, source=source, procs=procs, rebuild=args.rebuild, say=say)
            for e in selected
        }
        prepared = {name: fut.result() for name, fut in built.items()}
        run = RunSettings(
            root=root,
            results=root / RESULTS_DIR,
            command=command,
            uv=uv,
            source=source,
            procs=procs,
            timeout=args.timeout,
            rebuild=args.rebuild,
            say=say,
            siblings=names,
            table=table,
            progress=progress,
            workers=workers_share(jobs, len(selected)),
        )
        # the longest first (by the previous run's seconds), so that the slots finish close together
        record = durations_file(Path.cwd(), command)
        starts = longest_first(list(selected), names, read_durations(record))
        futures = {e.name: pool.submit(run_one, e, run, prepared[e.name]) for e in starts}
        outcomes = {name: fut.result() for name, fut in futures.items()}
        record_durations(record, {name: o.run_s for name, o in outcomes.items() if o.run_s > 0})
    except KeyboardInterrupt:
        progress.close()
        procs.kill_all()
        pool.shutdown(wait=False, cancel_futures=True)
        print("\ncompat-clone matrix: interrupted", file=sys.stderr)
        return None, time.monotonic() - t0
    pool.shutdown()
    progress.close()
    return [outcomes[e.name] for e in selected], time.monotonic() - t0


def _range_run(args: argparse.Namespace, table: Sequence[Env], command: List[str], install: Callable[[], InstallSource]) -> int:
    """``--declared`` or ``--bisect``: environments derived from the table's, in the project's folder of the user cache."""
    from compat_clone_matrix.range_runs import RANGE_OPTIONS, derived_root, run_bisect, run_declared

    mode = "--declared" if args.declared else "--bisect"
    given = [f"--{name}" for name in RANGE_OPTIONS if getattr(args, name)]
    if args.declared and args.bisect:
        given.append("--bisect")
    if given:
        return _fail(f"{mode} chooses its own environments and writes no report: drop {', '.join(given)}.")
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        return _fail(f"expected --jobs >= 1. Received: {jobs}.")
    root = Path(args.root).resolve() if args.root else derived_root(Path.cwd())

    def run_envs(envs: Sequence[Env]) -> List[Outcome]:
        ordered, _ = _run_all(args, envs, command, root, jobs, install())
        if ordered is None:
            raise KeyboardInterrupt
        return ordered

    try:
        return (run_declared if args.declared else run_bisect)(args, table, command, run_envs)
    except KeyboardInterrupt:
        return 130


def _common_options(args: argparse.Namespace) -> List[str]:
    """Options every `compat-clone matrix` call of an emitted CI set-up repeats."""
    out = ["--table", args.table] if args.table else []
    out += ["--overlay", args.overlay] if args.overlay else []
    return out + (["--timeout", f"{args.timeout:g}"] if args.timeout is not None else [])


def _own_checkout() -> bool:
    """The matrix runs in compat_clone's own checkout (whose suite writes feature records itself):
    the project's ``pyproject.toml`` names compat-clone, however the running compat_clone is installed."""
    from compat_clone_matrix.ci_install import names_compat_clone

    return names_compat_clone(Path.cwd())


def _emit(args: argparse.Namespace, selected: Sequence[Env], command: Sequence[str], install: Callable[[], InstallSource]) -> int:
    from compat_clone_matrix.ci import (
        DEFAULT_COMMAND,
        emit,
        parse_variable,
        validate_schedule,
        validate_table_path,
        with_results_option,
    )
    from compat_clone_matrix.ci_install import default_install_source, install_requirement

    project = Path.cwd()
    selection = [f"--env={e}" for e in args.env or ()] + [f"--tag={t}" for t in args.tag or ()]
    command = list(command or DEFAULT_COMMAND)
    if args.emit == "workflow" and not _own_checkout():
        command = with_results_option(command)  # the report job shows one row per test
    try:
        if args.table:
            args.table = validate_table_path(args.table, project)
        if args.overlay:
            args.overlay = validate_table_path(args.overlay, project, "--overlay")
        variables = [parse_variable(v) for v in args.workflow_env or ()]
        schedule = None if args.schedule is None else validate_schedule(args.schedule)
        if args.install_from:
            requirement, why = install_requirement(args.install_from, project), f"--install-from {args.install_from}"
        elif args.emit == "workflow":
            requirement, why = default_install_source(project, install)
        else:  # the strategy matrix alone installs nothing
            requirement, why = "", ""
        text = emit(
            args.emit,
            selected,
            command,
            selection,
            _common_options(args),
            table=args.table,
            overlay=args.overlay,
            install=requirement,
            install_why=why,
            schedule=schedule,
            variables=variables,
        )
    except ValueError as e:
        return _fail(str(e))
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def _write_report(
    args: argparse.Namespace, table: Sequence[Env], folders: Sequence[Path], statuses: Dict[str, str], selected: Sequence[Env]
) -> int:
    from compat_clone_matrix.report import write
    from compat_clone_matrix.results import ReportError

    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        return _fail(
            f"result folder(s) {', '.join(map(repr, missing))} do not exist. Pass the folders that hold "
            "the <env>.jsonl files (CI artifacts, .matrix/_results).",
            EXIT_FAILED,
        )
    notes: List[str] = []
    try:
        written = write(
            folders,
            table,
            Path(args.report),
            Path(args.readme) if args.readme else None,
            statuses=statuses,
            expected=[e.name for e in selected],
            table=table_id(args.table),
            notes=notes,
        )
    except ReportError as e:
        return _fail(str(e), EXIT_FAILED)
    for note in notes:
        print(f"compat-clone matrix: {note}")
    for path in written:
        print(f"compat-clone matrix: wrote {path}")
    return 0


def main(argv: Optional[Sequence[str]] = None, *, install: Callable[[], InstallSource]) -> int:
    """The subcommand on its own (``python -m compat_clone.tools.matrix ...`` calls it).

    Args:
        argv: the arguments after ``compat-clone matrix``; None for ``sys.argv[1:]``.
        install: as `run`'s.

    Returns:
        The exit status (see `run`).
    """
    parser = argparse.ArgumentParser(prog="compat-clone matrix")
    add_arguments(parser)
    return run(parser.parse_args(argv), install=install)
