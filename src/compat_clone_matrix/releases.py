"""The releases a package index holds: what `--declared` and `--bisect` choose from.

`list_releases` reads one project's page of the package index's simple API
(JSON, PEP 691 / PEP 700; the HTML page of PEP 503 where an index serves no
JSON) and returns its final releases in version order, leaving out
pre-releases, development releases and releases whose every file is yanked.

The index is the one uv and pip are told to use: ``$UV_DEFAULT_INDEX``,
``$UV_INDEX_URL``, ``$PIP_INDEX_URL``, else PyPI's simple API. A run reads each
project's page once (`list_releases` keeps what it read for the process).
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from html.parser import HTMLParser
from typing import Dict, List, Optional, Set, Tuple

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

__all__ = ["IndexReadError", "index_url", "list_releases"]

_PYPI = "https://pypi.org/simple/"
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
_TIMEOUT = 60.0
_SEEN: Dict[Tuple[str, str], List[Version]] = {}
# name-version.tar.gz / .zip (sdist), name-version-...whl (wheel): the version after the project's name
_ARCHIVE_RE = re.compile(r"^(?P<rest>.+?)(?:\.tar\.gz|\.zip|\.tar\.bz2|\.whl|\.egg)$")


class IndexReadError(RuntimeError):
    """The package index could not be read, or holds no release of a project."""


def index_url() -> str:
    """The simple-API index uv and pip are told to use (``$UV_DEFAULT_INDEX``, ``$UV_INDEX_URL``, ``$PIP_INDEX_URL``), else PyPI's.

    Example:

    >>> index_url().endswith("/")
    True
    """
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        value = os.environ.get(name, "").strip()
        if value:
            return value.rstrip("/") + "/"
    return _PYPI


class _Links(HTMLParser):
    """The file names (anchor texts) and yanked marks of a PEP 503 project page."""

    def __init__(self) -> None:
        super().__init__()
        self.files: List[Tuple[str, bool]] = []
        self._yanked: Optional[bool] = None

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag == "a":
            self._yanked = any(key == "data-yanked" for key, _ in attrs)

    def handle_data(self, data: str) -> None:
        if self._yanked is not None and data.strip():
            self.files.append((data.strip(), self._yanked))
            self._yanked = None


def _version_of(filename: str, project: str) -> Optional[Version]:
    """The release a file of `project` belongs to, read from its name (None when it cannot be read)."""
    match = _ARCHIVE_RE.match(filename)
    if match is None:
        return None
    parts = match.group("rest").split("-")
    for cut in range(1, len(parts)):
        if canonicalize_name("-".join(parts[:cut])) == project:
            try:
                return Version(parts[cut])
            except InvalidVersion:
                return None
    return None


def _read(url: str) -> Tuple[str, bytes]:
    request = urllib.request.Request(url, headers={"Accept": _ACCEPT, "User-Agent": "compat-clone-matrix"})
    with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:  # noqa: S310 - the user's own index
        return response.headers.get("Content-Type", ""), response.read()


def _files(project: str, kind: str, body: bytes) -> List[Tuple[Optional[Version], bool]]:
    """(release, yanked) of each file the page lists."""
    if "json" in kind:
        data = json.loads(body.decode("utf-8"))
        return [(_version_of(f.get("filename", ""), project), bool(f.get("yanked"))) for f in data.get("files", [])]
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    return [(_version_of(name, project), yanked) for name, yanked in parser.files]


def list_releases(package: str) -> List[Version]:
    """The final releases of `package` on the index, oldest first.

    Args:
        package: the project's name on the index (``keras``, ``tf_keras``, ...).

    Returns:
        Its releases in version order: no pre-release, development release,
        or release whose every file is yanked.

    Raises:
        IndexReadError: the index cannot be read, or lists no release of `package`.

    Example:

    >>> [str(v) for v in list_releases("keras") if v.release[:2] == (3, 2)]  # doctest: +SKIP
    ['3.2.0', '3.2.1']
    """
    project = canonicalize_name(package)
    url = index_url() + project + "/"
    key = (url, project)
    if key in _SEEN:
        return list(_SEEN[key])
    try:
        kind, body = _read(url)
        files = _files(project, kind, body)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise IndexReadError(
            f"Cannot list the releases of {package!r}: reading {url} failed ({reason}). Expected a reachable "
            "package index (set UV_DEFAULT_INDEX or PIP_INDEX_URL for a mirror)."
        ) from None
    live: Set[Version] = set()
    every: Set[Version] = set()
    for version, yanked in files:
        if version is None or version.is_prerelease or version.is_devrelease:
            continue
        every.add(version)
        if not yanked:
            live.add(version)
    if not every:
        raise IndexReadError(f"The index {index_url()} lists no release of {package!r}. Expected a project it serves.")
    _SEEN[key] = sorted(live)
    return list(_SEEN[key])
