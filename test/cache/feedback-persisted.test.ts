/**
 * The feedback book with its database (src/cache/feedback.ts over feedback-store.ts, bun:sqlite):
 * the negatives' bound holds in memory and in the table across a restart; the slow loosening goes
 * on where it was after a restart (its progress is persisted); hits of a tenant that never gave a
 * verdict write nothing; hits not yet flushed are written at close. (Both backends, replicas and
 * restarts of the whole engine: test/storage-domains/cache-feedback.test.ts.)
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Db } from "../../src/storage/db";
import { openStorage } from "../../src/storage/open";
import type { AsyncStorage } from "../../src/storage/async";
import { CACHE_MIGRATIONS } from "../../src/cache";
import { FeedbackBook, MAX_NEGATIVES, MAX_POINT, STEP_DOWN, STEP_UP } from "../../src/cache/feedback";
import { FeedbackStore } from "../../src/cache/feedback-store";

const CONFIGURED = 0.9;
let db: Db;
let storage: AsyncStorage;
const books: FeedbackBook[] = [];

function open() {
  db = new Db(":memory:", [{ domain: "cache", migrations: CACHE_MIGRATIONS }]);
  storage = openStorage({ path: ":memory:", db });
}
/** a book on the database (a process start) */
function book() {
  const b = new FeedbackBook(0.01, { storage, now: () => 1_700_000_000_000, timers: false });
  books.push(b);
  return b;
}
afterEach(async () => {
  for (const b of books.splice(0)) await b.close();
  db.close();
});

const hit = (b: FeedbackBook, tenantId: string, id: string, entryId = "e1", query = "q") => b.remember(id, { tenantId, caller: "k", hit: true, tier: "semantic", entryId, query });
const wrong = (b: FeedbackBook, tenantId: string, id: string) => b.report(tenantId, id, "wrong", "k", false, CONFIGURED, () => {});

describe("FeedbackBook with its database", () => {
  test(`at most ${MAX_NEGATIVES} negatives per tenant, the oldest dropped, in memory and in the table, after a restart too`, async () => {
    open();
    let b = book();
    await b.load("t");
    for (let i = 0; i < MAX_NEGATIVES + 5; i++) {
      hit(b, "t", `r${i}`, `e${i}`, `question ${i}`);
      await wrong(b, "t", `r${i}`);
    }
    const stored = await new FeedbackStore(storage.tenant("t")).negatives();
    expect(stored.length).toBe(MAX_NEGATIVES);
    expect(stored[0]!.entryId).toBe("e5");
    const check = (x: FeedbackBook) => {
      expect(x.blocked("t", "e4", "question 4", undefined)).toBe(false);
      expect(x.blocked("t", "e5", "question 5", undefined)).toBe(true);
      expect(x.blocked("t", `e${MAX_NEGATIVES + 4}`, `Question ${MAX_NEGATIVES + 4}!`, undefined)).toBe(true);
      expect(x.point("t", CONFIGURED)).toBeCloseTo(MAX_POINT, 9); // capped
    };
    check(b);
    await b.close();
    b = book();
    await b.load("t");
    check(b);
    expect(b.stats("t", CONFIGURED)).toMatchObject({ wrong: MAX_NEGATIVES + 5, right: 0 });
  });

  test("the slow loosening goes on after a restart from where it was (hits since the last step are persisted)", async () => {
    open();
    let b = book();
    await b.load("t");
    hit(b, "t", "w");
    await wrong(b, "t", "w");
    expect(b.point("t", CONFIGURED)).toBeCloseTo(CONFIGURED + STEP_UP, 9);
    for (let i = 0; i < 99; i++) hit(b, "t", `h${i}`);
    await b.flush();
    expect(await new FeedbackStore(storage.tenant("t")).counters()).toEqual({ wrong: 1, right: 0, hits: 99, sinceStep: 99, raise: STEP_UP });
    await b.close();

    b = book();
    await b.load("t");
    expect(b.point("t", CONFIGURED)).toBeCloseTo(CONFIGURED + STEP_UP, 9);
    hit(b, "t", "h99"); // the 100th hit since the step: at once in memory, and in the table at the next flush
    expect(b.point("t", CONFIGURED)).toBeCloseTo(CONFIGURED + STEP_UP - STEP_DOWN, 9);
    await b.flush();
    expect((await new FeedbackStore(storage.tenant("t")).counters())!.raise).toBeCloseTo(STEP_UP - STEP_DOWN, 12);
  });

  test("a read dropped while in flight (a resync, a change announced) is read again: the waiting decision has the tenant's feedback", async () => {
    open();
    const a = book();
    await a.load("t");
    hit(a, "t", "w", "e1", "Is A bigger than B?");
    await wrong(a, "t", "w");
    const b = book();
    const loading = b.load("t");
    b.forgetAll(); // Redis lost: every tenant's memory dropped, the read in flight with it
    const refreshed = b.refresh("t"); // and a change announced meanwhile
    await loading;
    expect(b.loaded("t")).toBe(true);
    expect(b.blocked("t", "e1", "is a bigger than b", undefined)).toBe(true);
    expect(b.point("t", CONFIGURED)).toBeCloseTo(CONFIGURED + STEP_UP, 9);
    await refreshed;
    expect(b.blocked("t", "e1", "is a bigger than b", undefined)).toBe(true);
  });

  test("hits of a tenant that never gave a verdict write no counters; hits not flushed are written at close", async () => {
    open();
    const b = book();
    await b.load("quiet");
    await b.load("t");
    for (let i = 0; i < 50; i++) hit(b, "quiet", `q${i}`);
    hit(b, "t", "w");
    await wrong(b, "t", "w");
    for (let i = 0; i < 10; i++) hit(b, "t", `h${i}`);
    await b.close();
    expect(await new FeedbackStore(storage.tenant("quiet")).counters()).toBeUndefined();
    expect(await new FeedbackStore(storage.tenant("t")).counters()).toMatchObject({ wrong: 1, hits: 10 });
    // every hit is remembered in the database (a verdict may come to another replica), the tenant's own only
    expect(await new FeedbackStore(storage.tenant("quiet")).hit("q49")).toMatchObject({ entryId: "e1", verdict: null, caller: "k" });
    expect(await new FeedbackStore(storage.tenant("t")).hit("q49")).toBeUndefined();
    expect((await new FeedbackStore(storage.tenant("t")).hit("w"))!.verdict).toBe("wrong");
  });
});
