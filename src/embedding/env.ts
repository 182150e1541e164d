/**
 * An integer setting of the embedder read from the environment: within [min, max], or `fallback`
 * when the variable is unset or empty; anything else stops the start with the variable named.
 */
export function envInteger(name: string, min: number, max: number, fallback: () => number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback();
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
  return n;
}
