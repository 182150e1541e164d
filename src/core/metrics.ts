/**
 * Prometheus metrics (prom-client). One registry per running gateway so tests stay isolated.
 * Core owns the registry and the HTTP instruments; each domain creates its own instruments on
 * it (e.g. src/cache/metrics.ts) and /metrics renders the whole registry.
 *
 * Start-up cost (BENCHMARKS.md, cold start): the four classes are loaded from prom-client's own
 * files instead of its index, which would also load the Pushgateway (node:http/https), the
 * cluster aggregator and the default collectors (~3 ms of a ~60 ms cold start); the default
 * process metrics (svc_process_*, ~4 ms to load and register) are registered off the start-up
 * path: at the first render() or 1 s after start, whichever comes first.
 */
import type * as Prom from "prom-client";

// prom-client ships CommonJS; these are the same classes its index re-exports.
const Registry: typeof Prom.Registry = require("prom-client/lib/registry");
const CounterClass: typeof Prom.Counter = require("prom-client/lib/counter");
const HistogramClass: typeof Prom.Histogram = require("prom-client/lib/histogram");
const GaugeClass: typeof Prom.Gauge = require("prom-client/lib/gauge");

export type Counter = Prom.Counter;
export type Histogram = Prom.Histogram;
export type Gauge = Prom.Gauge;

export type MetricValues = Array<{ labels: Record<string, string | number | undefined>; value: number }>;

type Labels = Record<string, string | number>;
const { hashObject } = require("prom-client/lib/util") as { hashObject(labels: Labels, sortedNames?: string[]): string };

/** A counter's series of one label set: `inc` without prom-client's per-call label check and hashing. */
export interface CounterSeries {
  inc(value?: number): void;
}
/** A histogram's series of one label set: `observe` without prom-client's per-call label check and hashing. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface Internals<E> {
  hashMap: Record<string, E>;
  sortedLabelNames: string[];
}

/**
 * The series of `labels` of a counter. prom-client checks and hashes the label object on every
 * inc (~1-2 µs, on every proxied request several times); here that is done once: the first inc goes
 * through prom-client, which creates the series' entry, and later ones add to that entry as
 * prom-client's own inc does. If the metric was reset (the entry replaced), prom-client's inc runs
 * again. Same exposition text (test/core-metrics.test.ts compares it with prom-client's own updates).
 */
export function counterSeries(counter: Counter, labels: Labels): CounterSeries {
  const m = counter as unknown as Internals<{ value: number }>;
  const hash = hashObject(labels, m.sortedLabelNames);
  let entry: { value: number } | undefined;
  return {
    inc(value = 1) {
      if (entry !== undefined && m.hashMap[hash] === entry && value >= 0 && Number.isFinite(value)) {
        entry.value += value;
        return;
      }
      counter.inc(labels, value);
      entry = m.hashMap[hash];
    },
  };
}

/** The series of `labels` of a histogram (see counterSeries). */
export function histogramSeries(histogram: Histogram, labels: Labels): HistogramSeries {
  type Entry = { sum: number; count: number; bucketValues: Record<string, number> };
  const m = histogram as unknown as Internals<Entry> & { upperBounds: number[] };
  const hash = hashObject(labels, m.sortedLabelNames);
  const bounds = m.upperBounds;
  // the bucket's key as prom-client writes it (the bound as a property name)
  const keys = bounds.map((b) => String(b));
  let entry: Entry | undefined;
  return {
    observe(value) {
      if (entry === undefined || m.hashMap[hash] !== entry || !Number.isFinite(value)) {
        histogram.observe(labels, value);
        entry = m.hashMap[hash];
        return;
      }
      entry.sum += value;
      entry.count += 1;
      for (let i = 0; i < bounds.length; i++)
        if (value <= bounds[i]!) {
          entry.bucketValues[keys[i]!]! += 1;
          return;
        }
    },
  };
}

/** Series (or anything built per label set) by a key the caller builds from its label values; bounded: starts over past `max` keys. */
export class SeriesCache<S> {
  private readonly byKey = new Map<string, S>();
  constructor(private readonly max = 4096) {}
  get(key: string, make: () => S): S {
    let s = this.byKey.get(key);
    if (s === undefined) {
      if (this.byKey.size >= this.max) this.byKey.clear();
      s = make();
      this.byKey.set(key, s);
    }
    return s;
  }
}

/**
 * The value kept for the last (a, b, c): per-request series whose labels usually repeat the previous
 * request's are found without building a key (and without a closure per request: `hit`, then `set`).
 */
export class LastOf3<A, B, C, V> {
  private a?: A;
  private b?: B;
  private c?: C;
  private v?: V;
  /** the value set for exactly this triple last, else undefined */
  hit(a: A, b: B, c: C): V | undefined {
    return a === this.a && b === this.b && c === this.c ? this.v : undefined;
  }
  set(a: A, b: B, c: C, v: V): V {
    this.a = a;
    this.b = b;
    this.c = c;
    return (this.v = v);
  }
}

/** Delay before the default process metrics are registered when nothing scraped yet. */
const DEFAULT_METRICS_DELAY_MS = 1000;

/** Label sets of one metric formatted per turn of the event loop (a histogram's: ~20 lines each, ~2-5 ms a turn). */
const RENDER_SLICE = 25;

