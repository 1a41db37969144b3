"""The W3C SPARQL 1.1 Protocol tests against ``em-plugin serve`` on 127.0.0.1, with and without
bearer tokens (the cases: ``w3c_protocol_cases.py``).

``python tests/em_plugin/endpoint/test_w3c_protocol.py`` prints the cases passed in each mode.
"""

from __future__ import annotations

import http.client
import json
import re
import sys
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from em_plugin.access import hash_token  # noqa: E402
from provenance.vocab import graph_iri  # noqa: E402
from tests.em_plugin.endpoint.w3c_protocol_cases import (  # noqa: E402
    CASES,
    GRAPHS,
    NOT_APPLICABLE,
    Case,
    Request,
)
from tests.processes import em_plugin_serve  # noqa: E402

pytestmark = pytest.mark.integration

TOKEN = "protocol-writer-token-0123456789"
SCOPE = "protocol"
# The token's update check (em_plugin/access/sparql.py) refuses GRAPH ?g in an update's WHERE,
# even where using-named-graph-uri bounds ?g to graphs of the token's scope.
_BOOLEAN_TYPES = ("application/sparql-results+json", "application/sparql-results+xml")
_TABULAR_TYPES = (*_BOOLEAN_TYPES, "text/csv", "text/tab-separated-values")
# The Protocol's list for CONSTRUCT and DESCRIBE: RDF/XML, Turtle, N-Triples, RDFa.
_FOAF = "http://xmlns.com/foaf/0.1/"
_FORM = "application/x-www-form-urlencoded"
_RDF_TYPES = ("application/rdf+xml", "text/turtle", "application/n-triples",
              "application/xhtml+xml", "text/html")  # fmt: skip


class Endpoint:
    """A served endpoint and how a case's placeholders are filled in for it."""

    def __init__(self, url: str, token: str | None) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.token = token
        # With a token, every graph of a case is a graph of the token's scope.
        self.graphs = {
            name: str(graph_iri(name, SCOPE)) if token else iri for name, iri in GRAPHS.items()
        }

    def fill(self, text: str) -> str:
        """Replace the graph placeholders in ``text``."""
        return re.sub(r"\{(\w+)\}", lambda m: self.graphs.get(m.group(1), m.group(0)), text)

    def send(self, request: Request, clears: tuple[str, ...] = ()) -> tuple[int, str, bytes]:
        """Send one request of a case; return the status, media type and body."""
        params = [(k, self.fill(v)) for k, v in request.params]
        target = f"/{request.operation}"
        if params:
            target += "?" + urllib.parse.urlencode(params)
        body = None
        if request.body is not None:
            text = self.fill(request.body)
            if self.token and clears:
                text = self._without_all(text, clears, request.content_type == _FORM)
            body = text.encode(request.encoding)
        headers = {}
        if request.content_type:
            headers["Content-Type"] = request.content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request(request.method, target, body=body, headers=headers)
            answer = connection.getresponse()
            media = (answer.getheader("Content-Type") or "").split(";")[0].strip().lower()
            return answer.status, media, answer.read()
        finally:
            connection.close()

    def _without_all(self, text: str, clears: tuple[str, ...], form: bool) -> str:
        """``CLEAR ALL`` / ``DROP ALL`` as a drop of each graph (a token may not clear others')."""
        drops = " ; ".join(f"DROP SILENT GRAPH <{self.graphs[g]}>" for g in clears)
        if form:
            fields = urllib.parse.parse_qsl(text)
            return urllib.parse.urlencode(
                [(k, self._without_all(v, clears, False)) for k, v in fields]
            )
        return re.sub(r"\b(CLEAR|DROP)\s+ALL\b", drops, text)

    def load(self, names: tuple[str, ...]) -> None:
        """Put each graph ``name`` in the store holding ``<name> a foaf:Document``."""
        if not names:
            return
        drops = " ; ".join(f"DROP SILENT GRAPH <{self.graphs[n]}>" for n in names)
        quads = " ".join(
            f"GRAPH <{self.graphs[n]}> {{ <{self.graphs[n]}> a <{_FOAF}Document> }}" for n in names
        )
        update = Request("update", body=f"{drops} ; INSERT DATA {{ {quads} }}",
                         content_type="application/sparql-update")  # fmt: skip
        status, _, body = self.send(update)
        assert status in (200, 204), body


def run_case(endpoint: Endpoint, case: Case) -> list[str]:
    """Run one case; return what went wrong (nothing: it passed)."""
    problems: list[str] = []
    endpoint.load(case.graph_data)
    for number, request in enumerate(case.requests, 1):
        try:
            status, media, body = endpoint.send(request, case.clears)
        except (OSError, http.client.HTTPException) as exc:
            problems.append(f"request {number}: no answer ({exc})")
            break
        if status // 100 not in ((2, 3) if request.status == 2 else (4,)):
            problems.append(f"request {number}: status {status} {body[:200]!r}")
            continue
        problems += _check_answer(number, request, media, body)
    return problems


def _check_answer(number: int, request: Request, media: str, body: bytes) -> list[str]:
    if request.answer is None:
        return []
    allowed = {"boolean": _BOOLEAN_TYPES, "tabular": _TABULAR_TYPES, "RDF": _RDF_TYPES}
    if media not in allowed[request.answer]:
        return [f"request {number}: media type {media!r} for a {request.answer} answer"]
    if request.boolean is None:
        return []
    if media == "application/sparql-results+json":
        value = json.loads(body).get("boolean")
    else:
        found = re.search(rb"<boolean>\s*(true|false)\s*</boolean>", body)
        value = None if found is None else found.group(1) == b"true"
    if value is not request.boolean:
        return [f"request {number}: answered {value}, expected {request.boolean}"]
    return []


@pytest.fixture(scope="module", params=["open", "token"])
def endpoint(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Endpoint]:
    root = tmp_path_factory.mktemp(f"protocol-{request.param}")
    with _serving(root, request.param == "token") as served:
        yield served


@contextmanager
def _serving(root: Path, with_token: bool) -> Iterator[Endpoint]:
    options: list[str] = []
    if with_token:
        tokens = root / "tokens.toml"
        tokens.write_text(
            f'[tokens.writer]\nsha256 = "{hash_token(TOKEN)}"\nscopes = ["{SCOPE}"]\n'
            'access = "read-write"\n'
        )
        options = ["--token-file", str(tokens)]
    with em_plugin_serve(root / "store", *options) as (_, url):
        yield Endpoint(url, TOKEN if with_token else None)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name not in NOT_APPLICABLE], ids=lambda c: c.name
)
def test_w3c_protocol_case(endpoint: Endpoint, case: Case) -> None:
    assert run_case(endpoint, case) == []


def test_the_manifest_has_34_cases_each_run_or_said_not_to_apply() -> None:
    assert len(CASES) == 34 and len({c.name for c in CASES}) == 34
    assert set(NOT_APPLICABLE) <= {c.name for c in CASES}


def main() -> None:
    """Print each mode's passed cases and the failures."""
    import tempfile

    for mode in ("open", "token"):
        with tempfile.TemporaryDirectory() as tmp, _serving(Path(tmp), mode == "token") as ep:
            failed = {c.name: p for c in CASES if (p := run_case(ep, c))}
            print(f"{mode}: {len(CASES) - len(failed)}/{len(CASES)} passed")
            for name, problems in failed.items():
                print(f"  {name}: {'; '.join(problems)}")


if __name__ == "__main__":
    main()
