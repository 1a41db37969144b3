"""On-disk form of the step index: a snapshot directory plus an append-only journal.

Layout of an index directory::

    meta.json          format, embedder name and dimension, the snapshot's generation and the
                       number of the next scope file, scope files with their workflow counts,
                       and per scope the store change marker ``(sequence, token)`` reflected
    scope-<i>.json     a scope's name, workflow ids, tool names, instruction texts, the
                       distinct contexts and args of its leaves, and the distinct handoff routes
    scope-<i>.npz      its instruction vectors, leaf codes and counts, context and args ids,
                       the contexts' vectors (the suggestion state's, see scope_memory.py), and
                       per workflow its routes id (absent in older snapshots: routes unknown)
    journal.jsonl      saves and deletes since the snapshot, one JSON object a line
    journal.<g>.jsonl  only after a crash mid-snapshot: the journal a snapshot of generation
                       ``g`` was taking over (replayed first while ``meta.json`` is older)

A scope's files keep their number for as long as the scope is unchanged, so a snapshot writes
only the scopes changed since the last one, under numbers never used before, and then
``meta.json``: its cost follows the changes, not the number of scopes (docs/state.md, "Many
scopes"). The snapshot takes over the journal by renaming it to ``journal.<g>.jsonl`` and
starting an empty one, and commits by replacing ``meta.json`` (written aside, then renamed);
only then are the taken-over journal and the files of rewritten and dropped scopes deleted. A
crash before that rename leaves the old ``meta.json``, whose generation is below ``g``, with
the taken-over journal and the new one to replay; after it, the new snapshot and an empty
journal. The journal is replayed on load; a torn last line (a crash mid-write) is ignored, and
the fingerprint check then reports the index as stale. Snapshots of the earlier layout (a
directory swapped in whole, files numbered from 0 at each snapshot) read as generation 0.

A scope's two files are all it takes to load that scope (:func:`read_scope`): the step index
loads scopes on first use and unloads idle ones (docs/state.md, "Many scopes").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from em_plugin.errors import IndexStaleError
from em_plugin.state.arrays import GrowRows, StringTable
from em_plugin.state.episodes import Episode
from em_plugin.state.scope_index import Embed, ScopeIndex
from provenance.json_text import json_text
from provenance.stores import WorkflowStore

FORMAT = 3  # 2: leaves carry their episode contexts and args; 3: and the contexts' vectors
READABLE = (2, 3)  # a format-2 snapshot is read, its context vectors come from the cache
META = "meta.json"
JOURNAL = "journal.jsonl"
REINDEX_HINT = "run `em-plugin reindex` to rebuild it from the store"
_READ_CHUNK = 1 << 18  # bytes per read of a stored array (as numpy reads: small, reused)


def store_fingerprint(store: WorkflowStore, hidden: Callable[[str], Collection[str]]) -> str:
    """Digest of the store's indexed ``(scope, id)`` pairs, as :func:`fingerprint` computes.

    Args:
        store: The store.
        hidden: Per scope, the ids never indexed (retired workflows, superseded versions).
    """
    return fingerprint(
        (scope, wid)
        for scope in store.scopes()
        for wid in store.ids(scope)
        if wid not in hidden(scope)
    )


def fingerprint(pairs: Iterable[tuple[str, str]]) -> str:
    """Return a digest of a set of ``(scope, workflow id)`` pairs, with their count.

    The store and the index compute it the same way; a difference means the index is stale.
    """
    digest = hashlib.sha256()
    count = 0
    for scope, workflow_id in sorted(pairs):
        digest.update(f"{scope}\x00{workflow_id}\n".encode())
        count += 1
    return f"{count}:{digest.hexdigest()[:32]}"


@dataclass
class ScopeFile:
    """Where a snapshot holds one scope, and what is known of it without reading it.

    Attributes:
        base: The scope's files without their suffix (``DIR/scope-<i>``).
        workflows: Its live workflows (``None``: a snapshot written before counts were).
        ids: Its workflow ids, once read or known (``None``: not yet).
        unloaded: Whether the scope was loaded and unloaded since (its next load is a reload).
    """

    base: Path
    workflows: int | None = None
    ids: tuple[str, ...] | None = None
    unloaded: bool = False

    def known_ids(self) -> tuple[str, ...]:
        """Return the scope's workflow ids, reading them from its file the first time."""
        if self.ids is None:
            doc = json.loads(self.base.with_suffix(".json").read_text(encoding="utf-8"))
            self.ids = tuple(doc["ids"])
            self.workflows = len(self.ids)
        return self.ids


