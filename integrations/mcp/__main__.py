"""``python -m integrations.mcp [OPTIONS]``: the same as ``em-plugin mcp [OPTIONS]``.

For an assistant's server config when the ``em-plugin`` script is not on its PATH, and for a
clone whose entry points are not installed.
"""

from __future__ import annotations

import sys

import integrations.mcp.command  # noqa: F401  (adds the command to the group)
from em_plugin.cli import main

if __name__ == "__main__":
    main(["mcp", *sys.argv[1:]])
