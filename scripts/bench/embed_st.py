#!/usr/bin/env python3
"""sentence-transformers side of scripts/bench/embed_compare.sh: embeds the same texts, prints sentences/s.

usage: embed_st.py MODEL_DIR TEXTS_JSON BATCH [--sorted] [--repeat N] [--threads N]
Without --sorted the texts are embedded in calls of BATCH texts in file order (each call sorts its own
batch, as encode() does); with --sorted all texts go to one encode() call, which sorts them by length.
"""
import argparse
import json
import time

import torch
from sentence_transformers import SentenceTransformer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("texts_json")
    ap.add_argument("batch", type=int)
    ap.add_argument("--sorted", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    texts = json.load(open(args.texts_json))
    model = SentenceTransformer(args.model_dir, device="cpu")
    model.max_seq_length = 256
    model.encode(texts[: args.batch], batch_size=args.batch)  # warm-up
    best = float("inf")
    best_cpu = 0.0
    for _ in range(args.repeat):
        cpu_start = time.process_time()
        start = time.perf_counter()
        if args.sorted:
            out = model.encode(texts, batch_size=args.batch, normalize_embeddings=True)
            n = len(out)
        else:
            n = 0
            for i in range(0, len(texts), args.batch):
                n += len(model.encode(texts[i : i + args.batch], batch_size=args.batch, normalize_embeddings=True))
        secs = time.perf_counter() - start
        if secs < best:
            best, best_cpu = secs, time.process_time() - cpu_start
        assert n == len(texts)
    print(
        f"sentence-transformers: {len(texts)} texts, batch {args.batch}, torch {torch.__version__} "
        f"with {torch.get_num_threads()} threads{', sorted by length' if args.sorted else ''}: "
        f"{best:.2f} s ({best_cpu:.1f} CPU-s, {len(texts) / best_cpu:.1f} sentences per CPU-s), "
        f"{len(texts) / best:.1f} sentences/s"
    )


if __name__ == "__main__":
    main()
