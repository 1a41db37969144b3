"""Workflow provenance: the workflow model, Workflow JSON, PROV/RDF mapping, stores and SPARQL.

This layer knows rdflib and nothing about agents. ``__all__`` holds what a user of the layer
needs: the workflow model, reading and writing Workflow JSON (a file or one line), and the errors
worth catching. The rest stays in its module (``provenance.errors``, ``provenance.workflow_json``,
``provenance.mapping``, ``provenance.stores``); the names dropped from here in this release still
import, with a DeprecationWarning (docs/api.md).
"""

from __future__ import annotations

import typing

from provenance._deprecation import lazy_names as _lazy_names

if typing.TYPE_CHECKING:
    from provenance.errors import (
        ProvenanceError,
        QueryError,
        StoreError,
        WorkflowFormatError,
        WorkflowNotFound,
    )
    from provenance.model import CallStep, FailedCall, InstructionStep, Step, Workflow
    from provenance.workflow_json import (
        dumps_workflow,
        iter_jsonl,
        loads_workflow,
        read_jsonl,
        write_jsonl,
    )

__all__ = [
    "CallStep",
    "FailedCall",
    "InstructionStep",
    "ProvenanceError",
    "QueryError",
    "Step",
    "StoreError",
    "Workflow",
    "WorkflowFormatError",
    "WorkflowNotFound",
    "dumps_workflow",
    "iter_jsonl",
    "loads_workflow",
    "read_jsonl",
    "write_jsonl",
]

# Imported on first use, as in em_plugin: importing any provenance module (em_plugin's
# deprecation helpers live in provenance._deprecation) then loads no more than it needs.
_WHERE = {
    **dict.fromkeys(
        ["ProvenanceError", "QueryError", "StoreError", "WorkflowFormatError", "WorkflowNotFound"],
        "provenance.errors",
    ),
    **dict.fromkeys(
        ["CallStep", "FailedCall", "InstructionStep", "Step", "Workflow"], "provenance.model"
    ),
    **dict.fromkeys(
        ["dumps_workflow", "iter_jsonl", "loads_workflow", "read_jsonl", "write_jsonl"],
        "provenance.workflow_json",
    ),
}

# The names of _WHERE import on first use. The moved ones left __all__ in this release and still
# import from here, with a DeprecationWarning:
# Two near-synonyms (loads_workflow/dumps_workflow are the one-line form of the same conversion,
# with the size and depth checks) and errors that subclass a kept one or belong to one module
# (MappingError: provenance.mapping's graph_to_workflow).
_load = _lazy_names(
    globals(),
    _WHERE,
    package="provenance",
    moved={
        "LimitError": "provenance.errors",
        "MappingError": "provenance.errors",
        "StoreOutcomeUnknown": "provenance.errors",
        "workflow_from_json": "provenance.workflow_json",
        "workflow_to_json": "provenance.workflow_json",
    },
)


def __getattr__(name: str) -> typing.Any:
    return _load(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
