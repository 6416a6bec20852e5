"""`specengine serve`: the DDTree engine behind an OpenAI- and SGLang-compatible HTTP API.

FastAPI on uvicorn: the event loop only parses requests, formats responses and streams
SSE; all torch work runs on the single engine thread (worker.py), one request at a time
in arrival order. Endpoints:

  POST /v1/completions, /v1/chat/completions   OpenAI shapes, SSE streaming, usage
  POST /generate                                SGLang native, meta_info always
  POST /tokenize, /detokenize
  GET  /health, /health_generate, /v1/models, /get_server_info (/server_info),
       /get_model_info (/model_info), /metrics

Logs go to stdout in SGLang's formats (logs.py, metrics.py).

Modules, from the command line inwards (shaped like SGLang's srt/entrypoints):

  args.py                 the flags (declared once, as ServeArgs fields) and their checks
  launch.py               load the weights, bind the port, run uvicorn, warm up, shut down
  logs.py                 log format and loading progress lines
  app.py                  the HTTP app: the API-key check, every route
  state.py                ServerState (what every handler reads) and its builder
  generation.py           the request path the three generating endpoints share: submit
                          to the engine thread, await its events, 499/4xx/5xx, SSE framing
  serving_generate.py     SGLang's /generate
  serving_openai.py       what the two OpenAI endpoints share (checks, envelope, usage)
  serving_completions.py  /v1/completions
  serving_chat.py         /v1/chat/completions (reasoning and tool-call streaming)
  request_body.py         body size limit, strict JSON, pydantic validation
  protocol.py             the request bodies (pydantic models)
  checks.py               request checks the endpoints share
  errors.py               the OpenAI error shape; every client mistake is a 4xx sentence
  worker.py               the engine thread: one request at a time, FIFO; JobResult
  detokenizer.py          incremental detokenization, stop strings, held-back suffixes
  chat_parsing.py         chat template, reasoning and tool-call parsers
  metrics.py              Prometheus metrics and the SGLang `Decode batch` log line
"""