/** Let timers and I/O run (setImmediate: after pending I/O, unlike a resolved promise). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = this.counter("svc_http_requests_total", "HTTP requests by route and status", ["method", "route", "status"]);
  readonly httpDuration = this.histogram("svc_http_request_duration_seconds", "HTTP request latency by route and status", ["method", "route", "status"]);

  private defaultsPending: ReturnType<typeof setTimeout> | undefined;
  /** the last exposition text (UTF-8) and when its render started */
  private cached: { body: Blob; at: number } | undefined;
  private rendering: Promise<Blob> | undefined;
  /** renders done (tests: concurrent and repeated scrapes share them) */
  renders = 0;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) {
      this.defaultsPending = setTimeout(() => this.startDefaultMetrics(), DEFAULT_METRICS_DELAY_MS);
      this.defaultsPending.unref?.();
    }
  }

  counter(name: string, help: string, labelNames: string[] = []): Counter {
    return new CounterClass({ name, help, labelNames, registers: [this.registry] });
  }
  histogram(name: string, help: string, labelNames: string[] = [], buckets = LATENCY_BUCKETS): Histogram {
    return new HistogramClass({ name, help, labelNames, buckets, registers: [this.registry] });
  }
  /** `read`, when given, sets the gauge at every scrape (a value that lives elsewhere, e.g. a queue length) */
  gauge(name: string, help: string, labelNames: string[] = [], read?: () => number): Gauge {
    return new GaugeClass({
      name,
      help,
      labelNames,
      registers: [this.registry],
      ...(read ? { collect(this: Gauge) { this.set(read()); } } : {}),
    });
  }

  /** Values of a metric by name (empty when no domain registered it), for summaries such as /stats. */
  async values(name: string): Promise<MetricValues> {
    const m = this.registry.getSingleMetric(name);
    return m ? ((await m.get()).values as MetricValues) : [];
  }

  /** Register prom-client's default process metrics (svc_process_*) once. */
  private startDefaultMetrics() {
    if (this.defaultsPending === undefined) return;
    clearTimeout(this.defaultsPending);
    this.defaultsPending = undefined;
    const collectDefaultMetrics: typeof Prom.collectDefaultMetrics = require("prom-client/lib/defaultMetrics");
    collectDefaultMetrics({ register: this.registry, prefix: "svc_process_" });
  }

  /**
   * The exposition text, rendered at most once per `maxAgeMs` and kept encoded: a scrape within the
   * interval costs a Response over a shared Blob, not a render (30-340 ms once the per-route
   * histograms have grown), and scrapes arriving while a render runs share it (maxAgeMs 0: every
   * scrape renders, concurrent ones still share).
   */
  renderCached(maxAgeMs: number, now: () => number = performance.now.bind(performance)): Promise<Blob> {
    const c = this.cached;
    if (c && now() - c.at < maxAgeMs) return Promise.resolve(c.body);
    if (this.rendering) return this.rendering;
    const at = now();
    this.renders++;
    const encoder = new TextEncoder();
    const chunks: Uint8Array[] = [];
    const rendering = this.renderParts((part) => chunks.push(encoder.encode(part))).then(() => {
      const body = new Blob(chunks);
      this.cached = { body, at };
      return body;
    });
    this.rendering = rendering;
    const clear = () => {
      if (this.rendering === rendering) this.rendering = undefined;
    };
    rendering.then(clear, clear);
    return rendering;
  }

  /** The whole exposition text (the same text renderCached serves). */
  async render(): Promise<string> {
    const parts: string[] = [];
    await this.renderParts((p) => parts.push(p));
    return parts.join("");
  }

  /**
   * prom-client's own formatter (Registry.getMetricsAsString), one metric at a time and a large
   * metric RENDER_SLICE label sets at a time, each slice in its own turn of the event loop: the
   * registry's metrics() formats everything in one synchronous stretch (a histogram of 5,000 label
   * sets: 100,000 lines, 0.3-0.6 s), during which no request is served. Same text, in the same order
   * (a slice is a view of the metric over part of its label sets; its HELP/TYPE lines are dropped).
   */
  private async renderParts(emit: (part: string) => void): Promise<void> {
    this.startDefaultMetrics();
    // Registry.getMetricsAsString is what metrics() calls per metric (untyped in prom-client's
    // declarations; test/ops.test.ts compares the whole text with metrics() so an upgrade that
    // changes it fails there)
    const registry = this.registry as unknown as { getMetricsAsString(metric: unknown): Promise<string> };
    const metrics = this.registry.getMetricsAsArray() as unknown as Array<{ hashMap?: Record<string, unknown>; collect?: unknown }>;
    for (let m = 0; m < metrics.length; m++) {
      const metric = metrics[m]!;
      if (m > 0) emit("\n\n");
      const map = metric.hashMap;
      const keys = map && typeof map === "object" && !metric.collect ? Object.keys(map) : [];
      if (keys.length <= RENDER_SLICE) emit(await registry.getMetricsAsString(metric));
      else
        for (let i = 0; i < keys.length; i += RENDER_SLICE) {
          const part: Record<string, unknown> = {};
          for (const k of keys.slice(i, i + RENDER_SLICE)) part[k] = map![k];
          const text = await registry.getMetricsAsString(Object.create(metric, { hashMap: { value: part } }));
          emit(i === 0 ? text : text.slice(text.indexOf("\n", text.indexOf("\n") + 1)));
          await nextTurn();
        }
      await nextTurn();
    }
    emit("\n");
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
