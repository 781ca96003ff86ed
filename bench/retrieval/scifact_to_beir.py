#!/usr/bin/env python3
"""Rebuilds BEIR's SciFact folder from AllenAI's original corpus (CSV export) and BEIR's
queries and test judgments, for machines that cannot download BEIR's archive.

    python3 scifact_to_beir.py --corpus-csv corpus_train.csv --queries queries.jsonl \
        --qrels test.tsv --out /tmp/beir/scifact

corpus_train.csv: doc_id,title,abstract,structured, the abstract a printed list of
sentences (as in data/scifact.zip of github.com/sumithra-p-v/claimverifier). BEIR's text
is those sentences joined by single spaces. The qrels may lack a header and may carry a
stray TREC "0" column ("1<TAB> 0 31715818<TAB>1", "1012 0 <TAB>9745001<TAB>1"): the
line's first word is the query, its last two the document and the score.
Python 3 standard library only. The data is CC BY-NC 2.0: keep it out of the repository.
"""
import argparse, ast, csv, io, json, os, tokenize


def sentences(printed):
    return [ast.literal_eval(t.string) for t in
            tokenize.generate_tokens(io.StringIO(printed).readline)
            if t.type == tokenize.STRING]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus-csv", required=True)
    ap.add_argument("--queries", required=True, help="BEIR queries.jsonl")
    ap.add_argument("--qrels", required=True, help="BEIR qrels (test.tsv)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "qrels"), exist_ok=True)
    csv.field_size_limit(1 << 30)
    n = 0
    with open(a.corpus_csv, newline="", encoding="utf-8") as f, \
            open(os.path.join(a.out, "corpus.jsonl"), "w", encoding="utf-8") as out:
        for r in csv.DictReader(f):
            text = " ".join(s.strip() for s in sentences(r["abstract"]))
            out.write(json.dumps({"_id": r["doc_id"], "title": r["title"], "text": text,
                                  "metadata": {}}) + "\n")
            n += 1
    with open(a.queries, encoding="utf-8") as f, \
            open(os.path.join(a.out, "queries.jsonl"), "w", encoding="utf-8") as out:
        for line in f:
            if line.strip():
                out.write(line.rstrip("\n") + "\n")
    m = 0
    with open(a.qrels, encoding="utf-8") as f, \
            open(os.path.join(a.out, "qrels", "test.tsv"), "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for line in f:
            parts = line.split()  # BEIR (q, d, s) or TREC-like (q, 0, d, s)
            if len(parts) not in (3, 4) or not parts[-1].lstrip("-").isdigit():
                continue
            out.write(f"{parts[0]}\t{parts[-2]}\t{parts[-1]}\n")
            m += 1
    print(f"{n} documents, {m} judgments -> {a.out}")


if __name__ == "__main__":
    main()