@dataclass
class Layout:
    """What the next snapshot of a directory needs to know of its last one.

    Attributes:
        generation: The last snapshot's generation (0: none, or one of the earlier layout).
        next_file: The number of the next scope file written (numbers are never reused while
            a snapshot refers to them).
        pending: Generations of journals taken over by snapshots that a crash left
            uncommitted: replayed before ``journal.jsonl``, deleted by the next snapshot.
        untidy: Whether a crash may have left files no snapshot refers to (the next snapshot
            then scans the directory for them).
    """

    generation: int = 0
    next_file: int = 0
    pending: tuple[int, ...] = ()
    untidy: bool = False


@dataclass(frozen=True)
class Meta:
    """A snapshot's ``meta.json``: what each scope's files are, without reading them."""

    format: int
    embedder: str
    dimension: int
    files: dict[str, ScopeFile]
    markers: dict[str, tuple[int, str]]
    layout: Layout = field(default_factory=Layout)


def write_snapshot(
    path: Path,
    embedder: str,
    dimension: int,
    scopes: Mapping[str, ScopeIndex],
    markers: dict[str, tuple[int, str]] | None = None,
    *,
    stored: Mapping[str, ScopeFile] | None = None,
    layout: Layout | None = None,
    garbage: Iterable[Path] = (),
) -> tuple[dict[str, ScopeFile], Layout]:
    """Write a snapshot of compacted scopes to ``path`` atomically (an empty journal).

    Only the scopes in ``scopes`` are written; the others keep their files, so a snapshot costs
    what changed plus ``meta.json``.

    Args:
        path: The index directory.
        embedder: The embedder's name.
        dimension: The embedding dimension.
        scopes: The changed scopes' indexes to write.
        markers: Per scope, the store change marker the index reflects.
        stored: Scopes unchanged since they were written (not in ``scopes``): their files are
            kept, or hard-linked (copied where links fail) when they are in another directory.
        layout: The directory's layout as the last snapshot left it (``None``: read from its
            ``meta.json``, whose scopes are then all replaced).
        garbage: Files (without suffix) of ``path`` that the last snapshot referred to and
            this one does not (rewritten or dropped scopes): deleted once it is committed.

    Returns:
        Where the new snapshot holds each scope, and its layout.
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    garbage = list(garbage)
    if layout is None:
        layout, replaced = _current_layout(path)
        garbage += replaced
    stored = {n: f for n, f in (stored or {}).items() if n not in scopes}
    generation = max((layout.generation, *layout.pending)) + 1
    number = layout.next_file
    here: dict[Path, bool] = {}
    written: list[Path] = []
    journal, taken = path / JOURNAL, path / _taken_journal(generation)
    committed = False
    try:
        entries, files = [], {}
        for name in sorted({*scopes, *stored}):
            if name in scopes:
                base = path / f"scope-{number}"
                number += 1
                written.append(base)
                scope = scopes[name]
                _write_scope(base, name, scope)
                ids: tuple[str, ...] | None = tuple(scope.id_slots)
                count = len(scope.id_slots)
                unloaded = False
            else:
                file = stored[name]
                count = file.workflows if file.workflows is not None else len(file.known_ids())
                if _same_dir(here, file.base.parent, path):
                    entries.append({"scope": name, "file": file.base.name, "workflows": count})
                    files[name] = file
                    continue
                base, ids, unloaded = path / f"scope-{number}", file.ids, file.unloaded
                number += 1
                written.append(base)
                for suffix in (".json", ".npz"):
                    _link(file.base.with_suffix(suffix), base.with_suffix(suffix))
            entries.append({"scope": name, "file": base.name, "workflows": count})
            files[name] = ScopeFile(base, count, ids, unloaded)
        meta = {
            "format": FORMAT,
            "embedder": embedder,
            "dimension": dimension,
            "generation": generation,
            "next_file": number,
            "scopes": entries,
            "markers": {name: list(position) for name, position in (markers or {}).items()},
        }
        staged = path / f".{META}.{generation}"
        staged.write_text(json.dumps(meta, separators=(",", ":")), encoding="utf-8")
        # The journal's changes are in this snapshot: it is taken over (kept until the commit,
        # for a crash before it) and an empty one started.
        if journal.exists():
            os.replace(journal, taken)
        journal.touch()
        os.replace(staged, path / META)  # the commit
        committed = True
    except BaseException:
        if not committed:
            _undo(path, written, taken, generation)
        raise
    kept = {file.base for file in files.values()}
    if layout.untidy:
        stray, metas = _leftovers(path, {base.name for base in kept})
        garbage += [path / n for n in stray]
        for name in metas:
            (path / name).unlink(missing_ok=True)
    for base in garbage:
        if base not in kept and _same_dir(here, base.parent, path):
            for suffix in (".json", ".npz"):
                base.with_suffix(suffix).unlink(missing_ok=True)
    # Last: while the taken-over journal is there, a load knows the files may be untidy. The
    # last snapshot's own goes too (a crash after its commit left it).
    for gone in (layout.generation, *layout.pending, generation):
        (path / _taken_journal(gone)).unlink(missing_ok=True)
    return files, Layout(generation, number)


def _leftovers(path: Path, referenced: set[str]) -> tuple[set[str], list[str]]:
    """Return what interrupted snapshots left in ``path``, to delete.

    As the scope files (without suffix) that nothing refers to, and the staged ``meta.json``
    copies.
    """
    stray, staged = set(), []
    for name in os.listdir(path):
        if name.startswith(f".{META}."):
            staged.append(name)
        elif re.fullmatch(r"scope-\d+\.(json|npz)", name):
            stem = name.rsplit(".", 1)[0]
            if stem not in referenced:
                stray.add(stem)
    return stray, staged


def _undo(path: Path, written: list[Path], taken: Path, generation: int) -> None:
    """Leave the directory as the last snapshot did, after a snapshot failed before its commit.

    Best effort: what stays behind is what a crash leaves, which a load handles.
    """
    with contextlib.suppress(OSError):
        (path / f".{META}.{generation}").unlink(missing_ok=True)
        if taken.exists():
            os.replace(taken, path / JOURNAL)
        for base in written:
            for suffix in (".json", ".npz"):
                base.with_suffix(suffix).unlink(missing_ok=True)


def _taken_journal(generation: int) -> str:
    return f"journal.{generation}.jsonl"


def _same_dir(cache: dict[Path, bool], directory: Path, path: Path) -> bool:
    """Whether ``directory`` is ``path`` (resolved once per distinct directory)."""
    if directory not in cache:
        cache[directory] = directory == path or directory.resolve() == path.resolve()
    return cache[directory]


def _current_layout(path: Path) -> tuple[Layout, list[Path]]:
    """Return the layout of an index directory and its scope files (none when it has none)."""
    if not (path / META).exists():
        return _with_pending(path, Layout()), []
    try:
        meta = read_meta(path)
    except IndexStaleError:  # an unreadable snapshot is replaced whole; its files stay
        return _with_pending(path, Layout(next_file=_free_number(path))), []
    return meta.layout, [file.base for file in meta.files.values()]


def _free_number(path: Path) -> int:
    """Return a scope file number above every one in ``path`` (a directory scan)."""
    numbers = [int(n) for n in re.findall(r"scope-(\d+)\.", " ".join(os.listdir(path)))]
    return max(numbers, default=-1) + 1


def _with_pending(path: Path, layout: Layout) -> Layout:
    """Add the journals taken over by snapshots after ``layout``'s that a crash left."""
    pending = []
    generation = layout.generation + 1
    while (path / _taken_journal(generation)).exists():
        pending.append(generation)
        generation += 1
    # A taken-over journal of the snapshot itself: a crash came between its commit and the
    # deletion of the files it replaced.
    untidy = bool(pending) or (path / _taken_journal(layout.generation)).exists()
    return Layout(layout.generation, layout.next_file, tuple(pending), untidy)


