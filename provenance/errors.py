"""Errors raised by the provenance layer.

The tree::

    ProvenanceError
    ├── WorkflowFormatError (ValueError)   malformed Workflow JSON or model values
    │   └── LimitError                     a step count, text or args size over its limit
    ├── WorkflowNotFound (LookupError)     no workflow with that id in the store
    ├── StoreError                         a backend failed (I/O, server, transaction)
    ├── QueryError (ValueError)            bad SPARQL, unknown named query, bad bindings
    │   └── TermError                      a value that cannot be written as one RDF term
    └── MappingError (ValueError)          an RDF graph that does not describe a workflow
"""

from __future__ import annotations


class ProvenanceError(Exception):
    """Root of every error raised by :mod:`provenance`."""


class WorkflowFormatError(ProvenanceError, ValueError):
    """A workflow (JSON or model values) is malformed.

    Attributes:
        file: The file the bad line came from, when known.
        line: The 1-based line number, when known.
        reason: What is wrong, without the location prefix.
    """

    def __init__(self, reason: str, *, file: str | None = None, line: int | None = None) -> None:
        self.reason = reason
        self.file = file
        self.line = line
        where = ""
        if file is not None and line is not None:
            where = f"{file}:{line}: "
        elif line is not None:
            where = f"line {line}: "
        elif file is not None:
            where = f"{file}: "
        super().__init__(f"{where}{reason}")

    def at(self, *, file: str | None = None, line: int | None = None) -> WorkflowFormatError:
        """Return a copy of this error located at ``file:line``."""
        return type(self)(self.reason, file=file or self.file, line=line or self.line)


class LimitError(WorkflowFormatError):
    """A workflow exceeds a size limit (steps, text length, args size)."""


class WorkflowNotFound(ProvenanceError, LookupError):
    """No workflow with the given id exists in the store."""


class StoreError(ProvenanceError):
    """A store backend failed; the original exception is chained."""


class StoreOutcomeUnknown(StoreError):
    """A write failed in a way that leaves unknown whether the store committed it.

    For example a server that died mid-request: the store may or may not hold the write.
    """


class QueryError(ProvenanceError, ValueError):
    """A SPARQL query could not be run: syntax, unknown name, or bad bindings."""


class TermError(QueryError):
    """A value cannot be written as one RDF term (an IRI, language tag or blank node label).

    The stores raise it for a bad binding or graph name; a store write turns it into a
    :class:`StoreError` that chains it.
    """


class MappingError(ProvenanceError, ValueError):
    """An RDF graph does not describe a valid workflow."""
