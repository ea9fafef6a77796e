#!/usr/bin/env python3
"""Real English sentences for the ANN benchmark's data (b).

Reads Debian package descriptions (`Description-en` records of apt's Translation-en index files, printed
with `apt-helper cat-file`; plus the short descriptions of `apt-cache dumpavail`) and the LoCoMo dialogue
turns, splits them into sentences, drops duplicates (case and white space folded) and writes two files
of one sentence per line: the held-out queries and the base set.

The order is deterministic for a given input: sentences are sorted by the SHA-256 of their folded text,
the first --queries become the queries and the next --n the base. Usage:

    ann_real_texts.py --out DIR --n 100000 --queries 500 --locomo DIR DESCRIPTION_FILE...

where each DESCRIPTION_FILE holds deb822 records (`-` reads stdin).
"""

import argparse
import hashlib
import json
import pathlib
import re
import sys

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
WS = re.compile(r"\s+")
BULLET = re.compile(r"^\s*([*+\-o]|\d+[.)])\s+")


def fold(s):
    return WS.sub(" ", s).strip().lower()


def keep(s):
    words = s.split()
    if not 4 <= len(words) <= 60 or len(s) > 320:
        return False
    letters = sum(c.isalpha() for c in s)
    if letters < 0.6 * len(s.replace(" ", "")):
        return False
    if "http://" in s or "https://" in s or "www." in s:
        return False
    return True


def split_sentences(paragraph):
    text = WS.sub(" ", paragraph).strip()
    if not text:
        return []
    return [p.strip() for p in SENTENCE_END.split(text) if p.strip()]


def description_paragraphs(lines):
    """Paragraphs of deb822 Description / Description-en fields (short line + long text)."""
    in_desc = False
    para = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.startswith(" "):
            if para:
                yield " ".join(para)
                para = []
            in_desc = line.startswith("Description:") or line.startswith("Description-en:")
            if in_desc:
                short = line.split(":", 1)[1].strip()
                if short:
                    yield short
            continue
        if not in_desc:
            continue
        body = line[1:]
        if body.strip() == ".":
            if para:
                yield " ".join(para)
                para = []
            continue
        if body.startswith(" ") or BULLET.match(body):
            # verbatim or list line: its own paragraph
            if para:
                yield " ".join(para)
                para = []
            yield BULLET.sub("", body).strip()
            continue
        para.append(body.strip())
    if para:
        yield " ".join(para)


def locomo_turns(folder):
    for f in sorted(pathlib.Path(folder).glob("*.json")):
        doc = json.loads(f.read_text(encoding="utf-8"))
        conv = doc.get("conversation", doc) if isinstance(doc, dict) else {}
        if not isinstance(conv, dict):
            continue
        sessions = []
        for k, v in conv.items():
            if k.startswith("session_") and k[len("session_"):].isdigit() and isinstance(v, list):
                sessions.append((int(k[len("session_"):]), v))
        for _, turns in sorted(sessions, key=lambda x: x[0]):
            for t in turns:
                if isinstance(t, dict) and isinstance(t.get("text"), str):
                    yield t["text"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--locomo")
    ap.add_argument("descriptions", nargs="*")
    a = ap.parse_args()

    seen = {}
    counts = {"debian": 0, "locomo": 0}

    def add(sentence, source):
        s = WS.sub(" ", sentence).strip()
        if not keep(s):
            return
        key = fold(s)
        if key in seen:
            return
        seen[key] = s
        counts[source] += 1

    for path in a.descriptions:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="replace")
        for para in description_paragraphs(fh):
            for s in split_sentences(para):
                add(s, "debian")
        if fh is not sys.stdin:
            fh.close()
    if a.locomo:
        for turn in locomo_turns(a.locomo):
            for s in split_sentences(turn):
                add(s, "locomo")

    ordered = sorted(seen.items(), key=lambda kv: hashlib.sha256(kv[0].encode("utf-8")).digest())
    texts = [s for _, s in ordered]
    if len(texts) < a.queries + 1:
        sys.exit(f"ann_real_texts: only {len(texts)} distinct sentences, need more than {a.queries}")
    queries = texts[: a.queries]
    base = texts[a.queries : a.queries + a.n]
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "queries.txt").write_text("".join(q + "\n" for q in queries), encoding="utf-8")
    (out / "base.txt").write_text("".join(b + "\n" for b in base), encoding="utf-8")
    print(
        f"ann_real_texts: {len(texts)} distinct sentences (debian {counts['debian']}, locomo {counts['locomo']}); "
        f"queries {len(queries)}, base {len(base)}" + (" (fewer than asked)" if len(base) < a.n else ""),
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
