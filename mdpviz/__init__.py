"""mdpviz: build, solve and evaluate metric differential privacy (mDP) mechanisms on city road networks."""

import functools
import hashlib
from importlib import metadata
from pathlib import Path

from .cities import download_city, list_cities, load_city
from .errors import MdpvizError
from .problem import Problem, build_problem, problem_from_points

__version__ = "0.1.0"
__all__ = ["MdpvizError", "Problem", "build_problem", "code_version", "download_city", "list_cities", "load_city",
           "problem_from_points", "__version__"]

# libraries whose version can change a solved mechanism (HiGHS's answers, numpy/scipy numerics)
_NUMERIC_LIBRARIES = ("numpy", "scipy", "highspy")


@functools.cache
def code_version() -> str:
    """A version that changes whenever code that can change a result changes (computed once per process).

    Returns
    -------
    str
        ``__version__`` plus a SHA-256 over every ``.py`` file of the library except the dashboard glue
        (``mdpviz/ui/``) and the versions of numpy, scipy and highspy. The solve cache keys entries with it, so a
        result computed by older code is never served as current.
    """
    h = hashlib.sha256(source_hash(Path(__file__).resolve().parent).encode())
    for lib in _NUMERIC_LIBRARIES:
        try:
            h.update(f"{lib}={metadata.version(lib)}\0".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib}=?\0".encode())
    return f"{__version__}+{h.hexdigest()[:16]}"


def source_hash(root: Path) -> str:
    """SHA-256 over the names and bytes of every ``.py`` file under ``root`` except ``root/ui/``."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if not rel.startswith("ui/"):
            h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()
