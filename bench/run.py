"""`make bench`: run `bench/worker.py` in each environment, then render BENCHMARKS.md from the JSON.

    python bench/run.py [--envs default,keras-2.2.5] [--weight-envs keras-3.15-jax,keras-3.15-torch]
                        [--cases clone,growth,copy,heavy,soft,import,gpu] [--quick] [--reuse ENVS] [--gpu auto]

``default`` is the project's ``.venv`` (Keras 3 on TensorFlow and tf_keras);
any other name is an environment of the version matrix, built or reused and
entered by the matrix runner (``compat-clone matrix --env NAME -- python
bench/worker.py ...``), which also tells the worker the family it holds.
``--envs`` run every case; ``--weight-envs`` the weight cases only (every
Keras 3 backend has its own copy path). Environments run one after the other:
ratios are measured in-process, and two benchmarks at once only add noise.
With a GPU (``nvidia-smi`` lists one), the GPU mode runs too, one process per
Keras 3 backend installed in ``--python``. Each run writes one JSON file per
environment into ``--results`` and ``_run.json`` (what ran, the machine, the
load); ``bench/report.py`` renders the report from them: BENCHMARKS.md after
the full run, ``.bench/BENCHMARKS.partial.md`` (and its own plot) when
``--envs``, ``--weight-envs`` or ``--cases`` leave out part of it, unless
``--out`` names the file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

import report

from compat_clone_matrix import TableError, load_table, select_envs

ROOT = Path(__file__).resolve().parent.parent
CPU_CASES = "clone,growth,copy,heavy,soft,import"
WEIGHT_CASES = {"copy", "heavy", "soft"}
_SCRUBBED = ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "PYTHONPATH")  # the .venv: no inherited choice of Keras


def _say(text: str) -> None:
    print(f"[run {time.strftime('%H:%M:%S')}] {text}", flush=True)


def _stream(cmd: Sequence[str], env: Dict[str, str], timeout: float) -> int:
    """Runs `cmd`, echoing its progress lines (`[bench ...]`, the matrix runner's); returns the exit status."""
    _say(" ".join(shlex.quote(c) for c in cmd))
    with subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
    ) as proc:
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(("[bench", "[ ", "compat-clone matrix", "Traceback", "----- ")) or "Error" in line:
                print("    " + line.rstrip(), flush=True)
        timer.cancel()
        return proc.wait()


def run_env(
    args: argparse.Namespace, env: str, cases: str, out: Path, extra: Sequence[str] = (), environ: Optional[Dict[str, str]] = None
) -> Optional[str]:
    """Runs the worker in one environment; returns None, or why no results came back."""
    worker = [str(ROOT / "bench" / "worker.py"), "--json", str(out), "--cases", cases, *extra]
    worker += ["--quick"] if args.quick else []
    if out.exists():
        out.unlink()
    if env == "default" or env.startswith("gpu-"):
        env_vars = {k: v for k, v in os.environ.items() if k not in _SCRUBBED} | (environ or {})
        rc = _stream([args.python, *worker, "--env-name", env], env_vars, args.timeout)
    else:
        # `make test`'s environments, our suite's needs laid over the built-in table: one build serves both
        cmd = [
            sys.executable,
            "-m",
            "compat_clone",
            "matrix",
            "--env",
            env,
            "--tail",
            "30",
            "--overlay",
            str(ROOT / "tests" / "matrix-overlay.toml"),
            "--timeout",
            str(args.timeout),
            "--",
            "python",
            *worker,
        ]
        rc = _stream(cmd, dict(os.environ), args.timeout + 1800)  # building an environment takes a while
        log = ROOT / ".matrix" / env / "last.log"
        for line in log.read_text(errors="replace").splitlines() if log.exists() else ():
            if line.startswith("[bench"):
                print("    " + line, flush=True)
    if not out.exists():
        return (
            f"{env}: no results (exit {rc}; see the output above"
            + ("" if env == "default" else f" and .matrix/{env}/last.log")
            + ")"
        )
    return None


