"""Which addresses are loopback: the rule every server of the house binds by.

A server without authentication (``em-plugin serve`` without ``--token-file``, the memory panel
without ``--token``, the MCP server without tokens) binds a loopback address only, and the panel
also refuses a request whose ``Host`` is not a loopback name. All of them ask
:func:`is_loopback`, so one address is loopback for every door or for none.

Example:
    >>> from em_plugin.access import is_loopback
    >>> is_loopback("127.0.0.1"), is_loopback("[::1]"), is_loopback("LocalHost")
    (True, True, True)
    >>> is_loopback("0.0.0.0"), is_loopback("example.org")
    (False, False)
"""

from __future__ import annotations

import ipaddress

__all__ = ["LOOPBACK_NAMES", "is_loopback"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""Host names that always mean this machine's loopback interface."""


def is_loopback(host: str) -> bool:
    """Tell whether a host name or address is the loopback interface.

    Args:
        host: A host name or an IPv4 or IPv6 address, IPv6 with or without brackets; case and
            surrounding space do not matter.

    Returns:
        True for ``localhost`` and every loopback address (``127.0.0.0/8``, ``::1``).
    """
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
