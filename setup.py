"""The package layout: the repository keeps the design's layers as top-level folders
(``reference``, ``adapters``, ``harness``, ``reports``); the wheel installs them inside one
package, ``hourglass``, so that nothing generic lands at the top of a user's environment.
Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
#: the folders that ship, each the subpackage hourglass.<folder>
LAYERS = ("reference", "adapters", "harness", "reports")

packages = ["hourglass"] + [f"hourglass.{layer}.{sub}".rstrip(".") for layer in LAYERS
                            for sub in [""] + find_packages(str(ROOT / layer))]
setup(packages=packages, package_dir={"hourglass": "hourglass", **{f"hourglass.{layer}": layer for layer in LAYERS}})
