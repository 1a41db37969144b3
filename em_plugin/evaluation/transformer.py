"""A learned next-call peer: a ProcessTransformer-style self-attention encoder, trained in the run.

After Bukhsh et al. ("ProcessTransformer: Predictive Business Process Monitoring with
Transformer Network", 2021), the transformer family that process mining compares against the
LSTM: the prefix of a workflow's leaf tokens (:func:`~em_plugin.evaluation.baselines.tokens`) is
embedded (36 dimensions) plus a learned position embedding, read by one transformer block
(4-head self-attention, a 64-unit feed-forward layer, residuals and layer norms), max-pooled over
the prefix's positions (padding masked), then dropout 0.1, a 64-unit ReLU layer, dropout 0.1 and
a softmax over the calls. Adam, learning rate 1e-3, as in the original.

Where it differs from the original, to train in the same run on a 2-core machine and to compare
on equal terms with :mod:`~em_plugin.evaluation.lstm`: the same samples, held-out share and
early stopping as the LSTM (:mod:`~em_plugin.evaluation.sequence_model`; patience 5 epochs, at
most 40), batches of 32 instead of 12, prefixes cut to their last 20 tokens. Seeded
(:data:`~em_plugin.evaluation.sequence_model.SEED`), CPU, one thread: a run is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.sequence_model import PAD, SequenceBaseline, TrainingConfig

__all__ = ["TransformerBaseline", "TransformerConfig"]


@dataclass(frozen=True, kw_only=True)
class TransformerConfig(TrainingConfig):
    """Hyper-parameters of the transformer peer (see the module doc)."""

    embedding: int = 36
    heads: int = 4
    feed_forward: int = 64
    hidden: int = 64
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if min(self.embedding, self.heads, self.feed_forward, self.hidden) < 1:
            raise ConfigurationError("transformer sizes must be >= 1")
        if self.embedding % self.heads:
            raise ConfigurationError(
                f"the embedding ({self.embedding}) must be a multiple of the heads ({self.heads})"
            )
        super().__post_init__()


class TransformerBaseline(SequenceBaseline):
    """Ranks next calls with a small self-attention encoder trained on the memory workflows.

    Args:
        config: Hyper-parameters.
    """

    name = "transformer"

    def __init__(self, config: TransformerConfig | None = None) -> None:
        super().__init__(config or TransformerConfig())

    def _network(self, vocabulary: int, calls: int) -> Any:
        return _network_class()(vocabulary, calls, self.config)


def _network_class() -> Any:
    import torch

    class Network(torch.nn.Module):
        def __init__(self, vocabulary: int, calls: int, config: TransformerConfig) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(vocabulary, config.embedding, padding_idx=PAD)
            # Positions count back from the prefix's last token (inputs are left-padded), so
            # "the last token" always has the same position embedding.
            self.position = torch.nn.Embedding(config.max_length, config.embedding)
            self.block = torch.nn.TransformerEncoderLayer(
                config.embedding,
                config.heads,
                dim_feedforward=config.feed_forward,
                dropout=config.dropout,
                batch_first=True,
            )
            self.head = torch.nn.Sequential(
                torch.nn.Dropout(config.dropout),
                torch.nn.Linear(config.embedding, config.hidden),
                torch.nn.ReLU(),
                torch.nn.Dropout(config.dropout),
                torch.nn.Linear(config.hidden, calls),
            )

        def forward(self, batch: Any) -> Any:
            length = batch.shape[1]
            back = torch.arange(length - 1, -1, -1).clamp(max=self.position.num_embeddings - 1)
            padding = batch == PAD
            # A prefix of length 0 is all padding: let it attend to its last slot, not to nothing.
            padding[:, -1] = False
            hidden = self.embed(batch) + self.position(back)
            hidden = self.block(hidden, src_key_padding_mask=padding)
            hidden = hidden.masked_fill(padding.unsqueeze(-1), float("-inf")).amax(dim=1)
            return self.head(hidden)

    return Network
