/** The password of a postgres:// URL never reaches the output of the CLI (cli-postgres.ts). */
import { expect, test } from "bun:test";
import { redactUrl, scrubber } from "../../src/cli-postgres";

test("redactUrl hides the whole password, also one with a raw @ or percent-encoded characters", () => {
  expect(redactUrl("postgres://svc:s3cret@db.example.com:5432/svc")).toBe("postgres://svc:***@db.example.com:5432/svc");
  expect(redactUrl("postgresql://svc:p@ss@db:5432/svc")).toBe("postgresql://svc:***@db:5432/svc");
  expect(redactUrl("postgres://svc:p%40ss%2Fx@db/svc?sslmode=require")).toBe("postgres://svc:***@db/svc?sslmode=require");
  expect(redactUrl("postgres://db:5432/svc")).toBe("postgres://db:5432/svc");
  expect(redactUrl("postgres://svc@db/svc")).toBe("postgres://svc@db/svc");
});

test("scrubber removes the URL and its password, raw and decoded, from any message", () => {
  const url = "postgres://svc:p%40ss-word@db:5432/svc";
  const scrub = scrubber(url);
  const out = scrub(`could not connect to ${url} as svc with password p@ss-word (p%40ss-word)`);
  expect(out).not.toContain("p@ss-word");
  expect(out).not.toContain("p%40ss-word");
  expect(out).toContain("postgres://svc:***@db:5432/svc");
});
