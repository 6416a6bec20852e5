"""`specengine serve` as a process: load the weights, bind the port, serve until a signal,
shut down cleanly.

Startup order matters to operators: flags are checked before the weights load (a typo
fails in a second), the port is bound before the app exists (a taken port fails before
any request could be accepted), and `READY_MESSAGE` is logged only after a warmup
generation succeeded, so a log watcher's "ready" means the engine can generate.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable

from engine.serve.app import create_app
from engine.serve.args import (
    ServeArgs,
    ServeArgsError,
    check_against_bundle,
    fail,
    parse_serve_args,
)
from engine.serve.logs import READY_MESSAGE, ShardProgress, setup_logging
from engine.serve.state import ServerState, build_state
from engine.serve.worker import GenParams, Job, JobResult, ShuttingDown

logger = logging.getLogger("specengine.server")


def load_engine(args: ServeArgs):
    """Load the weights and build the decoder; exits with one sentence on any problem."""
    import torch

    from engine.checkpoint import WeightsError, load_bundle
    from engine.decode import Decoder

    logger.info(
        "Load weight begin. model=%s, draft=%s, device=%s, dtype=%s",
        args.model_path,
        args.speculative_draft_model_path,
        args.device,
        args.dtype,
    )
    t = time.perf_counter()
    try:
        bundle = load_bundle(
            args.model_path,
            args.speculative_draft_model_path,
            device=args.device,
            dtype=args.dtype,
            load_drafter=args.speculative,
            on_shard=ShardProgress(),
        )
    except WeightsError as e:
        fail(str(e))
    except (OSError, RuntimeError, ValueError) as e:
        fail(f"could not load the weights: {e}")
    n_params = sum(p.numel() for p in bundle.target.parameters())
    logger.info(
        "Load weight end. type=%s, dtype=%s, params=%.2fM, elapsed=%.2f s",
        type(bundle.target).__name__,
        next(bundle.target.parameters()).dtype,
        n_params / 1e6,
        time.perf_counter() - t,
    )
    try:
        check_against_bundle(args, max_context=bundle.max_context, block_size=bundle.block_size)
        decoder = Decoder(
            bundle.target,
            bundle.drafter if args.speculative else None,
            method=args.method,
            budget=args.speculative_ddtree_budget,
            block_size=args.speculative_num_draft_tokens,
            draft_window=args.speculative_draft_window_size,
            max_context=args.context_length,
        )
    except (ServeArgsError, ValueError) as e:
        fail(str(e))
    del torch
    return bundle, decoder


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio only turns Nagle off (TCP_NODELAY) on accepted sockets whose
    # proto says TCP. With Nagle on, a JSON body written after its headers waited for the
    # client's delayed ACK, about 40 ms per response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        fail(f"cannot listen on {host}:{port} ({e.strerror or e})")
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _uvicorn_server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn that aborts the engine on SIGTERM/SIGINT and then exits 0.

        Stock uvicorn re-raises the captured signal after a graceful shutdown, which makes the
        process die *by* SIGTERM (exit 143); a service manager should see a clean exit.
        """

        on_exit: Callable[[], None] = staticmethod(lambda: None)

        def handle_exit(self, sig, frame) -> None:
            if not self.should_exit:
                logger.info(
                    "Received signal %d; aborting the running request and shutting down.", sig
                )
                # Not from the signal handler itself: the handler may interrupt code that holds
                # the worker's lock.
                threading.Thread(target=self.on_exit, name="shutdown", daemon=True).start()
            super().handle_exit(sig, frame)
            self._captured_signals.clear()

    return Server


def _announce_ready(state: ServerState, server, args: ServeArgs) -> None:
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.02)
    host = f"[{args.host}]" if ":" in args.host else args.host
    logger.info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)", host, args.port)
    if not args.skip_server_warmup:
        done = threading.Event()
        results: list[JobResult] = []
        tok = state.tokenizer
        warm_ids = (tok.encode("def main():\n") or [0])[: max(1, state.context_length // 2)]
        n = max(1, min(8, state.context_length - len(warm_ids)))

        def finished(result: JobResult) -> None:
            results.append(result)
            done.set()

        job = Job(
            GenParams(warm_ids, n, ignore_eos=True),
            on_done=finished,
            rid="warmup",
            count_in_metrics=False,
        )
        try:
            state.worker.submit(job)
        except ShuttingDown:
            return
        done.wait(300)
        if not results or (results[0].finish_reason == "abort" and not server.should_exit):
            # Like SGLang: a server that cannot generate must not report ready.
            state.startup_error = (
                f"the warmup generation failed ({results[0].error if results else 'timed out'})"
            )
            logger.error("Warmup failed: %s", state.startup_error)
            server.should_exit = True
            return
    if server.should_exit:
        return
    state.ready = True
    logger.info(READY_MESSAGE)


def serve(args: ServeArgs) -> int:
    import uvicorn

    setup_logging(args.log_level)
    for w in args.warnings:
        logger.warning(w)
    logger.info("server_args=%s", args.public_dict())
    bundle, decoder = load_engine(args)
    sock = bind_socket(args.host, args.port)
    state = build_state(args, bundle, decoder)
    app = create_app(state)
    state.worker.start()
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=True,
        lifespan="off",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=5,
        log_level=args.log_level,
    )
    server = _uvicorn_server_class()(config)
    server.on_exit = lambda: state.worker.shutdown(abort=True)
    threading.Thread(
        target=_announce_ready, args=(state, server, args), name="warmup", daemon=True
    ).start()
    try:
        server.run(sockets=[sock])
    finally:
        state.worker.shutdown(abort=True)
        state.worker.join(5)
    logger.info("Server stopped.")
    if state.startup_error:
        fail(state.startup_error)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_serve_args(argv)
    return serve(args)
