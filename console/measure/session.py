"""A measurement session: one engine service, its facts, prompts of exact length, and
runs recorded sample by sample.

Everything the methods share lives here: the engine's flags and their hash (so runs
with different flags never mix), its context limit (a point above it is refused before
anything is sent), token ids of each text type (tokenized once by the engine), the run
store (a commit per sample, so Ctrl-C or a crash keeps what was taken), the live series
each measured request joins (so the dashboard charts it without anyone relaying it), and
the retry rule for a link that drops mid-request: reconnect with the settings' backoff
for up to `request_retry_s`, say so, take the request again and mark it as retried.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from console.analysis.records import RequestSample, RunInfo, RunStatus, flags_hash
from console.backends import get_adapter
from console.errors import ConsoleError, TransportError
from console.measure.gpu import record_gpus
from console.measure.prompts import PromptLibrary, window
from console.measure.request_measurement import RequestSpec, measure_request
from console.sampling import GREEDY, Sampling
from console.service.engine_client import EngineRequestError
from console.settings import DEFAULT_SETTINGS, ConsoleSettings

if TYPE_CHECKING:
    from console.measure.live import LiveSeries
    from console.service import EngineService
    from console.store import RunStore


class MeasureError(ConsoleError):
    """A measurement that cannot be taken as asked (context too long, engine not ready)."""


@dataclass(frozen=True)
class EngineFacts:
    engine: str
    flags: dict[str, Any]
    flags_hash: str
    context_limit: int | None
    version: str | None
    model: str | None  # the served model name (OpenAI endpoints need it)


@dataclass
class RunRecord:
    """A run in progress or done: its samples in order and where it is stored."""

    info: RunInfo
    run_id: int | None = None
    samples: list[RequestSample] = field(default_factory=list)
    status: RunStatus = "running"
    summary: dict[str, Any] | None = None


Progress = Callable[[str], None]


class MeasureSession:
    """Measures requests on one service. Each sample goes, in this order, to the run
    record and store, to `live` (the service's live series, when one runs: it becomes a
    `request` point there; `live` may be set or replaced later, as series come and go)
    and to `on_sample`."""

    def __init__(
        self,
        service: EngineService,
        *,
        store: RunStore | None = None,
        library: PromptLibrary | None = None,
        live: LiveSeries | None = None,
        on_sample: Callable[[RequestSample], None] | None = None,
        on_note: Progress | None = None,
        settings: ConsoleSettings = DEFAULT_SETTINGS,
    ) -> None:
        self.service = service
        self.store = store
        self.library = library or PromptLibrary.builtin()
        self.live = live
        self.on_sample = on_sample
        self.on_note = on_note
        self.settings = settings
        self._facts: EngineFacts | None = None
        self._ids: dict[str, list[int] | None] = {}
        # what the runs started now are for, where their method does not say it (a
        # baseline is a context sweep by method); empty: from the method
        self.run_kind = ""
        # the sampling every request of this session is decoded at: the host profile's
        # (`--temperature` and the rest already applied to it by the command)
        self.sampling: Sampling = getattr(service.profile, "sampling", GREEDY)
        # reads of each passage in the current run: the k-th read's seed is derived from
        # (passage, k), so two arms that read a passage k times send the same k seeds
        self._reads: dict[str, int] = {}

    @contextlib.contextmanager
    def labelled(self, kind: str) -> Iterator[None]:
        """Runs started inside the block are stored as `kind` (e.g. "baseline")."""
        previous, self.run_kind = self.run_kind, kind
        try:
            yield
        finally:
            self.run_kind = previous

    @property
    def engine(self) -> str:
        return self.service.profile.engine

    def note(self, text: str) -> None:
        if self.on_note is not None:
            self.on_note(text)

    # -- facts ----------------------------------------------------------------------

    async def facts(self, *, refresh: bool = False) -> EngineFacts:
        if self._facts is not None and not refresh:
            return self._facts
        client = await self.service.client()
        if not await client.healthy():
            raise MeasureError(
                f"The engine on {self.service.profile.name} is not ready (no 200 from /health); "
                f"start it with `specconsole start {self.service.profile.name} --wait`."
            )
        flags = dict((await self.service.current_config()).flags)
        info = await client.server_info() or {}
        model = None
        limit = None
        with contextlib.suppress(EngineRequestError):
            models = await client.models()
            if models:
                model = str(models[0].get("id"))
                limit = models[0].get("max_model_len")
        for key in ("context_length", "max_model_len", "max_total_num_tokens"):
            if limit is None and info.get(key):
                limit = info[key]
        version = info.get("version")
        version_path = get_adapter(self.engine).version_path
        if version is None and version_path is not None:
            with contextlib.suppress(EngineRequestError):
                response = await client.request("GET", version_path, timeout=10.0)
                if response.status_code == 200:
                    version = response.json().get("version")
        self._facts = EngineFacts(
            engine=self.engine,
            flags=flags,
            flags_hash=flags_hash(flags),
            context_limit=int(limit) if limit else None,
            version=str(version) if version is not None else None,
            model=model,
        )
        return self._facts

    async def configured_facts(self) -> EngineFacts:
        """The facts a stopped engine still has, for work on stored runs only (a typed
        figure against a stored sweep): the launch config's flags and their hash (what
        `facts` hashes too); the context limit, version and model are the running
        engine's to report, so None."""
        if self._facts is None:
            flags = dict((await self.service.current_config()).flags)
            self._facts = EngineFacts(engine=self.engine, flags=flags,
                                      flags_hash=flags_hash(flags), context_limit=None,
                                      version=None, model=None)  # fmt: skip
        return self._facts

    def check_fits(self, facts: EngineFacts, context: int, max_tokens: int) -> None:
        """Refuse a point above the engine's context length before anything is sent."""
        if facts.context_limit is not None and context + max_tokens > facts.context_limit:
            raise MeasureError(
                f"Context {context} + {max_tokens} output tokens is more than the engine's "
                f"context length {facts.context_limit} on {self.service.profile.name}; "
                "use a smaller context or output."
            )

    # -- prompts --------------------------------------------------------------------

    async def type_ids(self, text_type: str) -> list[int] | None:
        """Token ids of a text type, tokenized by the engine; None without /tokenize."""
        if text_type not in self._ids:
            text = self.library.text(text_type).text
            try:
                self._ids[text_type] = await (await self.service.client()).tokenize(text)
            except EngineRequestError:
                self._ids[text_type] = None
        return self._ids[text_type]

    async def spec(
        self,
        text_type: str,
        context: int,
        max_tokens: int,
        *,
        index: int = 0,
        stream: bool = False,
        ignore_eos: bool = True,
        read: int | None = None,
    ) -> RequestSpec:
        """A request whose prompt is exactly `context` tokens of `text_type`, at the
        session's sampling with the seed of its passage's `read`-th read (None: counted
        in this run, `sampled`)."""
        ids = await self.type_ids(text_type)
        prompt_id = f"{text_type}@{context}#{index}"
        if ids is not None:
            return self.sampled(RequestSpec(
                text_type, prompt_id, max_tokens, ignore_eos, stream,
                input_ids=tuple(window(ids, context, index)),
            ), read)  # fmt: skip
        # No /tokenize: cut the text by characters (about 4 a token) and let the engine's
        # own prompt_tokens count record the real context.
        text = self.library.text(text_type).text
        start = (index * max(1, len(text) // 7)) % len(text)
        body = (text[start:] + text)[: context * 4]
        spec = RequestSpec(text_type, prompt_id, max_tokens, ignore_eos, stream, text=body)
        return self.sampled(spec, read)

    def sampled(self, spec: RequestSpec, read: int | None = None) -> RequestSpec:
        """`spec` at the session's sampling, seeded for the `read`-th read of its passage
        (None: the next read of it in this run)."""
        if read is None:
            read = self._reads.get(spec.prompt_id, 0)
            self._reads[spec.prompt_id] = read + 1
        seed = self.sampling.request_seed(spec.prompt_id, read)
        return replace(spec, sampling=self.sampling, seed=seed)

    # -- requests -------------------------------------------------------------------

    async def measure(
        self,
        spec: RequestSpec,
        record: RunRecord | None = None,
        *,
        warmup: bool = False,
        concurrency: int = 1,
        wave: int | None = None,
    ) -> RequestSample:
        """One request, retried after a link drop; stored and published when taken.

        A `warmup` request is the console's own, not traffic: the live series marks it
        and what the engine reports meanwhile as warm-up, and `on_sample` never sees it.
        `concurrency` and `wave`: sent with others at once (`measure_request`)."""
        live = self.live
        guard = live.warmup() if warmup and live is not None else contextlib.nullcontext()
        with guard:
            sample = await self._measure(spec, record, concurrency=concurrency, wave=wave)
        if self.on_sample is not None and not warmup:
            self.on_sample(sample)
        return sample

    async def _measure(
        self,
        spec: RequestSpec,
        record: RunRecord | None,
        *,
        concurrency: int = 1,
        wave: int | None = None,
    ) -> RequestSample:
        facts = await self.facts()
        loop = asyncio.get_running_loop()
        retry_for = self.settings.request_retry_s
        deadline = loop.time() + retry_for
        delays = self.settings.backoff.delays()
        delay, retried, attempt = next(delays), False, 0
        while True:
            try:
                client = await self.service.client()
                sample = await measure_request(
                    client, self.engine, spec, flags_hash=facts.flags_hash, model=facts.model,
                    concurrency=concurrency, wave=wave,
                )  # fmt: skip
                break
            except TransportError as exc:  # the engine's port or the link to the host
                attempt += 1
                if loop.time() + delay > deadline:
                    raise MeasureError(
                        f"{exc} Gave up after {attempt} attempts over {retry_for:.0f} s; "
                        "the samples already taken are kept."
                    ) from None
                self.note(
                    f"link to {self.service.profile.name} lost; reconnecting (attempt {attempt}, "
                    f"next in {delay:.1f} s); the request in flight will be taken again"
                )
                await asyncio.sleep(delay)
                delay = next(delays)
                retried = True
        if retried:
            sample = replace(sample, retried=True)
            self.note(f"reconnected to {self.service.profile.name}; carrying on")
        if record is not None:
            record.samples.append(sample)
            if self.store is not None and record.run_id is not None:
                await self.store.add_request(record.run_id, sample)
        if self.live is not None:
            self.live.record_request(sample)
        return sample

    @contextlib.asynccontextmanager
    async def run(self, method: str, params: dict[str, Any]) -> AsyncIterator[RunRecord]:
        """Hold the service's action slot and record a run (see `recorded`)."""
        async with self.service.action(f"a {method} run"):
            facts = await self.facts(refresh=True)
            info = RunInfo(
                host=self.service.profile.name,
                engine=self.engine,
                method=method,
                params=params,
                flags=facts.flags,
                engine_version=facts.version,
                kind=self.run_kind,
                sampling=self.sampling.as_dict(),
            )
            async with self.recorded(info) as record:
                yield record

    @contextlib.asynccontextmanager
    async def recorded(self, info: RunInfo) -> AsyncIterator[RunRecord]:
        """Record a run: complete when the block ends, incomplete when it is cancelled or
        interrupted, failed on an error; stored with `record.summary` as the block left
        it. A run that restarts the engine between its parts (breakeven) holds the action
        slot per part instead, so it records without `run`."""
        record = RunRecord(info)
        self._reads.clear()  # each run reads its passages from the first seed on
        if self.store is not None:
            record.run_id = await self.store.start_run(info)
        # GPU telemetry beside the step times (nothing on a host without GPUs).
        gpus = record_gpus(self.service.transport, self.store, record.run_id)
        try:
            yield record
            record.status = "complete"
        except (asyncio.CancelledError, KeyboardInterrupt):
            record.status = "incomplete"
            raise
        except BaseException:
            record.status = "failed" if not record.samples else "incomplete"
            raise
        finally:
            await asyncio.shield(gpus.stop())
            if self.store is not None and record.run_id is not None:
                # Shielded: a Ctrl-C must not stop the run being marked.
                await asyncio.shield(
                    self.store.finish_run(record.run_id, record.status, record.summary)
                )


def engine_uses_native(engine: str) -> bool:
    """Whether the engine's requests are measured without scraping /metrics around them."""
    return not get_adapter(engine).scrapes_around_requests
