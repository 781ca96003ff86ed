#!/usr/bin/env python3
"""Retrieval quality of PKB's `search` tool on a BEIR-format collection.

Loads the corpus into a fresh PKB store through the MCP `write` tool, waits for the
background indexer to embed every note, runs each test query through the `search` tool
(limit 10) in each mode, and prints nDCG@10 and recall@10 per mode as a Markdown table.

Python 3 standard library only. See README.md beside this file.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

MAX_TITLE = 120
MAX_BODY = 10_000
MAX_QUERY = 200
PROTOCOL = "2025-11-25"


class McpClient:
    """Newline-delimited JSON-RPC 2.0 over the server's stdin/stdout."""

    def __init__(self, argv, stderr_path):
        self.stderr = open(stderr_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, bufsize=0)
        self.next_id = 1

    def _send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed its output (exit code {self.proc.poll()})")
            line = line.strip()
            if not line:
                continue
            msg = json.loads(line)
            if msg.get("id") == rid and ("result" in msg or "error" in msg):
                return msg
            # anything else (notifications, server requests) is ignored

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def call_tool(self, name, arguments):
        """Returns (structuredContent or None, error text or None)."""
        msg = self.request("tools/call", {"name": name, "arguments": arguments})
        if "error" in msg:
            return None, json.dumps(msg["error"])
        res = msg["result"]
        if res.get("isError"):
            text = " ".join(c.get("text", "") for c in res.get("content", []))
            return None, text or json.dumps(res)
        return res.get("structuredContent"), None

    def cpu_seconds(self):
        """User+system CPU time of the server process (Linux /proc), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def load_qrels(path):
    """BEIR's qrels (query-id, corpus-id, score, tab-separated, header line) or TREC's
    (query-id, iteration, doc-id, relevance, whitespace-separated)."""
    qrels = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                q, d, s = parts
            elif len(parts) == 4:
                q, _, d, s = parts
            else:
                continue
            if not s.lstrip("-").isdigit():
                continue  # header: query-id, corpus-id, score
            qrels.setdefault(q, {})[d] = int(s)
    return qrels


def one_line(s):
    return " ".join(s.split())


def note_title(doc):
    title = one_line(doc.get("title") or "")
    if not title:
        words = one_line(doc.get("text") or "").split(" ")
        title = " ".join(words[:12]) or f"Document {doc['_id']}"
    return title


def fit(title, suffix=""):
    room = MAX_TITLE - len(suffix)
    if len(title) > room:
        title = title[:room].rstrip()
    return title + suffix


def sampled(corpus_path, judged, size):
    """The IDs of `size` documents: every one in `judged`, then the others at an even stride."""
    ids = [doc["_id"] for doc in read_jsonl(corpus_path)]
    others = [i for i in ids if i not in judged]
    room = max(0, size - len(judged & set(ids)))
    stride = max(1, len(others) // room) if room else len(others) + 1
    return judged | set(others[::stride][:room])


def load_corpus(client, corpus_path, log, only=None):
    """Writes every document (of `only`, if given); returns ({note id: doc id},
    [(doc id, note id, title)], stats)."""
    note_to_doc, written = {}, []
    stats = {"docs": 0, "truncated_titles": 0, "renamed": 0, "truncated_bodies": 0,
             "failed": 0, "empty_titles": 0}
    for doc in read_jsonl(corpus_path):
        if only is not None and doc["_id"] not in only:
            continue
        stats["docs"] += 1
        base = note_title(doc)
        if not one_line(doc.get("title") or ""):
            stats["empty_titles"] += 1
        if len(base) > MAX_TITLE:
            stats["truncated_titles"] += 1
        body = doc.get("text") or ""
        if len(body) > MAX_BODY:
            body = body[:MAX_BODY]
            stats["truncated_bodies"] += 1
        n = 1
        while True:
            title = fit(base, "" if n == 1 else f" ({n})")
            out, err = client.call_tool("write", {"title": title, "body": body, "tags": []})
            if out is not None:
                break
            if "exist" in err.lower() and n < 50:
                n += 1
                continue
            log(f"write failed for doc {doc['_id']}: {err[:300]}")
            stats["failed"] += 1
            break
        if out is None:
            continue
        if n > 1:
            stats["renamed"] += 1
        note_to_doc[out["id"]] = doc["_id"]
        written.append((doc["_id"], out["id"], title))
        if stats["docs"] % 1000 == 0:
            log(f"  {stats['docs']} documents written")
    return note_to_doc, written, stats


def search(client, query, mode, limit=10):
    out, err = client.call_tool("search", {"query": query, "limit": limit, "mode": mode})
    if out is None:
        raise RuntimeError(f"search failed ({mode}, {query!r}): {err}")
    return [r["id"] for r in out.get("results", [])]


def wait_for_vectors(client, written, log, poll=15.0, timeout=7200.0, probes=20):
    """Triggers the indexer and waits until probe documents are found by meaning and the
    server's CPU time has stopped growing. Returns seconds waited."""
    t0 = time.time()
    search(client, written[-1][2][:MAX_QUERY], "meaning", 1)  # starts the background indexer
    rng = random.Random(7)
    sample = [written[-1], written[0]] + rng.sample(written, min(probes, len(written)))
    pending = list(dict.fromkeys(sample))
    last_cpu, last_t, quiet = client.cpu_seconds(), time.time(), 0
    while True:
        time.sleep(poll)
        still = []
        for doc_id, note_id, title in pending:
            if note_id not in search(client, title[:MAX_QUERY], "meaning", 10):
                still.append((doc_id, note_id, title))
        pending = still
        cpu, now = client.cpu_seconds(), time.time()
        busy = None if cpu is None or last_cpu is None else (cpu - last_cpu) / (now - last_t)
        last_cpu, last_t = cpu, now
        quiet = quiet + 1 if busy is not None and busy < 0.05 else 0
        waited = time.time() - t0
        log(f"  indexing: {waited:6.0f} s, probes not yet found {len(pending)}/{len(sample)}, "
            f"server CPU {'?' if busy is None else f'{busy:.2f}'} cores")
        if not pending and (quiet >= 2 or busy is None):
            return waited
        if waited > timeout:
            log("  timed out waiting for the indexer; measuring anyway")
            return waited


