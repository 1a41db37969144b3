"""``python -m em_plugin``: the command line without the integrations' ``demo`` command."""

from __future__ import annotations

from em_plugin.cli import main

if __name__ == "__main__":
    main()
