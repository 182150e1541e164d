/**
 * Model routing (CONTRACT.md): where svc itself picks the upstream for a model name.
 * models.routes (name or glob -> provider) first, exact names before globs; then each style's
 * default globs (providers/<name>/index.ts).
 */
import { PROVIDERS, PROVIDER_NAMES, DEFAULT_PROVIDER, type ProviderName } from "./providers";

/** Each style's model globs, in PROVIDERS order. */
export const DEFAULT_ROUTES: Array<[string, ProviderName]> = PROVIDER_NAMES.flatMap((n) => PROVIDERS[n].modelGlobs.map((g): [string, ProviderName] => [g, n]));

const globCache = new Map<string, RegExp>();
function globRe(glob: string): RegExp {
  let re = globCache.get(glob);
  if (!re) {
    re = new RegExp("^" + glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".") + "$", "i");
    globCache.set(glob, re);
  }
  return re;
}

export function providerFor(model: string, routes: Record<string, ProviderName> = {}): ProviderName {
  if (routes[model]) return routes[model]!;
  for (const [glob, provider] of Object.entries(routes)) if (/[*?]/.test(glob) && globRe(glob).test(model)) return provider;
  for (const [glob, provider] of DEFAULT_ROUTES) if (globRe(glob).test(model)) return provider;
  return DEFAULT_PROVIDER;
}

/** The fallback deployments of a model (models.fallbacks): its exact name first, then the first matching glob. */
export function fallbacksFor<D>(model: string, fallbacks: Record<string, D[]>): D[] {
  if (fallbacks[model]) return fallbacks[model]!;
  // every proxied request asks: no entries array built (none configured is the common case)
  for (const glob in fallbacks) if (Object.hasOwn(fallbacks, glob) && /[*?]/.test(glob) && globRe(glob).test(model)) return fallbacks[glob]!;
  return NONE;
}

const NONE = Object.freeze([]) as never[];
