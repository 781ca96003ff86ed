"""Grows a store whose every note has its vectors (pkb-bench's meaning store, kept with
`--keep`) to TARGET notes: each note written again under a new title through the server's
`write` tool, then given its original's vectors by SQL (the same model), so that search at that
size can be timed without embedding every copy (docs/search.md, "At 100,000 notes").

usage: python3 bench/scale/grow.py SERVER STORE TARGET
"""
import sys, json, sqlite3, subprocess, time
server, db, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db)
orig = con.execute("select id, title, tags, body from notes order by seq").fetchall()
need = target - len(orig)
p = subprocess.Popen([server, "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(db + ".stderr.log", "ab"), bufsize=0)
def send(m): p.stdin.write((json.dumps(m) + "\n").encode())
send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"g","version":"1"}}})
p.stdout.readline()
send({"jsonrpc":"2.0","method":"notifications/initialized"})
made = {}  # new id -> original id
window, sent, got, k = 64, 0, 0, 0
pending = {}
started = time.time()
while got < need:
    while sent < need and sent - got < window:
        copy, (oid, title, tags, body) = divmod(sent, len(orig))[0] + 1, orig[sent % len(orig)]
        args = {"title": f"c{copy} {title}", "body": body, "tags": json.loads(tags)}
        send({"jsonrpc":"2.0","id":sent+1,"method":"tools/call","params":{"name":"write","arguments":args}})
        pending[sent+1] = oid
        sent += 1
    line = json.loads(p.stdout.readline())
    if "id" not in line: continue
    res = line["result"]
    assert not res.get("isError"), res
    made[res["structuredContent"]["id"]] = pending.pop(line["id"])
    got += 1
p.stdin.close(); p.wait()
print("written", got, "in %.0f s" % (time.time() - started))
con.execute("create temp table m(new text primary key, old text)")
con.executemany("insert into m values (?, ?)", made.items())
model = con.execute("select model from note_vectors limit 1").fetchone()[0]
con.execute("""insert into note_vectors (note, passage, model, vector)
  select nn.seq, v.passage, v.model, v.vector from m join notes nn on nn.id = m.new join notes o on o.id = m.old
  join note_vectors v on v.note = o.seq""")
con.commit()
print(con.execute("select count(*), count(distinct note) from note_vectors").fetchone(), con.execute("select count(*) from notes").fetchone())
