"""The old releases write the Keras 2 sources of the conversion tests in their own environments, once for all hosts.

tests/convert/test_convert_zoo_envs.py, test_convert_cli.py and test_convert_field.py
convert, in the Keras 3 hosts (keras-3.15-tf/-jax/-torch), files that the old
releases write (standalone Keras 2.x on TensorFlow 1.15, tf.keras 2.4 / 2.12 /
2.15). Each unit of work is kept by content outside the checkout
(tests/convert/source_cache.py: ``~/.cache/compat-clone/sources``). Here, in a writer environment of a run that has a
host, the writer fills its entries in its own session: the hosts, which run
after it in the table's order, then read them instead of writing them in
theirs. A host that comes first writes the entry itself (and the writer then
reads it): either way it is written once. The writer's own checks (each file
is read back and must answer as the model it saved) run here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, List, Tuple

import pytest

from tests.convert import (
    test_convert_cli,
    test_convert_field,
    test_convert_training,
    test_convert_weights,
    test_convert_with,
    test_convert_zoo_envs,
)
from tests.convert.convert_envs import HERE, KERAS3_HOSTS, written

# (kind, script, the writer environments, the units of work of one)
_WRITERS: Tuple[Tuple[str, Path, Tuple[str, ...], Callable[[str], List[List[str]]]], ...] = (
    (test_convert_zoo_envs.KIND, test_convert_zoo_envs.SCRIPT, test_convert_zoo_envs.WRITERS, test_convert_zoo_envs.writes),
    (test_convert_cli.KIND, test_convert_cli.SOURCES, test_convert_cli.WRITERS, test_convert_cli.writes),
    (test_convert_field.KIND, test_convert_field.SCRIPT, test_convert_field.WRITERS, test_convert_field.writes),
    (test_convert_weights.KIND, test_convert_weights.SCRIPT, test_convert_weights.WRITERS, test_convert_weights.writes),
    (test_convert_with.KIND, test_convert_with.SCRIPT, test_convert_with.WRITERS, test_convert_with.writes),
    (test_convert_training.KIND, test_convert_training.SCRIPT, test_convert_training.WRITERS, test_convert_training.writes),
)


def _params() -> List[Any]:
    out = []
    for kind, script, envs, writes in _WRITERS:
        for env in envs:
            for args in writes(env):
                mark = pytest.mark.skipif(env != HERE, reason=f"written in {env}")
                out.append(pytest.param(kind, script, env, args, id=f"{kind}-{env}-{','.join(args)}", marks=mark))
    return out


@pytest.mark.parametrize("kind, script, env, args", _params())
def test_sources_written_for_the_hosts(kind: str, script: Path, env: str, args: List[str]) -> None:
    hosts = [h for h in KERAS3_HOSTS if h in os.environ.get("COMPAT_CLONE_MATRIX_ENVS", "").split(",")]
    if not hosts:
        pytest.skip("no Keras 3 host in this run reads them")
    folder, report = written(kind, script, env, args)
    assert (folder / "key.json").is_file() and str(report["keras"]), report
