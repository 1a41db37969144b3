"""A token ``em-plugin serve`` session of mixed reads and updates from parallel clients; its log.

Starts ``em-plugin serve --token-file`` on 127.0.0.1 over a fresh store, sends REQUESTS requests
from CLIENTS threads (SELECT, ASK, CONSTRUCT and updates of the token's scope, in turn), stops the
server with SIGTERM and counts the Python tracebacks in its log. A clean session prints
``tracebacks 0``; the answers are checked too (every request 2xx).

Usage:
    python benchmarks/serve_soak.py [--requests 1000] [--clients 8] [--log FILE]
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import urllib.parse
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from em_plugin.access import hash_token  # noqa: E402
from provenance.vocab import graph_iri  # noqa: E402

TOKEN = "soak-writer-token-0123456789"
SCOPE = "soak"


def _requests(number: int) -> tuple[str, str, str]:
    """The ``number``-th request: (endpoint, content type, body)."""
    graph = graph_iri(f"w{number % 20}", SCOPE)
    kind = number % 5
    if kind == 0:
        return ("update", "application/sparql-update",
                f"DROP SILENT GRAPH <{graph}> ; INSERT DATA {{ GRAPH <{graph}> {{ "
                f"<urn:x:s{number}> <urn:x:p> {number} }} }}")  # fmt: skip
    if kind == 1:
        return "query", "application/sparql-query", "SELECT ?s ?o WHERE { ?s ?p ?o } LIMIT 50"
    if kind == 2:
        return "query", "application/sparql-query", "ASK { ?s ?p ?o }"
    if kind == 3:
        return "query", "application/sparql-query", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"
    return ("query", "application/x-www-form-urlencoded",
            urllib.parse.urlencode({"query": "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g "
                                    "{ ?s ?p ?o } } GROUP BY ?g"}))  # fmt: skip


def _send(port: int, number: int) -> tuple[int, bytes]:
    endpoint, media, body = _requests(number)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            "POST",
            f"/{endpoint}",
            body=body.encode(),
            headers={"Content-Type": media, "Authorization": f"Bearer {TOKEN}"},
        )
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def main() -> None:
    """Run the session and print requests, failures and tracebacks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--log", type=Path, default=None, help="Keep the server's log here.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens.toml"
        tokens.write_text(
            f'[tokens.w]\nsha256 = "{hash_token(TOKEN)}"\nscopes = ["{SCOPE}"]\n'
            'access = "read-write"\n'
        )
        log_path = args.log or Path(tmp) / "serve.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "em_plugin", "serve", "--store", str(Path(tmp) / "s"),
                 "--port", "0", "--token-file", str(tokens)],
                stdout=subprocess.PIPE, stderr=log, text=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1"},
            )  # fmt: skip
            try:
                assert process.stdout is not None
                url = process.stdout.readline().strip()
                port = urllib.parse.urlsplit(url).port or 0
                with ThreadPoolExecutor(args.clients) as pool:
                    answers = list(pool.map(lambda n: _send(port, n), range(args.requests)))
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
                if process.stdout is not None:
                    process.stdout.close()
        text = log_path.read_text()
    statuses = [status for status, _ in answers]
    for status, body in answers:
        if status // 100 != 2:
            print(f"first failure: {status} {body[:300]!r}")
            break
    failures = Counter(s for s in statuses if s // 100 != 2)
    print(
        f"requests {len(statuses)} clients {args.clients} failures {sum(failures.values())} "
        f"{dict(failures) or ''}"
    )
    print(f"tracebacks {text.count('Traceback (most recent call last)')}")
    print(f"unsendable {text.count('is unsendable')}")


if __name__ == "__main__":
    main()
