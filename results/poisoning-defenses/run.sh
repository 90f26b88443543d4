#!/usr/bin/env bash
# Poisoning defenses from the anchors on BioASQ x PubMedQA x MiniLM, top-5, PII target, 100 questions, universal and
# camouflaged attackers; each run's JSON summary lands beside this script. Re-running skips finished runs.
set -u
cd "$(dirname "$0")/../.."
OUT=results/poisoning-defenses
for attack in universal camouflaged; do
  for d in perplexity trustrag-cluster; do
    f="$OUT/$attack-$d.json"
    [ -s "$f" ] && continue
    .venv/bin/python -m engine poison --corpus bioasq --queries mirage:pubmedqa --retriever minilm --target pii \
      --attack "$attack" --limit 100 --top-k 5 --detectors mahalanobis --defenses "$d" \
      --data-dir ../shared/corpora --json -q | tail -1 > "$f.tmp" && mv "$f.tmp" "$f"
  done
  f="$OUT/$attack-isolate-aggregate.json"
  [ -s "$f" ] || .venv/bin/python -m engine poison --corpus bioasq --queries mirage:pubmedqa --retriever minilm \
      --target pii --attack "$attack" --limit 30 --top-k 5 --detectors "" --generate --defenses isolate-aggregate \
      --data-dir ../shared/corpora --json -q | tail -1 > "$f.tmp" && mv "$f.tmp" "$f"
  f="$OUT/$attack-generate-none.json"
  [ -s "$f" ] || .venv/bin/python -m engine poison --corpus bioasq --queries mirage:pubmedqa --retriever minilm \
      --target pii --attack "$attack" --limit 30 --top-k 5 --detectors "" --generate \
      --data-dir ../shared/corpora --json -q | tail -1 > "$f.tmp" && mv "$f.tmp" "$f"
done
# the benign-looking extraction attacks against the intent block (same budget, same KB)
[ -s results/benign-extraction/comparison.json ] || .venv/bin/python -m engine compare \
  --preset benign-extraction-vs-intent-block --out results/benign-extraction -q --json > results/benign-extraction.log 2>&1
