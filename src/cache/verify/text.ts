/**
 * Tokenising and light normalisation for the hit verifier.
 */

export interface Token {
  /** As written (case kept). */
  raw: string;
  /** Lower-cased, apostrophes normalised. */
  lower: string;
  /** Light stem of `lower` (plural/-ing/-ed/possessive stripped). */
  stem: string;
  /** Position in the token list. */
  pos: number;
  /** True when the token starts a sentence (so its capital letter says nothing). */
  sentenceStart: boolean;
  /** Inside quotes ('...', "...", `...`, “...”): a literal term. */
  quoted: boolean;
}

// Words, with inner apostrophes/hyphens ("don't", "e-mail"), digit groups ("30,000", "2.5"),
// dotted names whose later parts are not capitalised words ("Tree.com", "Node.js", "ASP.NET"
// but not "married.Will"), and trailing +/# ("C++", "C#").
const TOKEN_RE = /\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|[\p{L}\p{N}]+(?:['’\-&+][\p{L}\p{N}]+|\.(?:\p{Ll}+|\p{Lu}+|\p{N}+)(?![\p{L}\p{N}]))*[+#]*/gu;

/** apostrophes inside a word ("don't", "what's") and thousands separators ("30,000"): dropping them changes nothing asked */
const SURFACE_DROP = /(?<=\p{L})['’](?=\p{L})|(?<=\d),(?=\d{3}(?!\d))/gu;

/**
 * Symbols that can change what is asked — signs and operators ("-5", "x > y", "2 + 2"), units and
 * currencies ("10%", "$5"), "&", "@", "#", "/" — are words of the surface form (the hyphen-minus too, so a
 * spaced " - " between words counts); only the punctuation of writing (. , ; : ! ? quotes, brackets, en and
 * em dashes) is dropped.
 */
const SURFACE_RE = new RegExp(`${TOKEN_RE.source}|[+\\-−*/×÷=<>≤≥≠^%$€£¥#@&|~°]`, "gu");

/**
 * Canonical surface form: NFKC, lower case, punctuation dropped (apostrophes inside words and thousands
 * separators too: "doesn't" = "doesnt", "30,000" = "30000"), whitespace collapsed; signs, operators,
 * units and currency symbols kept as words of their own (SURFACE_RE).
 */
export function surfaceForm(text: string): string {
  return (text.normalize("NFKC").toLowerCase().replace(SURFACE_DROP, "").match(SURFACE_RE) ?? []).join(" ");
}

export function tokenize(text: string): Token[] {
  const norm = text.normalize("NFKC");
  const out: Token[] = [];
  let prevEnd = 0;
  let atStart = true;
  let inQuote = false;
  for (const m of norm.matchAll(TOKEN_RE)) {
    const raw = m[0];
    const between = norm.slice(prevEnd, m.index);
    if (/[.?!:;]\s*$|^\s*[.?!]/.test(between) && out.length > 0) atStart = true;
    // Quote marks: ASCII quotes only count when not inside a word (apostrophes are part of tokens).
    const quotes = (between.match(/["“”`‘’«»「」]|(?:^|\s)'|'(?=\s|$|[?.!,])/g) ?? []).length;
    if (quotes % 2 === 1) inQuote = !inQuote;
    const lower = raw.toLowerCase().replace(/’/g, "'");
    out.push({ raw, lower, stem: stem(lower), pos: out.length, sentenceStart: atStart || /["“(]\s*$/.test(between), quoted: inQuote });
    atStart = false;
    prevEnd = m.index! + raw.length;
  }
  return out;
}

const NO_STRIP_S = /(ss|us|is|ous|ics|ies'|sis|xis)$/;

/** A deliberately light stemmer: merges inflections (plural, -ing, -ed, possessive), never derivations. */
export function stem(w: string): string {
  let s = w;
  if (/\d/.test(s)) return s;
  s = s.replace(/'s$|'$/, "");
  if (s.length <= 3) return s;
  if (s.endsWith("ies") && s.length > 4) s = `${s.slice(0, -3)}y`;
  else if (/(sses|shes|ches|xes|zes)$/.test(s)) s = s.slice(0, -2);
  else if (s.endsWith("s") && !NO_STRIP_S.test(s)) s = s.slice(0, -1);
  if (s.endsWith("ing") && s.length > 5) s = undouble(s.slice(0, -3));
  else if (s.endsWith("ied") && s.length > 4) s = `${s.slice(0, -3)}y`;
  else if (s.endsWith("ed") && s.length > 4) s = undouble(s.slice(0, -2));
  if (s.endsWith("e") && s.length >= 4) s = s.slice(0, -1);
  return s;
}

function undouble(s: string): string {
  return /([bdfgklmnprt])\1$/.test(s) ? s.slice(0, -1) : s;
}

/** Function words: carry little of what is asked. Wh-words, negations and number words are handled separately. */
export const STOPWORDS = new Set(
  (
    "a an the and or but if then else so as at by for from in into of on onto to with without about above below over under " +
    "up down out off again further once here there all any both each few more most other some such only own same too very " +
    "can could will would shall should may might must do does did doing done be is am are was were been being have has had having " +
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers herself " +
    "it its itself they them their theirs themselves this that these those " +
    "i'm i've i'd i'll you're you've you'd you'll he's she's it's we're we've they're they've that's there's what's who's " +
    "how's where's when's why's let's " +
    "just also really actually even still ever much many lot lots get got gets getting go going one's someone something " +
    "anyone anything everyone everything thing things way ways kind sort type please tell know want like need " +
    "than because while during before after between through against per via vs versus etc e.g i.e"
  ).split(/\s+/),
);

/**
 * Function words that carry a direction ("more"/"less", "before"/"after", "above"/"below"): content
 * words when AnalyzeOptions.polarContent is on, so that changing one is a word substitution.
 */
export const POLAR = new Set(["more", "most", "before", "after", "above", "below", "over", "under", "against"]);

export const NEGATIONS = new Set([
  "not", "no", "never", "without", "none", "nobody", "nothing", "nowhere", "neither", "nor", "cannot", "can't", "cant",
  "don't", "dont", "doesn't", "doesnt", "didn't", "didnt", "isn't", "isnt", "aren't", "arent", "wasn't", "wasnt",
  "weren't", "werent", "won't", "wont", "wouldn't", "wouldnt", "shouldn't", "shouldnt", "couldn't", "couldnt",
  "haven't", "havent", "hasn't", "hasnt", "hadn't", "hadnt", "mustn't", "needn't", "ain't", "n't",
]);

/**
 * Request verbs that only say "answer this" ("Explain the causes of X" = "What caused X?"):
 * treated as function words when `ignoreRequestVerbs` is on.
 */
export const REQUEST_VERBS = new Set(["explain", "describe", "elaborate", "discuss", "outline", "summarize", "summarise"]);

/** Asked-for attribute by wh-word (the first one in the text is the one asked). */
export const WH_CLASS: Record<string, string> = {
  who: "person", whom: "person", whose: "person",
  when: "time",
  where: "place",
  why: "reason",
  which: "thing", what: "thing",
  how: "manner",
};

const NUMBER_WORDS: Record<string, string> = {
  zero: "0", two: "2", three: "3", four: "4", five: "5", six: "6", seven: "7", eight: "8", nine: "9", ten: "10",
  eleven: "11", twelve: "12", thirteen: "13", fourteen: "14", fifteen: "15", sixteen: "16", seventeen: "17", eighteen: "18",
  nineteen: "19", twenty: "20", thirty: "30", forty: "40", fifty: "50", sixty: "60", seventy: "70", eighty: "80", ninety: "90",
  hundred: "100", thousand: "1000", million: "1e6", billion: "1e9", trillion: "1e12",
  first: "1st", second: "2nd", third: "3rd", fourth: "4th", fifth: "5th", sixth: "6th", seventh: "7th", eighth: "8th",
  ninth: "9th", tenth: "10th", half: "1/2", quarter: "1/4", dozen: "12", twice: "x2", double: "x2", triple: "x3",
};

/** "one" is usually a pronoun ("how does one..."); it counts as the number 1 only when the other side has 1. */
export const WEAK_ONE = "one";

/** Canonical numeric value of a token, or null if it is not a number / ordinal / number word. */
export function numberValue(lower: string): string | null {
  if (NUMBER_WORDS[lower]) return NUMBER_WORDS[lower]!;
  // "60k" = "60,000" = "60000" (thousands only: "5m" may be minutes, metres or millions).
  const k = /^(\d+(?:\.\d+)?)k$/.exec(lower.replace(/,/g, ""));
  if (k) return String(Math.round(Number(k[1]) * 1000));
  if (/^\d/.test(lower) || /^\d+(st|nd|rd|th|s|k|m|b)?$/.test(lower)) return lower.replace(/,/g, "");
  if (/\d/.test(lower)) return lower; // model numbers, versions: "5x", "ps4", "iphone7"
  return null;
}

/** Damerau-Levenshtein distance capped at `max + 1` (small strings only). */
export function editDistance(a: string, b: string, max = 2): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const n = a.length;
  const m = b.length;
  let prev2: number[] = [];
  let prev = Array.from({ length: m + 1 }, (_, j) => j);
  for (let i = 1; i <= n; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= m; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, prev2[j - 2]! + 1);
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > max) return max + 1;
    prev2 = prev;
    prev = cur;
  }
  return prev[m]!;
}
