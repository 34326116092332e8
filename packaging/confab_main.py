"""PyInstaller's entry point: the frozen Confab runs exactly what `python -m app` runs."""

import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
