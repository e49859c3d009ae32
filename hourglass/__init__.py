"""Hourglass: a conformance and chaos test harness for delay/retry implementations with Apache
RocketMQ semantics.

The project's layers are its subpackages: ``hourglass.reference`` (the model), ``hourglass.adapters``
(the systems under test), ``hourglass.harness`` (scenarios, runner, CLI, pytest plugin) and
``hourglass.reports`` (the checker and the reports). An installed wheel has them inside this
package (pyproject's package-dir); in a checkout they are the folders beside this one, the
project's layout, and this package reaches them through its ``__path__``. Nothing is installed
at the top level of a user's environment but ``hourglass``.
"""

from pathlib import Path as _Path

_here = _Path(__file__).resolve().parent
if not (_here / "harness").is_dir() and (_here.parent / "harness" / "__init__.py").is_file():
    __path__.append(str(_here.parent))  # noqa: F821 - a package's __path__


def code_root() -> _Path:
    """The directory to put on a child Python's ``sys.path`` so that ``import hourglass`` finds
    this same code (the checkout, or the site-packages this package is installed in)."""
    return _here.parent
