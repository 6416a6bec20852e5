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

Modules, from the command line inwards:

  args.py            the flags (declared once, as ServeArgs fields) and their checks
  process.py         load the weights, bind the port, run uvicorn, warm up, shut down
  app.py             create_app: middleware, error handlers, the two route sets
  state.py           ServerState, what every handler reads from request.app.state
  openai_routes.py   /v1/models, /v1/completions, /v1/chat/completions
  openai_common.py   what the two completion endpoints share (checks, envelope, usage)
  openai_streams.py  their SSE streams
  native_routes.py   SGLang's /generate, health, info, metrics, tokenizer endpoints
  request_body.py    body size limit, strict JSON, pydantic validation
  protocol.py        the request bodies (pydantic models)
  checks.py          request checks the endpoints share
  errors.py          the OpenAI error shape; every client mistake is a 4xx sentence
  auth.py            the --api-key middleware
  jobs.py            submitting a job to the engine thread and awaiting its events
  worker.py          the engine thread: one request at a time, FIFO
  detokenizer.py     incremental detokenization and stop strings
  chat_parsing.py    chat template, reasoning and tool-call parsers
  text.py            text helpers shared by the streaming parts
  sse.py             server-sent event framing and the streaming response
  metrics.py         Prometheus metrics and the SGLang `Decode batch` log line
  logs.py            log format and loading progress lines
"""
