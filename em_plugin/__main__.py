"""``python -m em_plugin``: the ``em-plugin`` command line (``demo`` comes via its entry point)."""

from __future__ import annotations

from em_plugin.cli import main

if __name__ == "__main__":
    main()
