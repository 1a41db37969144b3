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

Everything is seeded (:data:`SEED`) and runs on CPU in one thread (small matrices: threads only
contend), so a run is reproducible. The ranking is
every call by decreasing probability, a token never seen in training maps to "unknown".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.baselines import _INSTRUCTION, tokens
from provenance.model import Workflow

__all__ = ["SEED", "LSTMBaseline", "LSTMConfig"]

SEED = 20170612
_PAD, _UNKNOWN = 0, 1


@dataclass(frozen=True)
class LSTMConfig:
    """Hyper-parameters of the baseline (Tax et al.'s, see the module doc)."""

    embedding: int = 32
    hidden: int = 100
    layers: int = 2
    dropout: float = 0.2
    batch_size: int = 32
    max_epochs: int = 80
    patience: int = 10
    learning_rate: float = 2e-3
    validation: float = 0.2
    max_length: int = 20
    seed: int = SEED
    refit: bool = False
    """Train again on every train workflow for the epoch count early stopping chose."""
    monitor: str = "loss"
    """What early stopping watches on the held-out workflows: ``"loss"`` (cross-entropy, as
    Keras' ``EarlyStopping(monitor="val_loss")`` in the original) or ``"accuracy"`` (hit@1)."""

    def __post_init__(self) -> None:
        if min(self.embedding, self.hidden, self.layers, self.batch_size, self.max_length) < 1:
            raise ConfigurationError("LSTM sizes, batch size and max length must be >= 1")
        if not 0.0 < self.validation < 1.0:
            raise ConfigurationError(f"validation must be in (0, 1), got {self.validation}")
        if self.monitor not in ("accuracy", "loss"):
            raise ConfigurationError(f"monitor must be 'accuracy' or 'loss', got {self.monitor!r}")


