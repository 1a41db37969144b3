"""A learned next-call baseline: a Tax-style LSTM over the call sequence, trained in the same run.

After Tax et al. (CAiSE 2017, "Predictive business process monitoring with LSTM neural
networks"): the prefix of a workflow's leaf tokens (:func:`~em_plugin.evaluation.baselines.
tokens`: tool names, one shared token for instructions) is embedded (32 dimensions), read by a
2-layer LSTM of 100 units, and a softmax over the calls predicts the next one. Training uses the
train split only: every prefix ending before a call is a sample (the same targets the protocol
scores); the last 20% of the train workflows are held out for early stopping (patience 5 epochs,
best weights kept), as Keras' ``validation_split`` does in the original. NAdam (lr 2e-3, as in
the original), batches of 32, patience 10 epochs, at most 80 epochs, prefixes cut to their last
20 tokens.

``LSTMConfig(refit=True)`` then trains again on every train workflow for the epoch count early
stopping chose (measured, not the default: it helps on the tau2 files and hurts on Galaxy).

Vocabulary, samples, seeded training and ranking are shared with the other learned peers
(:mod:`em_plugin.evaluation.sequence_model`): everything is seeded (:data:`SEED`) and runs on CPU
in one thread, so a run is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.sequence_model import PAD, SEED, SequenceBaseline, TrainingConfig

__all__ = ["SEED", "LSTMBaseline", "LSTMConfig"]


@dataclass(frozen=True, kw_only=True)
class LSTMConfig(TrainingConfig):
    """Hyper-parameters of the baseline (Tax et al.'s, see the module doc)."""

    embedding: int = 32
    hidden: int = 100
    layers: int = 2
    dropout: float = 0.2
    max_epochs: int = 80
    patience: int = 10
    learning_rate: float = 2e-3

    def __post_init__(self) -> None:
        if min(self.embedding, self.hidden, self.layers) < 1:
            raise ConfigurationError("LSTM sizes must be >= 1")
        super().__post_init__()


class LSTMBaseline(SequenceBaseline):
    """Ranks next calls with an LSTM trained on the memory workflows.

    Args:
        config: Hyper-parameters.
    """

    name = "LSTM"
    optimiser = "NAdam"

    def __init__(self, config: LSTMConfig | None = None) -> None:
        super().__init__(config or LSTMConfig())

    def _network(self, vocabulary: int, calls: int) -> Any:
        return _network_class()(vocabulary, calls, self.config)


def _network_class() -> Any:
    import torch

    class Network(torch.nn.Module):
        def __init__(self, vocabulary: int, calls: int, config: LSTMConfig) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(vocabulary, config.embedding, padding_idx=PAD)
            self.lstm = torch.nn.LSTM(
                config.embedding,
                config.hidden,
                num_layers=config.layers,
                batch_first=True,
                dropout=config.dropout if config.layers > 1 else 0.0,
            )
            self.out = torch.nn.Linear(config.hidden, calls)

        def forward(self, batch: Any) -> Any:
            hidden, _ = self.lstm(self.embed(batch))
            return self.out(hidden[:, -1, :])

    return Network
