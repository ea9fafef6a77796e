#!/usr/bin/env python3
"""Python peers of `clawhdf5-eval locomo`: rank_bm25 (BM25Okapi), sentence-transformers all-MiniLM-L6-v2
(cosine) and a min-max 0.5/0.5 hybrid of the two, scored exactly as the Rust harness scores LoCoMo evidence
retrieval (categories 1-4; recall_any@k at turn level and at session level, the turn ranking rolled up to
distinct sessions).

usage: locomo_peers.py DATA_DIR MODEL_DIR [--cache FILE.npz] [--markdown OUT.md] [--threads N]

Documents: one per turn, `Speaker: text [shares a photo: caption]` (the text our harness embeds). Tokens for
BM25: lower-cased runs of letters and digits (rank_bm25 takes pre-tokenised text; no stemming, no stop words).
Evidence ids are normalised as in eval/src/locomo.rs (`D30:05` -> `D30:5`, `D:11:26` -> `D11:26`, entries
holding several ids split); ids naming no turn are ignored, and a question left without evidence is a miss.
Embeddings are cached in `--cache` (keyed by model folder and texts), so a rerun only scores.
"""
import argparse
import glob
import hashlib
import importlib.metadata
import json
import os
import re
import sys
import time

import numpy as np

KS = (1, 5, 10)


def norm_id(raw):
    s = raw.strip()
    if not s or s[0] not in "Dd":
        return None
    parts = [p.strip() for p in s[1:].split(":") if p.strip()]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return f"D{int(parts[0])}:{int(parts[1])}"


def turn_line(t):
    s = f"{t['speaker']}: {t.get('text', '').strip()}"
    cap = t.get("blip_caption")
    if isinstance(cap, str) and cap.strip():
        s += f" [shares a photo: {cap.strip()}]"
    return s


def load(data_dir):
    convs = []
    for path in sorted(glob.glob(os.path.join(data_dir, "*.json"))):
        top = json.load(open(path))
        samples = top if isinstance(top, list) else [top]
        for sample in samples:
            conv = sample.get("conversation", sample)
            turns = []  # (dia_id, session, text)
            nums = sorted(int(k[8:]) for k in conv if re.fullmatch(r"session_\d+", k))
            for n in nums:
                for t in conv[f"session_{n}"]:
                    turns.append((norm_id(t["dia_id"]), f"D{n}", turn_line(t)))
            known = {t[0] for t in turns}
            questions = []
            for q in sample["qa"]:
                ev = []
                for e in q["evidence"]:
                    for part in re.split(r"[;, ]", e):
                        i = norm_id(part) if part.strip() else None
                        if i in known and i not in ev:
                            ev.append(i)
                questions.append((q["question"], int(q["category"]), ev))
            convs.append((turns, questions))
    return convs


def tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def minmax(x):
    lo, hi = float(np.min(x)), float(np.max(x))
    return (x - lo) / (hi - lo) if hi - lo > 1e-12 else np.ones_like(x)


def roll_up(keys, session_of):
    seen, out = set(), []
    for k in keys:
        s = session_of[k]
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def hits(ranked, gold):
    return {k: float(any(r in gold for r in ranked[:k])) for k in KS}


def embed_all(model_dir, texts, cache, threads):
    digest = hashlib.sha256(("\x00".join([os.path.abspath(model_dir)] + texts)).encode()).hexdigest()
    if cache and os.path.exists(cache):
        z = np.load(cache)
        if str(z["digest"]) == digest:
            return z["vecs"], 0.0
    import torch
    from sentence_transformers import SentenceTransformer

    if threads:
        torch.set_num_threads(threads)
    model = SentenceTransformer(model_dir, device="cpu")
    start = time.perf_counter()
    vecs = model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    secs = time.perf_counter() - start
    if cache:
        os.makedirs(os.path.dirname(os.path.abspath(cache)), exist_ok=True)
        np.savez(cache, digest=digest, vecs=vecs)
    return np.asarray(vecs, dtype=np.float32), secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("model_dir")
    ap.add_argument("--cache", default="")
    ap.add_argument("--markdown", default="")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    import rank_bm25
    import sentence_transformers

    convs = load(args.data_dir)
    texts = []
    for turns, questions in convs:
        texts.extend(t[2] for t in turns)
        texts.extend(q[0] for q in questions)
    vecs, secs = embed_all(args.model_dir, texts, args.cache, args.threads)
    modes = ("rank_bm25", "MiniLM dense", "hybrid 0.5/0.5 (min-max)")
    acc = {m: {"turn": {k: 0.0 for k in KS}, "session": {k: 0.0 for k in KS}} for m in modes}
    n = 0
    off = 0
    for turns, questions in convs:
        keys = [t[0] for t in turns]
        session_of = {t[0]: t[1] for t in turns}
        bm25 = rank_bm25.BM25Okapi([tokens(t[2]) for t in turns])
        dv = vecs[off : off + len(turns)]
        off += len(turns)
        qv = vecs[off : off + len(questions)]
        off += len(questions)
        for qi, (question, cat, ev) in enumerate(questions):
            if cat > 4:
                continue
            n += 1
            b = np.asarray(bm25.get_scores(tokens(question)), dtype=np.float64)
            c = dv @ qv[qi]
            scores = {modes[0]: b, modes[1]: c, modes[2]: 0.5 * minmax(b) + 0.5 * minmax(c.astype(np.float64))}
            gold_t = set(ev)
            gold_s = {e.split(":")[0] for e in ev}
            for m, s in scores.items():
                order = sorted(range(len(keys)), key=lambda i: (-s[i], i))
                ranked = [keys[i] for i in order]
                for k, v in hits(ranked, gold_t).items():
                    acc[m]["turn"][k] += v
                for k, v in hits(roll_up(ranked, session_of), gold_s).items():
                    acc[m]["session"][k] += v
    lines = [
        f"Python peers, LoCoMo categories 1-4 (n = {n}); rank_bm25 {importlib.metadata.version('rank_bm25')}"
        f" (BM25Okapi defaults), sentence-transformers {sentence_transformers.__version__} "
        f"(all-MiniLM-L6-v2, {'embeddings from cache' if secs == 0.0 else f'{len(texts)} texts embedded in {secs:.0f} s'}).",
        "",
        "| peer | turn R_any@1 | turn R_any@5 | turn R_any@10 | session R_any@1 | session R_any@5 | session R_any@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in modes:
        cells = [f"{acc[m]['turn'][k] / n:.3f}" for k in KS] + [f"{acc[m]['session'][k] / n:.3f}" for k in KS]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    out = "\n".join(lines)
    print(out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(out + "\n")


if __name__ == "__main__":
    sys.exit(main())