def _file_number(name: str) -> int:
    match = re.fullmatch(r"scope-(\d+)", name)
    return int(match.group(1)) if match else -1


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except FileExistsError:  # left by a snapshot a crash interrupted: not referred to
        target.unlink()
        _link(source, target)
    except OSError:  # a file system without hard links
        shutil.copyfile(source, target)


def _write_scope(base: Path, name: str, scope: ScopeIndex) -> None:
    live = sorted(scope.id_slots.items(), key=lambda item: item[1])
    slots = np.array([slot for _, slot in live], dtype=np.int64)
    lengths = scope.lengths.view()[slots] if len(slots) else np.zeros(0, np.int32)
    codes = [scope.slot_codes(int(s)) for s in slots]
    spans = [scope.span(int(s)) for s in slots]
    doc = {
        "scope": name,
        "ids": [wid for wid, _ in live],
        "tools": scope.tools,
        "texts": scope.texts,
        "contexts": scope.contexts.values,
        "args": scope.args.values,
        "routes": scope.routes.values,
    }
    base.with_suffix(".json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    np.savez(
        base.with_suffix(".npz"),
        vectors=scope.table(),
        lengths=lengths.astype(np.int32),
        codes=np.concatenate(codes) if codes else np.zeros(0, np.int32),
        context_codes=scope.gather(scope.context_codes, spans),
        arg_codes=scope.gather(scope.arg_codes, spans),
        context_vectors=scope.context_vectors.view(),
        route_codes=scope.route_codes.view()[slots] if len(slots) else np.zeros(0, np.int32),
    )


