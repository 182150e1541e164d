/** The feedback book's arithmetic: tightening on "wrong", slow loosening, bounds, isolation (src/cache/feedback.ts). */
import { describe, expect, test } from "bun:test";
import { FeedbackBook, MAX_POINT, RecentRequests, STEP_DOWN, STEP_UP } from "../../src/cache/feedback";

const hit = (book: FeedbackBook, tenantId: string, id: string, entryId = "e1", query = "q") => book.remember(id, { tenantId, hit: true, tier: "semantic", entryId, query });

describe("FeedbackBook", () => {
  test("wrong raises the point at once; it comes back only after 1 / maxWrongHitRate hits without a wrong", () => {
    const book = new FeedbackBook(0.01);
    hit(book, "t", "r1");
    book.judge(book.lookup("t", "r1")!, "wrong", 0.9);
    expect(book.point("t", 0.9)).toBeCloseTo(0.9 + STEP_UP, 9);
    for (let i = 0; i < 99; i++) hit(book, "t", `h${i}`);
    expect(book.point("t", 0.9)).toBeCloseTo(0.9 + STEP_UP, 9);
    hit(book, "t", "h99");
    expect(book.point("t", 0.9)).toBeCloseTo(0.9 + STEP_UP - STEP_DOWN, 9);
    // all the way back after enough hits, never below the configured point
    for (let i = 0; i < 2000; i++) hit(book, "t", `x${i}`);
    expect(book.point("t", 0.9)).toBe(0.9);
  });

  test("a wrong within budget (many hits served) does not tighten; the point is capped", () => {
    const book = new FeedbackBook(0.01);
    hit(book, "t", "first");
    book.judge(book.lookup("t", "first")!, "right", 0.9);
    for (let i = 0; i < 500; i++) hit(book, "t", `h${i}`);
    hit(book, "t", "w");
    book.judge(book.lookup("t", "w")!, "wrong", 0.9);
    expect(book.point("t", 0.9)).toBe(0.9);
    const strict = new FeedbackBook(0.01);
    for (let i = 0; i < 200; i++) {
      hit(strict, "s", `r${i}`);
      strict.judge(strict.lookup("s", `r${i}`)!, "wrong", 0.9);
    }
    expect(strict.point("s", 0.9)).toBeCloseTo(MAX_POINT, 9);
  });

  test("negatives block only that entry for that question (or a near-identical one), in that tenant", () => {
    const book = new FeedbackBook(0.01);
    const v = new Float32Array([1, 0, 0]);
    book.remember("r", { tenantId: "t", hit: true, tier: "semantic", entryId: "e1", query: "Is A bigger than B?", queryVec: v });
    book.judge(book.lookup("t", "r")!, "wrong", 0.9);
    expect(book.blocked("t", "e1", "is a bigger than b", undefined)).toBe(true);
    expect(book.blocked("t", "e1", "something else", new Float32Array([0.99, 0.141, 0]))).toBe(true);
    expect(book.blocked("t", "e1", "something else", new Float32Array([0.8, 0.6, 0]))).toBe(false);
    expect(book.blocked("t", "e2", "Is A bigger than B?", v)).toBe(false);
    expect(book.blocked("u", "e1", "Is A bigger than B?", v)).toBe(false);
    expect(book.point("u", 0.9)).toBe(0.9);
    expect(book.lookup("u", "r")).toBeUndefined();
  });
});

describe("RecentRequests (the remembered lookups)", () => {
  test("keeps the newest `max` keys: the oldest inserted goes first, reading a key does not keep it longer", () => {
    const r = new RecentRequests<number>(3);
    for (const [k, v] of [["a", 1], ["b", 2], ["c", 3]] as const) r.set(k, v);
    expect(r.get("a")).toBe(1);
    r.set("d", 4);
    expect(r.get("a")).toBeUndefined();
    expect([r.get("b"), r.get("c"), r.get("d")]).toEqual([2, 3, 4]);
    expect(r.size).toBe(3);
    // a key set again takes the new value and keeps its age
    r.set("b", 20);
    expect(r.get("b")).toBe(20);
    r.set("e", 5);
    expect(r.get("b")).toBeUndefined();
    expect([r.get("c"), r.get("d"), r.get("e")]).toEqual([3, 4, 5]);
    // many more than max: still bounded, the last max kept
    for (let i = 0; i < 1000; i++) r.set(`k${i}`, i);
    expect(r.size).toBe(3);
    expect([r.get("k997"), r.get("k998"), r.get("k999"), r.get("k996")]).toEqual([997, 998, 999, undefined]);
  });
});
