"""AR vs DFlash vs DDTree on the same prompts, in one process (`python -m engine.bench`).

Built to give the same verdict on a busy machine as on a quiet one:

- Decode throughput excludes prefill (the first token comes from the prompt forward), every
  request ignores EOS so output lengths are fixed, and every output is checked against AR
  (lossless).
- Methods are interleaved per prompt and the whole round is repeated (`--repeat`, default
  3), rotating the order, so each method's run sits next to an AR run of the same prompt.
- The verdict is paired: for each prompt and repeat, method tok/s / AR tok/s from those
  neighbouring runs; a prompt's ratio is the median over its repeats; `speedup_vs_ar` is the
  median over prompts, with the interquartile range, the number of prompts outside Tukey's
  fences (1.5 IQR) and `repeat_spread`, how far one prompt's repeated ratios disagree (the
  machine's noise). Slow and fast prompts count alike: nothing is summed across prompts,
  so `decode_tok_s` and step times are medians over prompts too.
- Memory next to speed: the KV cache bytes each request grew to (target + drafter), and on
  CUDA the allocator's peak above the weights during the request.

The commit length is the mean over responses of each response's mean, so every response
counts alike however long it ran.

  __main__.py  the command line and its --json output
  prompts.py   the prompt set (engine/prompts/bench.jsonl by default)
  measure.py   the interleaved, repeated runs and the report they make
  summary.py   per-method statistics: medians, quartiles, paired ratios, memory
  table.py     the human-readable table
  server.py    `python -m engine.bench.server`: the HTTP server's overhead over the decoder
  profile.py   `python -m engine.bench.profile`: where a round goes, per phase and per op
  budgets.py   commit and round time per DDTree budget, and the fastest budget
  peer_vllm.py `--peer vllm`: our DDTree and DFlash against vLLM's DFlash, same pair and CPU
"""