def read_meta(path: Path) -> Meta:
    """Read a snapshot's ``meta.json`` (no scope is read).

    Raises:
        IndexStaleError: When it is missing, unreadable or of another format.
    """
    path = Path(path)
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
        if meta.get("format") not in READABLE:
            raise IndexStaleError(
                f"step index {path} has format {meta.get('format')!r}, expected {FORMAT}; "
                f"{REINDEX_HINT}"
            )
        files = {
            str(entry["scope"]): ScopeFile(
                path / entry["file"],
                None if entry.get("workflows") is None else int(entry["workflows"]),
            )
            for entry in meta["scopes"]
        }
        markers = {
            str(name): (int(position[0]), str(position[1]))
            for name, position in meta.get("markers", {}).items()
        }
        # The earlier layout numbered its files from 0 at each snapshot and had no generation.
        next_file = meta.get("next_file")
        if next_file is None:
            next_file = max((_file_number(f.base.name) for f in files.values()), default=-1) + 1
        layout = _with_pending(path, Layout(int(meta.get("generation", 0)), int(next_file)))
        return Meta(
            int(meta["format"]),
            str(meta["embedder"]),
            int(meta["dimension"]),
            files,
            markers,
            layout,
        )
    except IndexStaleError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexStaleError(f"step index {path} is unreadable ({exc}); {REINDEX_HINT}") from exc


