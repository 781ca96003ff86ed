"""Times `search` in each mode on a store, through the server over stdio: 300 of its notes'
titles, without their numbers, as queries (as pkb-bench's meaning phase asks them).

usage: python3 bench/scale/time_searches.py SERVER STORE [MODES]   (MODES: words,hybrid,meaning)
"""
import os, re, sys, time, sqlite3, random
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "retrieval"))
from beir_eval import McpClient, PROTOCOL
server, db = sys.argv[1], sys.argv[2]
modes = sys.argv[3].split(",") if len(sys.argv) > 3 else ["meaning", "hybrid", "words"]
titles = [r[0] for r in sqlite3.connect(db).execute("select title from notes order by seq")]
random.seed(7)
qs = []
for t in random.sample(titles, 300):
    rest = " ".join(w for w in t.split() if not w.startswith("#") and not re.match(r"c\d+$", w))
    qs.append(rest or t)
c = McpClient([server, "--db", db], db + ".stderr.log")
c.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}})
c.notify("notifications/initialized")
for mode in modes:
    c.call_tool("search", {"query": qs[0], "mode": mode})
    ts = []
    for q in qs:
        t = time.perf_counter(); c.call_tool("search", {"query": q, "mode": mode}); ts.append(((time.perf_counter()-t)*1e3, q))
    ts.sort()
    print(mode, "p50 %.1f p90 %.1f p99 %.1f max %.1f" % (ts[len(ts)//2][0], ts[int(len(ts)*0.9)][0], ts[int(len(ts)*0.99)][0], ts[-1][0]))
    print("  slowest:", [(round(a,1), q) for a, q in ts[-5:]])
c.close()
