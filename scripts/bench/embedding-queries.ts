/**
 * The synthetic queries the embedding benchmarks time (embedding-kernels.ts, quality-embedding-latency.ts):
 * n words drawn from one fixed sentence plus a counter, so every call is a fresh text (no cache hit)
 * while the length stays exactly n words.
 */
const words =
  "how do i convert a pdf file into word document without losing the format of tables images and fonts on windows mac or linux computers using free software tools online today".split(" ");
let salt = 0;
export function query(n: number): string {
  salt++;
  const w: string[] = [];
  for (let i = 0; i < n; i++) w.push(words[(i * 7 + salt * 3) % words.length]!);
  return `${w.join(" ")} ${salt}?`;
}

/** the p-quantile (0..1) of xs, nearest-rank */
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
