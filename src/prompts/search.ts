/** What a prompt list's `search` matches: name and description, NFC-normalised and lower-cased (any script, not only A-Z). */
export const searchTextOf = (name: string, description: string) => `${name}\n${description}`.normalize("NFC").toLowerCase();
/** The query side of the same folding. */
export const searchKey = (q: string) => q.normalize("NFC").toLowerCase();
