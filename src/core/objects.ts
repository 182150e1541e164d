/** Small object helpers shared by every layer. */

type Json = Record<string, unknown>;

const isPlainObject = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);

/** Merge `src` into `target` in place, recursing into nested plain objects; arrays and scalars replace. */
export function deepMerge<T extends Json>(target: T, src: Json): T {
  for (const [k, v] of Object.entries(src)) {
    const t = (target as Json)[k];
    if (isPlainObject(v) && isPlainObject(t)) deepMerge(t, v);
    else (target as Json)[k] = v;
  }
  return target;
}

/** A merged copy (neither input changes). */
export const merged = <T extends Json>(a: T, b: Json): T => deepMerge(structuredClone(a), b);
