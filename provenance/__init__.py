"""Workflow provenance: the workflow model, Workflow JSON, PROV/RDF mapping, stores and SPARQL.

This layer knows rdflib and nothing about agents.
"""

from __future__ import annotations

from provenance.errors import (
    LimitError,
    MappingError,
    ProvenanceError,
    QueryError,
    StoreError,
    StoreOutcomeUnknown,
    WorkflowFormatError,
    WorkflowNotFound,
)
from provenance.model import CallStep, FailedCall, InstructionStep, Step, Workflow
from provenance.workflow_json import (
    dumps_workflow,
    iter_jsonl,
    loads_workflow,
    read_jsonl,
    workflow_from_json,
    workflow_to_json,
    write_jsonl,
)

__all__ = [
    "CallStep",
    "FailedCall",
    "InstructionStep",
    "LimitError",
    "MappingError",
    "ProvenanceError",
    "QueryError",
    "Step",
    "StoreError",
    "StoreOutcomeUnknown",
    "Workflow",
    "WorkflowFormatError",
    "WorkflowNotFound",
    "dumps_workflow",
    "iter_jsonl",
    "loads_workflow",
    "read_jsonl",
    "workflow_from_json",
    "workflow_to_json",
    "write_jsonl",
]