def _read_rows(arrays: Any, key: str) -> GrowRows:
    """Read a stored 2-D float32 array of an ``.npz`` into rows with room to grow.

    ``np.load`` returns a reshaped view of a flat buffer of the exact size: the first context
    a journal replay added to a stored scope then moved every row to a larger buffer (1.5 GB
    at a million contexts), at each cold open. Rows read into a buffer a quarter larger take
    the replay's contexts where they are; the spare rows cost no memory until written.

    Args:
        arrays: The open ``np.load`` archive.
        key: The array's name.

    Returns:
        The rows, as stored.
    """
    with arrays.zip.open(f"{key}.npy") as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        if fortran or len(shape) != 2 or dtype != np.dtype(np.float32):
            return GrowRows.of(np.asarray(arrays[key]))  # not as we write it: numpy's reader
        rows = int(shape[0])
        out = np.empty((rows + rows // 4, int(shape[1])), dtype=np.float32)
        stored = rows * int(shape[1]) * 4
        if stored:  # (a buffer with no rows cannot be cast to bytes)
            with out.data.cast("B") as flat:
                filled = 0
                while filled < stored:
                    got = member.readinto(flat[filled : min(stored, filled + _READ_CHUNK)])
                    if not got:
                        raise ValueError(f"{key} is shorter than its header says")
                    filled += got
    return GrowRows.of(out, size=rows)


def read_scope(name: str, file: ScopeFile, dimension: int) -> ScopeIndex:
    """Read one scope of a snapshot.

    Raises:
        IndexStaleError: When its files are missing, unreadable, or hold another scope.
    """
    try:
        return _read_scope(file.base, dimension, name)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexStaleError(
            f"step index scope file {file.base} is unreadable ({exc}); {REINDEX_HINT}"
        ) from exc


def _read_scope(base: Path, dimension: int, name: str | None = None) -> ScopeIndex:
    doc = json.loads(base.with_suffix(".json").read_text(encoding="utf-8"))
    if name is not None and doc.get("scope") != name:
        raise ValueError(f"{base.name} holds scope {doc.get('scope')!r}, not {name!r}")
    with np.load(base.with_suffix(".npz"), allow_pickle=False) as arrays:
        vectors, lengths, codes = arrays["vectors"], arrays["lengths"], arrays["codes"]
        contexts, args = arrays["context_codes"], arrays["arg_codes"]
        context_vectors = (
            _read_rows(arrays, "context_vectors") if "context_vectors" in arrays else None
        )
        routes = arrays["route_codes"] if "route_codes" in arrays else None
    if vectors.shape != (len(doc["texts"]), dimension) or len(lengths) != len(doc["ids"]):
        raise ValueError(f"{base.name} arrays do not fit its texts and ids")
    scope = ScopeIndex(dimension)
    scope.add_texts(doc["texts"], vectors)
    scope.tools = list(doc["tools"])
    scope.tool_ids = {name: i for i, name in enumerate(scope.tools)}
    fits = int(lengths.sum()) == len(codes) and (
        len(codes) == 0
        or (int(codes.max()) < len(scope.tools) and -int(codes.min()) <= len(scope.texts))
    )
    if not fits:
        raise ValueError(f"{base.name} leaf codes do not fit its tools and texts")
    scope.contexts = StringTable(doc["contexts"])
    if context_vectors is not None:
        if context_vectors.view().shape != (len(scope.contexts), dimension):
            raise ValueError(f"{base.name} context vectors do not fit its contexts")
        scope.context_vectors = context_vectors  # read once, not copied again
    scope.args = StringTable(doc["args"])
    if not (len(contexts) == len(args) == len(codes)):
        raise ValueError(f"{base.name} context and args ids do not fit its leaves")
    scope.routes = StringTable(doc.get("routes", []))
    if routes is not None and (
        len(routes) != len(doc["ids"]) or (len(routes) and int(routes.max()) >= len(scope.routes))
    ):
        raise ValueError(f"{base.name} route ids do not fit its workflows")
    scope.add_bulk(doc["ids"], codes.astype(np.int32), lengths, contexts, args, routes)
    return scope


class Journal:
    """Append-only log of index changes since the last snapshot.

    Args:
        path: The index directory.
    """

    def __init__(self, path: Path) -> None:
        self.file = Path(path) / JOURNAL
        _drop_torn_tail(self.file)
        self._handle = self.file.open("a", encoding="utf-8")
        self.lines = sum(1 for _ in read_journal(path))

    def write(self, entries: Iterable[dict[str, Any]]) -> None:
        """Append entries and flush them to the OS."""
        text = "".join(json_text(e) + "\n" for e in entries)
        if text:
            self._handle.write(text)
            self._handle.flush()
            self.lines += text.count("\n")

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


def _drop_torn_tail(file: Path) -> None:
    """Cut a last line left without its newline by a crash, so appends start a fresh line."""
    if not file.exists():
        return
    with file.open("rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


def read_journal(path: Path, layout: Layout | None = None) -> Iterator[dict[str, Any]]:
    """Yield journal entries; a torn last line is skipped.

    Args:
        path: The index directory.
        layout: Its snapshot's layout: the journals it lists as pending (taken over by a
            snapshot a crash left uncommitted) are read first, in order.
    """
    path = Path(path)
    names = [_taken_journal(g) for g in (layout.pending if layout else ())] + [JOURNAL]
    for name in names:
        file = path / name
        if not file.exists():
            continue
        with file.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(entry, dict):
                    yield entry


def add_context_vectors(scopes: Iterable[ScopeIndex], embed: Embed) -> bool:
    """Give the scopes of a format-2 snapshot (no context vectors) their vectors.

    They come from the embedding cache once (the next snapshot keeps them). Returns whether any
    scope lacked them.
    """
    migrated = False
    for scope in scopes:
        if scope.context_vectors.size != len(scope.contexts):
            migrated = True
            texts = scope.contexts.values
            scope.context_vectors = GrowRows(scope.dimension)
            if texts:
                scope.context_vectors.extend(embed(texts))
    return migrated


def add_entry(scope: str, episode: Episode) -> dict[str, Any]:
    """Return the journal entry of a saved workflow (its episode)."""
    return {
        "op": "add",
        "id": episode.workflow_id,
        "scope": scope,
        "tools": episode.tools,
        "contexts": episode.contexts,
        "args": episode.args,
        "routes": episode.routes,
    }


def entry_episode(entry: dict[str, Any]) -> Episode:
    """Return the episode an ``add`` journal entry holds."""
    return Episode(
        entry["id"],
        tuple(entry["tools"]),
        tuple(entry["contexts"]),
        tuple(entry["args"]),
        entry.get("routes"),
    )
