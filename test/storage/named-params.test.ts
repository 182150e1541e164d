/** `$name` → `$1…` for PostgreSQL (src/storage/named-params.ts): what is a parameter and what is not. */
import { expect, test } from "bun:test";
import { toPositional } from "../../src/storage/named-params";

test("parameters become positions in order of first use; a repeated name keeps its position", () => {
  expect(toPositional("SELECT * FROM t WHERE a = $a AND b = $b OR a = $a")).toEqual({ text: "SELECT * FROM t WHERE a = $1 AND b = $2 OR a = $1", names: ["a", "b"] });
  expect(toPositional("SELECT $x::bigint, CAST($y AS TEXT), ($z)")).toEqual({ text: "SELECT $1::bigint, CAST($2 AS TEXT), ($3)", names: ["x", "y", "z"] });
  expect(toPositional("SELECT 1")).toEqual({ text: "SELECT 1", names: [] });
});

test("a $ inside literals, quoted identifiers, comments and dollar-quoted bodies is left alone", () => {
  const sql = `SELECT '$a', 'it''s $b', E'\\'$c', "$d", $$ $e $$, $fn$ $f $fn$, $g -- $h
  /* $i */ FROM t`;
  expect(toPositional(sql)).toEqual({ text: sql.replace("$g", "$1"), names: ["g"] });
});

test("positional parameters and unterminated literals are refused", () => {
  expect(() => toPositional("SELECT $1")).toThrow(/positional/);
  expect(() => toPositional("SELECT 'open")).toThrow(/unterminated/);
  expect(() => toPositional("SELECT $$ open")).toThrow(/unterminated/);
});

test("a text is translated once (cached)", () => {
  const sql = `SELECT $cached_${Math.random().toString(36).slice(2)}`;
  expect(toPositional(sql)).toBe(toPositional(sql));
});
