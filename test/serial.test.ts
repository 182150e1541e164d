/**
 * KeyedSerial (src/core/serial.ts): the work of one key runs one at a time in call order, a failure
 * does not stop the queue, other keys do not wait, and nothing is kept once the work has settled.
 * (The memory domain numbers milestones and log entries through it: on PostgreSQL a burst of
 * concurrent stores to one project otherwise exhausts the transaction re-runs — test/pg/memory.)
 */
import { expect, test } from "bun:test";
import { KeyedSerial } from "../src/core/serial";

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

test("one key: one at a time, in call order, also after a failure; the results are each call's own", async () => {
  const s = new KeyedSerial();
  const log: string[] = [];
  let running = 0;
  const job = (name: string, fail = false) => async () => {
    running++;
    expect(running).toBe(1);
    log.push(`start ${name}`);
    await Bun.sleep(1);
    log.push(`end ${name}`);
    running--;
    if (fail) throw new Error(`failed ${name}`);
    return name;
  };
  const results = await Promise.allSettled([s.run("k", job("a")), s.run("k", job("b", true)), s.run("k", job("c"))]);
  expect(log).toEqual(["start a", "end a", "start b", "end b", "start c", "end c"]);
  expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual(["a", "failed b", "c"]);
  expect(s.size).toBe(0);
});

test("another key does not wait for a key whose work is still running", async () => {
  const s = new KeyedSerial();
  const g = gate();
  const slow = s.run("a", async () => {
    await g.opened;
    return "slow";
  });
  expect(await s.run("b", async () => "other")).toBe("other");
  await Bun.sleep(0);
  expect(s.size).toBe(1); // "b" is forgotten, "a" still queued
  g.open();
  expect(await slow).toBe("slow");
  await Bun.sleep(0);
  expect(s.size).toBe(0);
});