def gpu_card() -> Optional[str]:
    """The first GPU `nvidia-smi` lists, or None (no driver, no card)."""
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    names = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    return names[0] if out.returncode == 0 and names else None


def run_gpu(args: argparse.Namespace, results: Path, meta: Dict[str, Any], reuse: Set[str]) -> None:
    """The GPU mode, one process per Keras 3 backend; `--reuse gpu-torch,...` keeps results measured elsewhere.

    The lent GPU machine has no TensorFlow and no project checkout's `.venv`:
    `bench/gpu_device.sh` measures there; its `gpu-<backend>.json` files,
    committed in `bench/gpu/`, go into the report of a run on a machine
    without a GPU (said so, with the card and the date), or, copied into
    `--results`, with `--reuse`.
    """
    card = gpu_card()
    for backend, module in (("torch", "torch"), ("jax", "jax"), ("tensorflow", "tensorflow")):
        name = f"gpu-{backend}"
        if name in reuse and (results / f"{name}.json").exists():
            _keep(results / f"{name}.json", meta)
            continue
        if card is None and args.gpu != "yes":
            recorded = report.GPU_RECORD / f"{name}.json"  # the last measurement on a lent GPU machine
            if recorded.exists():
                shutil.copy2(recorded, results / recorded.name)
                _keep(results / recorded.name, meta)
            continue
        probe = [args.python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"]
        if subprocess.run(probe).returncode != 0:
            meta["skipped"].append(f"GPU mode on {backend}: {module} is not installed in {args.python}")
            continue
        # JAX takes 75% of the GPU at start-up unless told not to: the fresh first-clone processes need room.
        failed = run_env(
            args,
            name,
            "gpu",
            results / f"{name}.json",
            ["--device", "gpu:0"],
            {"KERAS_BACKEND": backend, "COMPAT_CLONE_EXPECT_FAMILY": "keras3", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
        )
        meta["files"].append(f"{name}.json")
        if failed:
            meta["failures"].append(failed)
    if card is None and args.gpu != "yes" and not any(f.startswith("gpu-") for f in meta["files"]):
        meta["skipped"].append(
            "GPU mode: no GPU on this machine (`nvidia-smi` lists none); `bench/gpu_device.sh` measures it where there is one"
        )


def _keep(path: Path, meta: Dict[str, Any]) -> None:
    """Puts an earlier run's results file into this report, saying when (and on which GPU) it was measured."""
    data = json.loads(path.read_text(encoding="utf-8"))
    when = data.get("measured") or time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
    card = next((r["card"] for r in data.get("rows", []) if "card" in r), None)
    meta["files"].append(path.name)
    meta["reused"].append(f"{path.stem}: results of {when}" + (f" ({card}, {data.get('plan', 'full')} plan)" if card else ""))


def machine() -> Dict[str, Any]:
    def read(path: str) -> str:
        try:
            return Path(path).read_text()
        except OSError:
            return ""

    def field(text: str, key: str, sep: str) -> str:
        return next((line.split(sep, 1)[1].strip().strip('"') for line in text.splitlines() if line.startswith(key)), "")

    mem_kb = field(read("/proc/meminfo"), "MemTotal:", ":").split(" ")[0] or "0"
    return {
        "cpu": field(read("/proc/cpuinfo"), "model name", ":") or platform.machine(),
        "cores": os.cpu_count(),
        "ram_gb": round(int(mem_kb) / 1024**2, 1),
        "os": f"{field(read('/etc/os-release'), 'PRETTY_NAME=', '=')} ({platform.system()} {platform.release()})",
    }


def _loadavg() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


PARTIAL = ROOT / ".bench" / "BENCHMARKS.partial.md"


def left_out(args: argparse.Namespace, parser: argparse.ArgumentParser) -> List[str]:
    """What the default run measures that this one does not (environments, cases); [] for a full run."""
    missing = []
    for option in ("envs", "weight_envs", "cases"):
        chosen = {e for e in getattr(args, option).split(",") if e}
        default = [e for e in parser.get_default(option).split(",") if e]
        missing += [f"--{option.replace('_', '-')} {e}" for e in default if e not in chosen]
    return missing


def report_path(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Path:
    """`--out`, else BENCHMARKS.md for a full run and `PARTIAL` for a partial one (never the record)."""
    if args.out:
        return Path(args.out).resolve()
    missing = left_out(args, parser)
    if not missing:
        return ROOT / "BENCHMARKS.md"
    _say(
        f"a partial run (leaves out {', '.join(missing)}): the report goes to "
        f"{PARTIAL.relative_to(ROOT)}, not BENCHMARKS.md (pass --out BENCHMARKS.md to replace the record)"
    )
    return PARTIAL


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="default,keras-2.2.5", help="environments for every case")
    parser.add_argument(
        "--weight-envs", default="keras-3.15-jax,keras-3.15-torch", help="environments for the weight cases only ('' for none)"
    )
    parser.add_argument("--cases", default=CPU_CASES + ",gpu", help="comma-separated subset (default: all)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats: a smoke run, not the record")
    parser.add_argument("--reuse", default="", metavar="ENVS", help="keep these environments' earlier results")
    parser.add_argument(
        "--gpu",
        choices=("auto", "yes", "no"),
        default="auto",
        help="the GPU mode: where nvidia-smi lists a GPU (auto), always, never",
    )
    parser.add_argument(
        "--python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="interpreter of the `default` environment and of the GPU mode",
    )
    parser.add_argument("--timeout", type=float, default=3600, help="per environment, seconds")
    parser.add_argument("--results", default=str(ROOT / ".bench" / "results"))
    parser.add_argument(
        "--out",
        default=None,
        help="the report (default: BENCHMARKS.md after a full run; a run that leaves out "
        f"default environments or cases writes {PARTIAL.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    out = report_path(args, parser)
    envs, weight_envs = ([e for e in s.split(",") if e] for s in (args.envs, args.weight_envs))
    try:
        select_envs(load_table(), [e for e in envs + weight_envs if e != "default"] or ["*"])
    except TableError as exc:
        parser.error(str(exc))
    cases = set(args.cases.split(","))
    results = Path(args.results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    meta: Dict[str, Any] = {
        "argv": sys.argv[1:] if argv is None else argv,
        "via_make": "COMPAT_CLONE_BENCH_VIA_MAKE" in os.environ,
        "started": time.strftime("%Y-%m-%d %H:%M %Z"),
        "load": [_loadavg()],
        "machine": machine(),
        "quick": args.quick,
        "files": [],
        "failures": [],
        "skipped": [],
        "reused": [],
    }
    start, reuse = time.monotonic(), {e for e in args.reuse.split(",") if e}
    for env in envs + [e for e in weight_envs if e not in envs]:
        chosen = [
            c
            for c in CPU_CASES.split(",")
            if c in cases and (env in envs or c in WEIGHT_CASES) and (c != "import" or env == "default")
        ]
        # Not `out`: that is the report's path, written once every environment has run.
        env_json = results / f"{env}.json"
        if not chosen:
            continue
        if env in reuse and env_json.exists():
            _keep(env_json, meta)
            continue
        meta["files"].append(env_json.name)
        failed = run_env(args, env, ",".join(chosen), env_json)
        if failed:
            meta["failures"].append(failed)
    if "gpu" in cases and args.gpu != "no":
        run_gpu(args, results, meta, reuse)
    meta.update(wall=time.monotonic() - start, load=meta["load"] + [_loadavg()])
    (results / "_run.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    verdicts = report.write(results, out)
    print("\n".join(v.line() for v in verdicts))
    _say(f"wrote {os.path.relpath(out, ROOT)} in {meta['wall'] / 60:.1f} min")
    return 1 if meta["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
