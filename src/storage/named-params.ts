/**
 * `$name` parameters (bun:sqlite's, the house style) → PostgreSQL's positional `$1, $2, …`.
 * A SQL text is translated once and cached (stores use constant texts). The scanner skips string
 * literals ('…', E'…'), quoted identifiers ("…"), comments (-- and /* *\/) and dollar-quoted bodies
 * ($$…$$, $tag$…$tag$), so a `$` inside them is left alone; `::type` casts after a parameter work.
 * A name used twice binds one position. Positional `$1` in the input is refused (one style only).
 */
export interface Positional {
  /** the text with $1…$n */
  text: string;
  /** the parameter name of each position */
  names: string[];
}

const cache = new Map<string, Positional>();
/** texts built at run time (e.g. IN lists) could grow the cache without bound: start over past this */
const MAX_CACHED = 4096;

const isIdStart = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isId = (c: number) => isIdStart(c) || (c >= 48 && c <= 57);

export function toPositional(sql: string): Positional {
  let hit = cache.get(sql);
  if (hit) return hit;
  hit = translate(sql);
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(sql, hit);
  return hit;
}

function translate(sql: string): Positional {
  const names: string[] = [];
  const index = new Map<string, number>();
  let out = "";
  let from = 0;
  let i = 0;
  const n = sql.length;
  const skipTo = (end: string, start: number) => {
    const j = sql.indexOf(end, start);
    if (j < 0) throw new Error(`unterminated ${end === "\n" ? "comment" : end} in SQL: ${sql}`);
    return j + end.length;
  };
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === 39 /* ' */) {
      const escapes = i > 0 && (sql[i - 1] === "E" || sql[i - 1] === "e") && (i < 2 || !isId(sql.charCodeAt(i - 2)));
      i++;
      for (;;) {
        if (i >= n) throw new Error(`unterminated string literal in SQL: ${sql}`);
        if (escapes && sql[i] === "\\") i += 2;
        else if (sql[i] === "'") {
          if (sql[i + 1] === "'") i += 2;
          else {
            i++;
            break;
          }
        } else i++;
      }
    } else if (c === 34 /* " */) i = skipTo('"', i + 1);
    else if (c === 45 /* - */ && sql[i + 1] === "-") {
      const j = sql.indexOf("\n", i);
      i = j < 0 ? n : j + 1;
    } else if (c === 47 /* / */ && sql[i + 1] === "*") i = skipTo("*/", i + 2);
    else if (c === 36 /* $ */) {
      const next = sql.charCodeAt(i + 1);
      if (next === 36) i = skipTo("$$", i + 2);
      else if (next >= 48 && next <= 57) throw new Error(`positional parameter at ${i} in SQL: use $name parameters: ${sql}`);
      else if (isIdStart(next)) {
        let j = i + 2;
        while (j < n && isId(sql.charCodeAt(j))) j++;
        if (sql[j] === "$") {
          // $tag$ … $tag$
          const tag = sql.slice(i, j + 1);
          i = skipTo(tag, j + 1);
        } else {
          const name = sql.slice(i + 1, j);
          let pos = index.get(name);
          if (pos === undefined) {
            names.push(name);
            pos = names.length;
            index.set(name, pos);
          }
          out += sql.slice(from, i) + "$" + pos;
          from = i = j;
        }
      } else i++;
    } else i++;
  }
  return { text: out + sql.slice(from), names };
}
