"""The SPARQL 1.1 Service Description the query endpoint publishes (a GET without a query)."""

from __future__ import annotations

import pyoxigraph as ox

from em_plugin.endpoint.answers import GRAPH, Answer, pick_media_type

__all__ = ["service_description"]

_PREFIXES = {"sd": "http://www.w3.org/ns/sparql-service-description#",
             "rdfs": "http://www.w3.org/2000/01/rdf-schema#"}  # fmt: skip
_DATASET = ("The default graph is the union of the workflow graphs {whose}, each triple once; the "
            "named graphs are every graph {whose}. default-graph-uri and named-graph-uri narrow "
            "it.")  # fmt: skip
_FORMATS = ("SPARQL_Results_JSON", "SPARQL_Results_XML", "SPARQL_Results_CSV",
            "SPARQL_Results_TSV", "Turtle", "N-Triples", "RDF_XML")  # fmt: skip


def service_description(endpoint: str, *, scoped: bool, accept: str | None = None) -> Answer:
    """Describe the service at ``endpoint`` (its query URL) in RDF.

    Args:
        endpoint: The query endpoint's URL, as the client reached it.
        scoped: Whether tokens narrow the dataset to their scopes' graphs.
        accept: The client's ``Accept`` header (Turtle by default).

    Returns:
        The ``sd:Service`` with its endpoint, languages, result formats and default dataset.
    """
    update = endpoint.rsplit("/", 1)[0] + "/update"
    whose = "of the token's scopes" if scoped else "of the store"
    formats = ", ".join(f"<http://www.w3.org/ns/formats/{name}>" for name in _FORMATS)
    turtle = f"""
@prefix sd: <http://www.w3.org/ns/sparql-service-description#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{endpoint}#service> a sd:Service ;
    sd:endpoint <{endpoint}> ;
    rdfs:seeAlso <{update}> ;
    sd:supportedLanguage sd:SPARQL11Query, sd:SPARQL11Update ;
    sd:resultFormat {formats} ;
    sd:defaultDataset <{endpoint}#dataset> .
<{endpoint}#dataset> a sd:Dataset ;
    rdfs:comment "{_DATASET.format(whose=whose)}" ;
    sd:defaultGraph <{endpoint}#default-graph> .
<{endpoint}#default-graph> a sd:Graph ;
    rdfs:comment "The RDF merge of the workflow graphs {whose} (W3C PROV)." .
"""
    media = pick_media_type(accept, GRAPH)
    quads = ox.parse(turtle.encode(), ox.RdfFormat.TURTLE)
    body = ox.serialize(quads, format=ox.RdfFormat.from_media_type(media),
                        prefixes=_PREFIXES
                        if media == "text/turtle" else None)  # fmt: skip
    return Answer(body or b"", media)
