"""Fast checks of the installer files: no PyInstaller, no build, no network; seconds in all.

packaging/ is not a Python package (a package of that name would shadow the `packaging` library), so
its shared module is imported here as `build_info` with the folder put on sys.path.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


@pytest.fixture(scope="session")
def build_info():
    if str(PACKAGING) not in sys.path:
        sys.path.insert(0, str(PACKAGING))
    return importlib.import_module("build_info")
