"""The learned peers ``em-plugin eval --peers`` can train beside the memory, by name.

Peers are opt-in: each trains on the train split in the same run (seeded, CPU), which takes
seconds to minutes, where the memory and the count baselines take none.
"""

from __future__ import annotations

from collections.abc import Iterable

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.sequence_model import SequenceBaseline

__all__ = ["PEERS", "make_peer", "parse_peers"]

PEERS = ("lstm", "transformer")
"""The peer names, in the order the report lists them."""


def parse_peers(names: str | Iterable[str] | None) -> tuple[str, ...]:
    """Return the peers named (``"lstm,transformer"`` or a list), each once, in :data:`PEERS` order.

    Raises:
        ConfigurationError: For a name that is not a peer (the message lists the valid ones).
    """
    if names is None:
        return ()
    if isinstance(names, str):
        names = names.split(",")
    chosen = {n.strip().lower() for n in names if n.strip()}
    unknown = sorted(chosen - set(PEERS))
    if unknown:
        raise ConfigurationError(
            f"unknown peer(s) {', '.join(map(repr, unknown))}; choose from {', '.join(PEERS)}"
        )
    return tuple(p for p in PEERS if p in chosen)


def make_peer(name: str) -> SequenceBaseline:
    """Return an untrained peer with its default hyper-parameters.

    Raises:
        ConfigurationError: For an unknown name.
    """
    (name,) = parse_peers([name]) or ("",)
    if name == "lstm":
        from em_plugin.evaluation.lstm import LSTMBaseline

        return LSTMBaseline()
    if name == "transformer":
        from em_plugin.evaluation.transformer import TransformerBaseline

        return TransformerBaseline()
    raise ConfigurationError(f"no peer named; choose from {', '.join(PEERS)}")
