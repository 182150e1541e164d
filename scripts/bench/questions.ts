/**
 * Distinct questions for cache-miss benchmarks (proxy-client.ts, proxy-load.ts): a seeded word mix,
 * so no two share a meaning (measured: the hit counts the benches print) and every run asks the same.
 */
const WORDS = "amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon meadow nectar obsidian prairie quartz raven saffron tundra umber violet willow xenon yarrow zephyr".split(" ");
const TOPICS = ["history of", "how to grow", "price of", "chemistry of", "poems about", "maps of", "recipes with", "songs about", "photos of", "laws on"];

/** A generator of questions; `seed` separates streams (e.g. one per load process or connection). */
export function questions(seed = 2026) {
  let s = seed >>> 0;
  const rnd = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
  return (i: number) => `${TOPICS[i % TOPICS.length]} ${WORDS[Math.floor(rnd() * 26)]} ${WORDS[Math.floor(rnd() * 26)]} ${WORDS[Math.floor(rnd() * 26)]} in ${1900 + (i % 120)}?`;
}

/** The default stream (seed 2026). */
export const question = questions();
