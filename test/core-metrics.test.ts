/**
 * counterSeries / histogramSeries (src/core/metrics.ts): a label set's series updated without
 * prom-client's per-call label work renders exactly as prom-client's own inc/observe would, also
 * after a reset and for values prom-client refuses (an upgrade of prom-client that changes its
 * internals fails here).
 */
import { expect, test } from "bun:test";
import { counterSeries, histogramSeries, LastOf3, Metrics, SeriesCache } from "../src/core/metrics";

/** two metrics of the same shape: one updated by prom-client, one through the series */
function twins() {
  const m = new Metrics({ defaultMetrics: false });
  return {
    m,
    own: { c: m.counter("own_total", "x", ["a", "b"]), h: m.histogram("own_seconds", "x", ["a"]) },
    fast: { c: m.counter("fast_total", "x", ["a", "b"]), h: m.histogram("fast_seconds", "x", ["a"]) },
  };
}

const text = async (m: Metrics, name: string) => (await m.registry.getSingleMetricAsString(name)).replace(new RegExp(name, "g"), "NAME");

test("a counter's and a histogram's series render as prom-client's own updates (every bucket, above the last bound, sums, several label sets)", async () => {
  const { m, own, fast } = twins();
  const values = [0, 0.0001, 0.0005, 0.0007, 0.001, 0.003, 0.2, 1, 7.5, 59, 119, 500, 1e6];
  const sets = [{ a: "x", b: "1" }, { a: "y", b: "2" }];
  const series = sets.map((l) => ({ c: counterSeries(fast.c, l), h: histogramSeries(fast.h, { a: l.a }) }));
  for (let round = 0; round < 3; round++)
    for (const [i, l] of sets.entries())
      for (const v of values) {
        own.c.inc(l, v);
        own.h.observe({ a: l.a }, v);
        series[i]!.c.inc(v);
        series[i]!.h.observe(v);
      }
  own.c.inc(sets[0]!);
  series[0]!.c.inc();
  expect(await text(m, "fast_total")).toBe(await text(m, "own_total"));
  expect(await text(m, "fast_seconds")).toBe(await text(m, "own_seconds"));
  expect((await m.values("fast_total")).find((v) => v.labels.a === "x")!.value).toBe(3 * values.reduce((x, y) => x + y, 0) + 1);
});

test("after a reset the series count again from zero; refused values are refused as prom-client refuses them", async () => {
  const { m, own, fast } = twins();
  const c = counterSeries(fast.c, { a: "x", b: "1" });
  const h = histogramSeries(fast.h, { a: "x" });
  for (let i = 0; i < 5; i++) {
    c.inc(2);
    h.observe(0.01);
  }
  fast.c.reset();
  fast.h.reset();
  c.inc(3);
  h.observe(0.02);
  own.c.inc({ a: "x", b: "1" }, 3);
  own.h.observe({ a: "x" }, 0.02);
  expect(await text(m, "fast_total")).toBe(await text(m, "own_total"));
  expect(await text(m, "fast_seconds")).toBe(await text(m, "own_seconds"));
  expect(() => c.inc(-1)).toThrow();
  expect(() => h.observe(Number.POSITIVE_INFINITY)).toThrow();
  expect(await text(m, "fast_total")).toBe(await text(m, "own_total"));
});

test("SeriesCache builds each key's value once and stays bounded", () => {
  const cache = new SeriesCache<{ k: string }>(3);
  let made = 0;
  const get = (k: string) => cache.get(k, () => (made++, { k }));
  const a = get("a");
  expect(get("a")).toBe(a);
  expect(made).toBe(1);
  for (const k of ["b", "c", "d", "e"]) get(k);
  expect(made).toBe(5);
  expect(get("e").k).toBe("e");
  expect(made).toBe(5);
});

test("LastOf3 answers only for exactly the triple set last", () => {
  const last = new LastOf3<string, number, string | undefined, { n: number }>();
  expect(last.hit("GET", 200, undefined)).toBeUndefined(); // nothing set yet, even for undefined labels
  const a = last.set("GET", 200, "/v1/chat", { n: 1 });
  expect(last.hit("GET", 200, "/v1/chat")).toBe(a);
  expect(last.hit("GET", 404, "/v1/chat")).toBeUndefined();
  expect(last.hit("POST", 200, "/v1/chat")).toBeUndefined();
  expect(last.hit("GET", 200, "/v1/embeddings")).toBeUndefined();
  const b = last.set("GET", 200, undefined, { n: 2 });
  expect(last.hit("GET", 200, undefined)).toBe(b);
  expect(last.hit("GET", 200, "/v1/chat")).toBeUndefined(); // only the last triple is kept
});