class LSTMBaseline:
    """Ranks next calls with an LSTM trained on the memory workflows.

    Args:
        config: Hyper-parameters.
    """

    def __init__(self, config: LSTMConfig | None = None) -> None:
        self.config = config or LSTMConfig()
        self._vocab: dict[str, int] = {}
        self._calls: list[str] = []
        self._call_index: dict[str, int] = {}
        self._model: Any = None
        self.epochs = 0
        """Epochs trained (including the patience ones)."""

    def _samples(self, workflows: Sequence[Workflow]) -> tuple[list[list[int]], list[int]]:
        inputs, targets = [], []
        for workflow in workflows:
            names = tokens(workflow)
            sequence = [self._vocab.get(t, _UNKNOWN) for t in names]
            for j in range(1, len(sequence)):
                if names[j] != _INSTRUCTION and names[j] in self._call_index:
                    inputs.append(sequence[max(0, j - self.config.max_length) : j])
                    targets.append(self._call_index[names[j]])
        return inputs, targets

    def fit(self, workflows: Sequence[Workflow]) -> LSTMBaseline:
        """Train on the memory workflows (the train split); return ``self``.

        Raises:
            ConfigurationError: When the workflows hold fewer than two calls to learn from.
        """
        with _one_thread():
            return self._fit(workflows)

    def _fit(self, workflows: Sequence[Workflow]) -> LSTMBaseline:
        config = self.config
        workflows = list(workflows)
        for workflow in workflows:
            sequence = tokens(workflow)
            for j, token in enumerate(sequence):
                self._vocab.setdefault(token, len(self._vocab) + 2)
                if j >= 1 and token != _INSTRUCTION and token not in self._calls:
                    self._calls.append(token)
        self._call_index = {c: i for i, c in enumerate(self._calls)}
        cut = max(1, int(round(len(workflows) * (1.0 - config.validation))))
        train_x, train_y = self._samples(workflows[:cut])
        val_x, val_y = self._samples(workflows[cut:])
        if len(train_y) < 2:
            raise ConfigurationError("the LSTM baseline needs at least two calls to train on")
        model, best_epoch = self._train(train_x, train_y, val_x, val_y, config.max_epochs)
        if config.refit and val_y:
            # Early stopping chose the epoch count; train again on every train workflow.
            model, _ = self._train(train_x + val_x, train_y + val_y, [], [], best_epoch)
        model.eval()
        self._model = model
        return self

    def _train(
        self,
        xs: list[list[int]],
        ys: list[int],
        val_x: list[list[int]],
        val_y: list[int],
        epochs: int,
    ) -> tuple[Any, int]:
        """Train a fresh seeded model; return it (best weights) and its best epoch count."""
        import torch

        config = self.config
        generator = torch.Generator().manual_seed(config.seed)
        torch.manual_seed(config.seed)
        model = _Network(len(self._vocab) + 2, len(self._calls), config)
        optimiser = torch.optim.NAdam(model.parameters(), lr=config.learning_rate)
        loss_fn = torch.nn.CrossEntropyLoss()
        best, best_state, waited, best_epoch = float("inf"), None, 0, epochs
        for epoch in range(epochs):
            model.train()
            order = torch.randperm(len(ys), generator=generator).tolist()
            for start in range(0, len(order), config.batch_size):
                chosen = order[start : start + config.batch_size]
                batch = _pad([xs[i] for i in chosen])
                optimiser.zero_grad()
                loss = loss_fn(model(batch), torch.tensor([ys[i] for i in chosen]))
                loss.backward()
                optimiser.step()
            self.epochs = epoch + 1
            if not val_y:  # nothing held out: train the full schedule
                continue
            current = self._validation(model, loss_fn, val_x, val_y)
            if current < best - 1e-4:
                best, waited, best_epoch = current, 0, epoch + 1
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            else:
                waited += 1
                if waited >= config.patience:
                    break
        if best_state is not None:
            model.load_state_dict(best_state)
        return model, best_epoch

    def _validation(self, model: Any, loss_fn: Any, xs: list[list[int]], ys: list[int]) -> float:
        """The monitored quantity, lower is better (the loss, or minus hit@1)."""
        import torch

        model.eval()
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(ys), 256):
                batch = _pad(xs[start : start + 256])
                target = torch.tensor(ys[start : start + 256])
                scores = model(batch)
                if self.config.monitor == "loss":
                    total += float(loss_fn(scores, target)) * len(target)
                else:
                    total -= float((scores.argmax(dim=1) == target).sum())
        return total / len(ys)

    def rank(self, context: Sequence[str]) -> list[str]:
        """Rank next calls after a token context (from :func:`tokens`), most probable first.

        Raises:
            ConfigurationError: When the baseline was not fitted.
        """
        import torch

        if self._model is None:
            raise ConfigurationError("LSTMBaseline.rank() before fit()")
        ids = [self._vocab.get(t, _UNKNOWN) for t in context][-self.config.max_length :]
        with _one_thread(), torch.no_grad():
            scores = self._model(_pad([ids]))[0].numpy()
        order = np.argsort(-scores, kind="stable")
        return [self._calls[i] for i in order]


@contextmanager
def _one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _pad(sequences: Sequence[Sequence[int]]) -> Any:
    """Left-pad to the longest sequence: the LSTM's last step is then every prefix's last token."""
    import torch

    length = max(1, max((len(s) for s in sequences), default=1))
    out = torch.full((len(sequences), length), _PAD, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        if sequence:
            out[row, length - len(sequence) :] = torch.tensor(list(sequence), dtype=torch.long)
    return out


def _network_class() -> Any:
    import torch

    class Network(torch.nn.Module):
        def __init__(self, vocabulary: int, calls: int, config: LSTMConfig) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(vocabulary, config.embedding, padding_idx=_PAD)
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


def _Network(vocabulary: int, calls: int, config: LSTMConfig) -> Any:
    return _network_class()(vocabulary, calls, config)
