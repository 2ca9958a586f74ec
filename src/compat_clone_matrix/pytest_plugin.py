"""The pytest plugin shipped with compat_clone (entry point ``pytest11``: ``compat_clone``).

It is off, and does nothing, unless pytest runs in a matrix environment
(``COMPAT_CLONE_ENV`` is set, as `compat-clone matrix` does) or with
``--compat-results``. When on, it

1. checks at session start, in a separate interpreter (`claim`), that the
   Keras the project imports is the family / version / backend the
   environment claims (``COMPAT_CLONE_EXPECT_*``, ``_MODULE`` naming the
   module the project imports it from), and stops the session with exit
   status 4 and the reason when it is not: a mislabeled environment fails
   instead of passing on the wrong Keras. The check's result also goes to
   ``$COMPAT_CLONE_CLAIM_FILE`` when set (the matrix runner reads it: its
   status ``MISLABELED``, the "loaded" column of its summary);
2. names the environment, its claim and the Keras it loaded in the report
   header and, whatever the options (``-q`` hides the header), in a line
   of the closing summary: the proof of what the tests ran on;
3. records what the tests really used (`observed`: the families of the
   models compat_clone was handed, the Keras modules imported, in every
   process that ran tests, xdist workers included) and judges it against the
   claim at session end: tests that used another family than the claimed
   one make the environment MISLABELED (exit status 4, the claim file says
   why: the module imported, the family it gave, what to change); tests that
   used no Keras at all are reported as such (``used: "no Keras"``), not
   certified;
4. with ``--compat-results``, writes one JSON line per test to
   ``$COMPAT_CLONE_RESULTS/<env>.tests.jsonl`` (default folder
   ``.matrix/_results``; created at the first test, so a session stopped
   before any test leaves the last results in place), which ``compat-clone
   matrix --report`` / ``--merge`` turn into a test x environment table;
4. keeps ``$COMPAT_CLONE_RUNNING_FILE`` (when set) up to date with the
   tests running now and when each started (xdist workers' included), and
   how many finished: when the matrix runner kills a session that ran out of
   time, it reports from there which tests were running and for how long.

Importing this module imports no framework, and nothing beyond ``os`` and
pytest: pytest loads it in every environment where compat_clone is
installed. The session's machinery (`compat_clone_matrix._plugin_session`)
is imported only when the plugin is on. ``-p no:compat_clone`` turns it
off entirely.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compat_clone", "compat-clone matrix environments")
    group.addoption(
        "--compat-results",
        action="store_true",
        default=False,
        help="write one JSON line per test to $COMPAT_CLONE_RESULTS/<env>.tests.jsonl "
        "(default folder .matrix/_results) for `compat-clone matrix --report`",
    )


def pytest_configure(config: pytest.Config) -> None:
    asked = bool(config.getoption("compat_results", False))
    if os.environ.get("COMPAT_CLONE_ENV") or asked:
        # Only now the session's machinery: a pytest that is not in a matrix
        # environment and was not asked for results imports nothing more.
        from compat_clone_matrix._plugin_session import MatrixEnvironment

        config.pluginmanager.register(MatrixEnvironment(config, write_results=asked), "compat_clone_matrix_env")
