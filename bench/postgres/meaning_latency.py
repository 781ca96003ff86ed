#!/usr/bin/env python3
"""Search by meaning on PostgreSQL at 10,000 notes: what a search costs once the vectors exist.

    python3 bench/postgres/meaning_latency.py SERVER URL load     # an empty database: notes, vectors
    python3 bench/postgres/meaning_latency.py SERVER URL measure  # 60 searches, the last 50 timed
    python3 bench/postgres/meaning_latency.py SERVER URL adding   # 100 searches while adding

`load` imports 10,000 notes of about 1,000 characters with SERVER's `import`, then gives each
note 3 vectors of the bundled encoder's identity directly in SQL (the same vector for every note:
only the search's cost is measured, not its ranking; making real vectors takes 15 minutes).
`measure` runs SERVER over stdio on URL and prints p50 and p99 of `search` with mode "meaning".
`adding` removes the vectors of the newest half of the notes, searches once (the rest are read),
then times 100 searches while another connection adds the removed vectors back, one note per
transaction, 30 notes a second (about the bundled encoder's pace on 2 CPUs), as the background
indexer does after an import.
"""
import os
import random
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "retrieval"))
from beir_eval import PROTOCOL, McpClient  # noqa: E402

MODEL = ("pocket-encoder/minilm-l6-q8-g32-a16-v2@sha256:"
         "0d5b6866bac6fb9c63e8d265b081f4b8662b6d06323e50479d6fdad1ccf2d715")
NOTES = 10_000


def load(server, url, folder):
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
             for _ in range(5000)]
    os.makedirs(folder, exist_ok=True)
    for i in range(NOTES):
        body = " ".join(rng.choice(words) for _ in range(160))
        with open(os.path.join(folder, f"note-{i}.md"), "w") as f:
            f.write(f"# Note {i}\n\n{body}\n")
    subprocess.run([server, "--db", url, "--no-seed", "import", folder], check=True,
                   stdout=subprocess.DEVNULL)
    # 1.0000001 in every coordinate: a valid vector of the encoder's 384 coordinates.
    subprocess.run(["psql", url, "-q", "-c", f"""
        INSERT INTO pkb_note_vectors (owner, id, version, passage, model, vector)
        SELECT owner, id, version, p, '{MODEL}', decode(repeat('0100803f', 384), 'hex')
        FROM pkb_notes, generate_series(0, 2) p; ANALYZE"""], check=True)


def connected(server, url):
    client = McpClient([server, "--db", url, "--no-seed"], "/dev/null")
    client.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                  "clientInfo": {"name": "meaning_latency", "version": "1"}})
    client.notify("notifications/initialized")
    return client


def timed_searches(client, count):
    times = []
    for i in range(count):
        start = time.perf_counter()
        found, error = client.call_tool("search", {"query": f"tools for note {i}",
                                                   "mode": "meaning"})
        times.append((time.perf_counter() - start) * 1000)
        assert error is None and found["results"], error
    return times


def report(times, what):
    timed = sorted(times)
    print(f"meaning p50 {statistics.median(timed):.1f} ms, "
          f"p99 {timed[int(len(timed) * 0.99) - 1]:.1f} ms over {len(timed)} searches{what}")


def measure(server, url):
    client = connected(server, url)
    times = timed_searches(client, 60)
    client.close()
    report(times[10:], "")


def adding(server, url):
    newest = f"SELECT owner, id FROM pkb_notes ORDER BY created_order DESC LIMIT {NOTES // 2}"
    subprocess.run(["psql", url, "-q", "-c", f"""
        DELETE FROM pkb_note_vectors WHERE (owner, id) IN ({newest})"""], check=True)
    removed = subprocess.run(["psql", url, "-qAt", "-F", " ", "-c", newest], check=True,
                             capture_output=True, text=True).stdout.split("\n")
    client = connected(server, url)
    timed_searches(client, 1)
    writer = subprocess.Popen(["psql", url, "-q"], stdin=subprocess.PIPE, text=True)
    stop = threading.Event()

    def add_back():
        for line in filter(None, removed):
            if stop.is_set():
                break
            owner, note = line.split(" ", 1)
            writer.stdin.write(f"""
                INSERT INTO pkb_note_vectors (owner, id, version, passage, model, vector)
                SELECT owner, id, version, p, '{MODEL}', decode(repeat('0100803f', 384), 'hex')
                FROM pkb_notes, generate_series(0, 2) p WHERE owner = '{owner}' AND id = '{note}';
            """)
            writer.stdin.flush()
            time.sleep(1 / 30)

    adder = threading.Thread(target=add_back)
    adder.start()
    times = timed_searches(client, 100)
    stop.set()
    adder.join()
    writer.stdin.close()
    writer.wait()
    client.close()
    report(times, " while vectors were added")


if __name__ == "__main__":
    server, url, stage = sys.argv[1:4]
    if stage == "load":
        load(server, url, os.environ.get("TMPDIR", "/tmp") + "/pkb-meaning-latency-notes")
    elif stage == "adding":
        adding(server, url)
    else:
        measure(server, url)
