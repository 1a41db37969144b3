"""What the learned peers of ``em-plugin eval`` share: vocabulary, samples, seeded training.

A peer reads a workflow's leaf tokens (:func:`~em_plugin.evaluation.baselines.tokens`: tool
names, one shared token for instructions) and predicts the next call. Training uses the train
split only: every prefix ending before a call is a sample (the targets the protocol scores), cut
to its last ``max_length`` tokens; the last ``validation`` share of the train workflows is held
out for early stopping (best weights kept), as Keras' ``validation_split`` does. A subclass
supplies the network (:meth:`SequenceBaseline._network`) and names the optimiser.

Everything is seeded and runs on CPU in one thread (small matrices: threads only contend), so a
run is reproducible. The ranking is every call by decreasing probability; a token never seen in
training maps to "unknown".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from em_plugin.errors import ConfigurationError
from em_plugin.evaluation.baselines import _INSTRUCTION, tokens
from provenance.model import Workflow

__all__ = [
    "PAD",
    "SEED",
    "SequenceBaseline",
    "TrainingConfig",
    "UNKNOWN",
    "check_training",
    "one_thread",
    "pad",
]

PAD, UNKNOWN = 0, 1
SEED = 20170612

#: Called after each epoch as ``progress(epoch, max_epochs)``.
EpochProgress = Callable[[int, int], None]


def check_training(config: Any) -> None:
    """Check the training settings every peer config shares.

    Raises:
        ConfigurationError: When one is out of range (the message names it).
    """
    if min(config.batch_size, config.max_length, config.max_epochs, config.patience) < 1:
        raise ConfigurationError("batch size, max length, epochs and patience must be >= 1")
    if not 0.0 < config.validation < 1.0:
        raise ConfigurationError(f"validation must be in (0, 1), got {config.validation}")
    if config.monitor not in ("accuracy", "loss"):
        raise ConfigurationError(f"monitor must be 'accuracy' or 'loss', got {config.monitor!r}")


@dataclass(frozen=True, kw_only=True)
class TrainingConfig:
    """The training settings every learned peer shares; a peer's config adds its network's."""

    batch_size: int = 32
    max_epochs: int = 40
    patience: int = 5
    learning_rate: float = 1e-3
    validation: float = 0.2
    """The share of the train workflows held out for early stopping (the last ones)."""
    max_length: int = 20
    seed: int = SEED
    refit: bool = False
    """Train again on every train workflow for the epoch count early stopping chose."""
    monitor: str = "loss"
    """What early stopping watches on the held-out workflows: ``"loss"`` (cross-entropy, as
    Keras' ``EarlyStopping(monitor="val_loss")``) or ``"accuracy"`` (hit@1)."""

    def __post_init__(self) -> None:
        check_training(self)


class SequenceBaseline:
    """A next-call model trained on the memory workflows (see the module doc).

    Args:
        config: Hyper-parameters: a :class:`TrainingConfig` with the network's own.
    """

    name = "sequence"
    optimiser = "Adam"
    """The ``torch.optim`` class that trains the network, at ``config.learning_rate``."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self._vocab: dict[str, int] = {}
        self._calls: list[str] = []
        self._call_index: dict[str, int] = {}
        self._model: Any = None
        self.progress: EpochProgress | None = None
        """Called after each training epoch (for a progress bar)."""
        self.epochs = 0
        """Epochs trained (including the patience ones)."""

    # -- what a subclass provides --------------------------------------------------------------

    def _network(self, vocabulary: int, calls: int) -> Any:
        """Return a fresh ``torch.nn.Module`` mapping a left-padded batch to call scores."""
        raise NotImplementedError

    def _optimiser(self, model: Any) -> Any:
        """Return the optimiser of a fresh model."""
        import torch

        return getattr(torch.optim, self.optimiser)(
            model.parameters(), lr=self.config.learning_rate
        )

    # -- training ------------------------------------------------------------------------------

    def _samples(self, workflows: Sequence[Workflow]) -> tuple[list[list[int]], list[int]]:
        inputs, targets = [], []
        for workflow in workflows:
            names = tokens(workflow)
            sequence = [self._vocab.get(t, UNKNOWN) for t in names]
            for j in range(1, len(sequence)):
                if names[j] != _INSTRUCTION and names[j] in self._call_index:
                    inputs.append(sequence[max(0, j - self.config.max_length) : j])
                    targets.append(self._call_index[names[j]])
        return inputs, targets

    def fit(self, workflows: Sequence[Workflow]) -> SequenceBaseline:
        """Train on the memory workflows (the train split); return ``self``.

        Raises:
            ConfigurationError: When the workflows hold fewer than two calls to learn from.
        """
        with one_thread():
            return self._fit(workflows)

    def _fit(self, workflows: Sequence[Workflow]) -> SequenceBaseline:
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
            raise ConfigurationError(
                f"the {self.name} baseline needs at least two calls to train on"
            )
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
        model = self._network(len(self._vocab) + 2, len(self._calls))
        optimiser = self._optimiser(model)
        loss_fn = torch.nn.CrossEntropyLoss()
        best, best_state, waited, best_epoch = float("inf"), None, 0, epochs
        for epoch in range(epochs):
            model.train()
            order = torch.randperm(len(ys), generator=generator).tolist()
            for start in range(0, len(order), config.batch_size):
                chosen = order[start : start + config.batch_size]
                batch = pad([xs[i] for i in chosen])
                optimiser.zero_grad()
                loss = loss_fn(model(batch), torch.tensor([ys[i] for i in chosen]))
                loss.backward()
                optimiser.step()
            self.epochs = epoch + 1
            if self.progress is not None:
                self.progress(self.epochs, epochs)
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
                batch = pad(xs[start : start + 256])
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
            raise ConfigurationError(f"{type(self).__name__}.rank() before fit()")
        ids = [self._vocab.get(t, UNKNOWN) for t in context][-self.config.max_length :]
        with one_thread(), torch.no_grad():
            scores = self._model(pad([ids]))[0].numpy()
        order = np.argsort(-scores, kind="stable")
        return [self._calls[i] for i in order]


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block (restored afterwards)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def pad(sequences: Sequence[Sequence[int]]) -> Any:
    """Left-pad to the longest sequence: a prefix's last token is then every row's last column."""
    import torch

    length = max(1, max((len(s) for s in sequences), default=1))
    out = torch.full((len(sequences), length), PAD, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        if sequence:
            out[row, length - len(sequence) :] = torch.tensor(list(sequence), dtype=torch.long)
    return out
