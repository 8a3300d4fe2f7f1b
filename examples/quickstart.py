"""Fingerprint a small news corpus and list its near-duplicate pairs.

    python examples/quickstart.py [examples/news.jsonl] [--distance K]
"""

import argparse
import json
import pathlib

import numpy as np

import rsimhash


def main() -> None:
    here = pathlib.Path(__file__).parent
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default=here / "news.jsonl", type=pathlib.Path)
    # Short paragraphs have few shingles, so one edited word moves many bits: these
    # ~50-word stories need a larger k than the k = 3 that suits whole web pages.
    parser.add_argument("--distance", "-k", type=int, default=16, help="largest Hamming distance of a pair")
    args = parser.parse_args()

    records = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [r["text"] for r in records]
    fps = rsimhash.fingerprints(texts)  # uint64 array, one per text, on all cores

    print(f"{len(texts)} documents, rsimhash {rsimhash.__version__} (fingerprint spec v{rsimhash.SPEC_VERSION})")
    for record, fp in zip(records, fps):
        print(f"  {record['id']:>3}  {int(fp):016x}  {record['note']}")

    distances = rsimhash.hamming(fps[:, None], fps[None, :])  # all pairs, broadcast
    rows, cols = np.nonzero(np.triu(distances <= args.distance, k=1))
    print(f"\nnear-duplicate pairs within {args.distance} bits:")
    for a, b in zip(rows, cols):
        print(f"  {records[a]['id']:>3} ~ {records[b]['id']:<3} distance {distances[a, b]}: {records[b]['note']}")
    if len(rows) == 0:
        print("  none")


if __name__ == "__main__":
    main()
