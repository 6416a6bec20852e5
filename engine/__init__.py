"""The reference DDTree speculative-decoding engine.

The decoding core:

  model.py           Qwen3-architecture target LM
  drafter.py         DFlash block drafter, conditioned on the target's hidden states
  tree.py            DDTree: the best-first draft tree under a node budget
  kvcache.py         per-layer KV cache with append, crop and compact-to-accepted-path
  decode.py          the ar / dflash / ddtree generation loops (Decoder)
  decode_sampled.py  their sampled rounds (temperature > 0)
  sampling.py        sampling settings and the target's sampling distribution
  spec_sampling.py   lossless speculative sampling: the chain and tree accept rules

Around it:

  tokenizer.py       the byte-level tokenizer
  checkpoint.py      load and save target and drafter directories
  tiny.py            tiny random pairs for tests
  cli.py             `specengine serve|train`
  serve/             the HTTP server (`specengine serve`)
  train/             training the bundled pair (`specengine train`)
  bench/             benchmarks: `python -m engine.bench` (AR vs DFlash vs DDTree), and its
                     `.context` (commit and step time vs context), `.vs_transformers` (our AR
                     vs transformers' generate()) and `.server` (HTTP overhead) modules
  weights/           the bundled target and drafter
  prompts/           the benchmark prompt set (written by `python -m engine.train.corpus`)
"""
