"""The one read-through cache of parsed stored workflows.

Suggestions read the memory workflows they cite (:mod:`em_plugin.suggest.cited`), lifecycle
commands read the workflows they change. Parsing a workflow's graph back costs about 10 ms, and
on a remote store each read is a request, so :class:`WorkflowCache` answers from three levels:
the parsed workflows kept in memory (least recently used first out), the local copies of a
writable memory (:mod:`em_plugin.state.workflow_copies`), then the store. Every write the engine
makes goes through :meth:`WorkflowCache.put_many` / :meth:`WorkflowCache.remove`, which keep the
copies in step with the index and drop the parsed entries, so nothing else caches workflows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence

from em_plugin.state.workflow_copies import WorkflowCopies
from provenance.model import Workflow
from provenance.stores import WorkflowStore

__all__ = ["DEFAULT_SIZE", "WorkflowCache"]

#: Parsed workflows kept; enough for every workflow a ranking cites on the benchmark files.
DEFAULT_SIZE = 4096


class WorkflowCache:
    """Parsed workflows, read through from the local copies and the store.

    Read and write it under the engine's lock.

    Args:
        store: The store.
        copies: The local copies of a writable memory, ``None`` when there are none.
        size: How many parsed workflows to keep in memory.
    """

    def __init__(
        self, store: WorkflowStore, copies: WorkflowCopies | None, *, size: int = DEFAULT_SIZE
    ) -> None:
        self.store = store
        self.copies = copies
        self.size = size
        self._parsed: OrderedDict[tuple[str, str], Workflow] = OrderedDict()

    def get(self, scope: str, workflow_id: str) -> Workflow:
        """Return a stored workflow of a scope.

        Raises:
            WorkflowNotFound: When the scope holds no such workflow.
        """
        key = (scope, workflow_id)
        found = self._parsed.get(key)
        if found is not None:
            self._parsed.move_to_end(key)
            return found
        copied = self.copies.get_many(scope, [workflow_id]) if self.copies is not None else []
        found = copied[0] if copied else self.store.load(workflow_id, scope=scope)
        self._keep([found])
        if self.copies is not None and not copied:
            self.copies.put_many([found])  # copies made before the file existed fill as read
        return found

    def prefetch(self, scope: str, workflow_ids: Sequence[str]) -> None:
        """Read the workflows not held yet, in one read of the copies and one of the store."""
        missing = [i for i in workflow_ids if (scope, i) not in self._parsed]
        if missing and self.copies is not None:
            self._keep(self.copies.get_many(scope, missing))
            missing = [i for i in missing if (scope, i) not in self._parsed]
        if missing:
            loaded = list(self.store.load_many(scope, missing))
            self._keep(loaded)
            if self.copies is not None and loaded:
                self.copies.put_many(loaded)

    def put_many(self, workflows: Sequence[Workflow]) -> None:
        """Record workflows the index now holds (their copies; parsed ones are read again)."""
        self.forget_parsed((w.scope, w.id) for w in workflows)
        if self.copies is not None:
            self.copies.put_many(workflows)

    def remove(self, scope: str, workflow_ids: Sequence[str]) -> None:
        """Drop workflows the index no longer holds."""
        self.forget_parsed((scope, i) for i in workflow_ids)
        if self.copies is not None:
            self.copies.remove(scope, workflow_ids)

    def clear(self, scope: str | None = None) -> None:
        """Drop every workflow, or every workflow of a scope."""
        for key in [k for k in self._parsed if scope is None or k[0] == scope]:
            del self._parsed[key]
        if self.copies is not None:
            self.copies.clear(scope)

    def forget_parsed(self, keys: Iterable[tuple[str, str]] | None = None) -> None:
        """Drop parsed workflows (``(scope, id)``; ``None``: all) that may have changed."""
        if keys is None:
            self._parsed.clear()
        for key in keys or ():
            self._parsed.pop(key, None)

    def copied(self, workflows: Iterable[Workflow]) -> Iterator[Workflow]:
        """Yield the workflows, keeping copies of them in batches as they pass (a rebuild)."""
        batch: list[Workflow] = []
        for workflow in workflows:
            batch.append(workflow)
            yield workflow
            if len(batch) >= 500:
                self.put_many(batch)
                batch = []
        self.put_many(batch)

    def close(self) -> None:
        """Close the copies file."""
        if self.copies is not None:
            self.copies.close()

    def _keep(self, workflows: Iterable[Workflow]) -> None:
        for workflow in workflows:
            self._parsed[(workflow.scope, workflow.id)] = workflow
        while len(self._parsed) > self.size:
            self._parsed.popitem(last=False)
