"""Running one piece of work in several threads at once, in every family (the concurrency tests).

`run_in_threads` starts the threads together (a barrier), lets each enter
what its family needs to use models built on the main thread
(`session_scope`), and fails the test when a thread hangs or raises, naming
the first failing thread. Used by tests/clone/test_concurrency.py and
tests/clone/test_soft_update_cache.py.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, List, Tuple

from tests.clone.features import family_name


def per_thread_session(K: Any) -> bool:
    """Standalone Keras 2.3 on a TF 1.x graph keeps one TF session per thread."""
    from packaging.version import Version

    return family_name(K) == "keras2" and Version(K.__version__) >= Version("2.3")


def session_scope(K: Any) -> Callable[[], Any]:
    """What a worker thread enters to use the models of the main thread.

    Keras 2.3 keeps the values in the session of the thread that initialized
    them: the documented way to use them elsewhere is that session as the
    default. Every other family needs nothing.
    """
    if not per_thread_session(K):
        return contextlib.nullcontext
    return K.backend.get_session().as_default  # type: ignore[no-any-return]


def run_in_threads(K: Any, count: int, work: Callable[[int], None], *, name: str, timeout: float = 300.0) -> None:
    """Runs ``work(i)`` for ``i in range(count)``, each in its own thread, all started at once.

    Args:
        K: the Keras module under test (which session the threads enter).
        count: how many threads.
        work: one thread's work, given its index; it keeps its own results.
        name: the threads' name prefix (``name-0``, ``name-1``, ...), also in
            the failure message.
        timeout: seconds each thread is waited for.

    Raises:
        AssertionError: a thread still running after `timeout`, or one that raised
            (the first failure is shown with its thread's index).
    """
    errors: List[Tuple[int, BaseException]] = []
    barrier = threading.Barrier(count)
    scope = session_scope(K)

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=60)
            with scope():
                work(i)
        except BaseException as exc:  # reported below, with the thread's index
            errors.append((i, exc))

    threads = [threading.Thread(target=run, args=(i,), name=f"{name}-{i}") for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), f"a {name} thread hung"
    assert not errors, f"{len(errors)} {name} thread(s) failed; first: thread {errors[0][0]}: {errors[0][1]!r}"
