"""app/store needs no engine: importing it must not pull in torch, mlx or engine."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_store_imports_no_engine_torch_or_mlx():
    code = ("import sys, app.store; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'mlx', 'engine'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_are_exported():
    import app.store

    assert sorted(app.store.__all__) == sorted(set(app.store.__all__))
    for name in app.store.__all__:
        assert hasattr(app.store, name), name
