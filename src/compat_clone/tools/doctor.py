"""`compat-clone doctor`: what this environment has, and does cloning work here.

1. Installed families and versions, read from package metadata (nothing is
   imported for this part), with `TF_USE_LEGACY_KERAS` and `KERAS_BACKEND`.
2. For each family: which implementation serves it, and the known native
   problems of that version (`compat_clone.known_issues`).
3. The devices each installed backend sees.
4. A self-check: reference models (`compat_clone.tools.reference_models`) built in every
   family, cloned natively and through compat_clone, outputs compared after a
   weight copy; a table of model x family -> native, compat_clone, time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from importlib import import_module
from typing import Any, Dict, List, Optional, Tuple

from compat_clone.families.installed import installed_families, installed_versions

__all__ = ["add_arguments", "run", "collect", "families"]

_DISTS = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tensorflow-macos"),
    "keras": ("keras",),
    "tf_keras": ("tf_keras", "tf-keras"),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "torch": ("torch",),
    "numpy": ("numpy",),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--no-self-check", action="store_true", help="skip building and cloning reference models")


def _installed() -> Dict[str, str]:
    return installed_versions(_DISTS)


def families(installed: Dict[str, str]) -> List[Tuple[str, str, str]]:
    """Every family this environment can serve, read from package versions alone (nothing imported).

    Args:
        installed: distribution name -> version, as `collect` reads them
            from package metadata (``{"keras": "3.15.1"}``).

    Returns:
        A list of ``(family, module to import, version)``, one per family.

    Example:

    >>> families({"keras": "2.2.4"})
    [('keras2', 'keras', '2.2.4')]
    """
    return installed_families({k: v for k, v in installed.items() if k in ("keras", "tf_keras")})


def _devices(installed: Dict[str, str]) -> Dict[str, Any]:
    devices: Dict[str, Any] = {}
    if "tensorflow" in installed:
        try:
            tf = import_module("tensorflow")
            # TF 1.15 has it under `experimental` only
            listing = getattr(tf.config, "list_logical_devices", None) or tf.config.experimental.list_logical_devices
            devices["tensorflow"] = [d.name for d in listing()]
        except Exception as exc:  # report, don't crash the doctor
            devices["tensorflow"] = f"error: {exc}"
    if "jax" in installed:
        try:
            jax = import_module("jax")
            devices["jax"] = [str(d) for d in jax.devices()]
        except Exception as exc:
            devices["jax"] = f"error: {exc}"
    if "torch" in installed:
        try:
            torch = import_module("torch")
            cuda = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
            devices["torch"] = ["cpu"] + cuda
        except Exception as exc:
            devices["torch"] = f"error: {exc}"
    return devices


def _short(exc: BaseException) -> str:
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return line if len(line) <= 110 else line[:107] + "..."


def _self_check(K: Any) -> List[Dict[str, Any]]:
    import compat_clone
    from compat_clone.tools.reference_models import REFERENCE_MODELS

    rows = []
    for label, build in REFERENCE_MODELS.items():
        row: Dict[str, Any] = {"model": label}
        try:
            model, _, check = build(K)
        except Exception as exc:
            row.update(native="n/a", compat="n/a", detail=f"cannot build here: {_short(exc)}")
            rows.append(row)
            continue

        def native(model: Any = model) -> Any:
            clone = K.models.clone_model(model)
            clone.set_weights(model.get_weights())
            return clone

        def compat(model: Any = model) -> Any:
            return compat_clone.clone_model(model, copy_weights=True)

        for side, fn in (("native", native), ("compat", compat)):
            start = time.perf_counter()
            try:
                clone = fn()
                # clone + weight copy only; the output comparison is not timed
                row[f"{side}_ms"] = round((time.perf_counter() - start) * 1000, 1)
                check(model, clone)
                row[side] = "ok"
            except Exception as exc:
                row[side] = "FAIL"
                row[f"{side}_error"] = _short(exc)
        rows.append(row)
    return rows


def collect(self_check: bool = True) -> Dict[str, Any]:
    """Everything the doctor reports, as one JSON-able dict."""
    from compat_clone import __version__
    from compat_clone.known_issues import issues_for

    installed = _installed()
    report: Dict[str, Any] = {
        "compat_clone": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "installed": installed,
        "env": {k: os.environ.get(k) for k in ("TF_USE_LEGACY_KERAS", "KERAS_BACKEND")},
        "families": [],
    }
    for family, module_name, version in families(installed):
        entry: Dict[str, Any] = {
            "family": family,
            "module": module_name,
            "version": version,
            "known_native_issues": [
                {"id": i.id, "versions": i.versions, "symptom": i.symptom, "upstream": i.upstream, "handled_by": i.handled_by}
                for i in issues_for(family, version)
            ],
        }
        try:
            K = import_module(module_name)
            import compat_clone

            x = K.Input((2,))
            probe = K.models.Model(x, K.layers.Dense(1)(x))
            info = compat_clone.family_of(probe)
            entry["implementation"] = info.implementation
            entry["backend"] = info.backend
            if info.family != family:
                entry["warning"] = f"package metadata says {family}, the model object says {info.family}"
            if self_check:
                entry["self_check"] = _self_check(K)
        except Exception as exc:
            entry["error"] = _short(exc)
        report["families"].append(entry)
    report["devices"] = _devices(installed)
    return report


_NOTHING_INSTALLED = (
    "install the Keras you use, e.g. `pip install keras` (Keras 3, plus a backend: `tensorflow-cpu`, `jax` or "
    "`torch`), `pip install tensorflow-cpu tf_keras` (Keras 2), or `pip install 'compat-clone[tensorflow]'`."
)


def _table(rows: List[List[str]], header: List[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _print(report: Dict[str, Any]) -> None:
    print(f"compat_clone {report['compat_clone']} on Python {report['python']} ({report['platform']})")
    if not report["families"]:
        # No Keras at all: one line saying what to install, and nothing to check.
        print(f"No Keras is installed in this Python ({sys.executable}): {_NOTHING_INSTALLED}")
        return
    print("\nInstalled:")
    for name, version in sorted(report["installed"].items()):
        print(f"  {name:<11} {version}")
    for key, value in report["env"].items():
        print(f"  {key}={value if value is not None else '(unset)'}")
    for fam in report["families"]:
        print(
            f"\n== {fam['family']}: {fam['module']} {fam['version']}"
            f" -> {fam.get('implementation', '?')} (backend: {fam.get('backend', '?')})"
        )
        if "error" in fam:
            print(f"  cannot load: {fam['error']}")
        if "warning" in fam:
            print(f"  warning: {fam['warning']}")
        if fam["known_native_issues"]:
            print("  Known native problems of this version (worked around by compat_clone):")
            for issue in fam["known_native_issues"]:
                upstream = f" ({issue['upstream']})" if issue["upstream"] else ""
                print(f"   - {issue['id']} [{issue['versions']}]: {issue['symptom']}{upstream}")
        rows = fam.get("self_check")
        if rows:
            print("  Self-check (clone + weight copy timed; outputs then compared):")
            table = [
                [r["model"], r.get("native", "?"), r.get("compat", "?"), f"{r.get('native_ms', '')}", f"{r.get('compat_ms', '')}"]
                for r in rows
            ]
            print("    " + _table(table, ["model", "native", "compat_clone", "native ms", "compat ms"]).replace("\n", "\n    "))
            for r in rows:
                for side in ("native", "compat"):
                    if f"{side}_error" in r:
                        print(f"    {side} / {r['model']}: {r[f'{side}_error']}")
    print("\nDevices:")
    for backend, devs in report["devices"].items():
        print(f"  {backend:<11} {devs}")


def run(args: argparse.Namespace) -> int:
    import logging

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the doctor's own process (the command line's)
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    report = collect(self_check=not args.no_self_check)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)
    failed = [r for fam in report["families"] for r in fam.get("self_check", []) if r.get("compat") == "FAIL"]
    broken = [fam for fam in report["families"] if "error" in fam]
    return 1 if failed or broken else 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="compat-clone doctor")
    add_arguments(parser)
    return run(parser.parse_args(argv))