def ndcg_at_k(ranked, rels, k=10):
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked, rels, k=10):
    relevant = {d for d, r in rels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True, help="path to pkb-server")
    ap.add_argument("--data", required=True,
                    help="BEIR dataset folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    ap.add_argument("--modes", default="words,meaning,hybrid")
    ap.add_argument("--queries", type=int, default=0,
                    help="evaluate only the first N judged queries (0: all)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--db", help="store file (default: a new file under /tmp); "
                    "must not exist unless --reuse")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse --db and its .map.json from an earlier run, skipping the load")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the server (default 10)")
    ap.add_argument("--index-timeout", type=float, default=7200.0)
    ap.add_argument("--run-file", help="also write each mode's top 10 as a TREC run file "
                    "(PATH.<mode>)")
    ap.add_argument("--corpus-sample", type=int, default=0,
                    help="write only N documents: those judged for the queries asked, then "
                    "others at an even stride (0: the whole corpus); for a quick run")
    ap.add_argument("--json", action="store_true",
                    help="print the results as one JSON object instead of a table")
    args = ap.parse_args()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in ("words", "meaning", "hybrid"):
            ap.error(f"unknown mode {m!r}")
    db = args.db or f"/tmp/pkb-beir-{os.path.basename(os.path.normpath(args.data))}-{os.getpid()}.db"
    map_path = db + ".map.json"
    if os.path.exists(db) and not args.reuse:
        ap.error(f"{db} exists: remove it, or pass --reuse")

    queries = {q["_id"]: q["text"] for q in read_jsonl(os.path.join(args.data, "queries.jsonl"))}
    qrels = load_qrels(os.path.join(args.data, "qrels", f"{args.split}.tsv"))
    qids = [q for q in qrels if q in queries]
    missing = len(qrels) - len(qids)
    if args.queries:
        qids = qids[:args.queries]

    argv = ([] if args.nice == 0 else ["nice", "-n", str(args.nice)]) + \
        [args.server, "--db", db, "--no-seed"]
    log(f"server: {' '.join(argv)}")
    client = McpClient(argv, db + ".stderr.log")
    try:
        init = client.request("initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "beir_eval", "version": "1"}})
        if "error" in init:
            raise RuntimeError(f"initialize failed: {init['error']}")
        client.notify("notifications/initialized")

        load_s = None
        if args.reuse and os.path.exists(map_path):
            with open(map_path) as f:
                saved = json.load(f)
            note_to_doc = saved["note_to_doc"]
            written = [tuple(w) for w in saved["written"]]
            stats = saved["stats"]
            log(f"reusing {db}: {len(written)} notes")
        else:
            log("loading the corpus through the write tool ...")
            t0 = time.time()
            corpus_path = os.path.join(args.data, "corpus.jsonl")
            only = None
            if args.corpus_sample:
                judged = {d for q in qids for d in qrels[q]}
                only = sampled(corpus_path, judged, args.corpus_sample)
            note_to_doc, written, stats = load_corpus(client, corpus_path, log, only)
            load_s = time.time() - t0
            with open(map_path, "w") as f:
                json.dump({"note_to_doc": note_to_doc, "written": written, "stats": stats}, f)
            log(f"loaded {len(written)} notes in {load_s:.1f} s ({stats})")

        index_s = None
        if any(m in ("meaning", "hybrid") for m in modes):
            log("waiting for the background indexer ...")
            index_s = wait_for_vectors(client, written, log, timeout=args.index_timeout)

        cut = 0
        qtext = {}
        for q in qids:
            t = one_line(queries[q])
            if len(t) > MAX_QUERY:
                t = t[:MAX_QUERY].rstrip()
                cut += 1
            qtext[q] = t

        rows = []
        for mode in modes:
            nd, rc, empty, lat = [], [], 0, []
            run = open(f"{args.run_file}.{mode}", "w") if args.run_file else None
            for q in qids:
                t0 = time.time()
                ids = search(client, qtext[q], mode, 10)
                lat.append(time.time() - t0)
                ranked = [note_to_doc.get(i, "?" + i) for i in ids]
                if not ranked:
                    empty += 1
                nd.append(ndcg_at_k(ranked, qrels[q]))
                rc.append(recall_at_k(ranked, qrels[q]))
                if run:
                    for r, d in enumerate(ranked):
                        run.write(f"{q} Q0 {d} {r + 1} {10 - r} pkb-{mode}\n")
            if run:
                run.close()
            lat.sort()
            rows.append((mode, sum(nd) / len(nd), sum(rc) / len(rc), empty,
                         1000 * lat[len(lat) // 2]))
            log(f"  {mode}: done")
    finally:
        client.close()

    name = os.path.basename(os.path.normpath(args.data))
    if args.json:
        print(json.dumps({
            "collection": name, "queries": len(qids), "documents": len(written),
            "vectors_ready_s": index_s,
            "modes": {mode: {"ndcg_at_10": n, "recall_at_10": r, "empty": e, "p50_ms": p50}
                      for mode, n, r, e, p50 in rows}}))
        return
    print(f"\n### {name}: {len(qids)} {args.split} queries, {len(written)} documents\n")
    print("| mode | nDCG@10 | recall@10 | queries with no result | search p50 (ms) |")
    print("|---|---|---|---|---|")
    for mode, n, r, e, p50 in rows:
        print(f"| {mode} | {n:.3f} | {r:.3f} | {e} | {p50:.1f} |")
    print()
    print(f"- load: {len(written)} notes through `write` in "
          + (f"{load_s:.1f} s" if load_s is not None else "(reused store)")
          + f"; titles cut to {MAX_TITLE} chars: {stats['truncated_titles']}, "
            f"renamed for a repeated title: {stats['renamed']}, empty titles: "
            f"{stats['empty_titles']}, bodies cut to {MAX_BODY}: {stats['truncated_bodies']}, "
            f"failed writes: {stats['failed']}")
    if index_s is not None:
        print(f"- vectors ready {index_s:.0f} s after the first search by meaning")
    print(f"- queries cut to {MAX_QUERY} chars: {cut}; judged queries missing from "
          f"queries.jsonl: {missing}")


if __name__ == "__main__":
    main()
