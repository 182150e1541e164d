/**
 * A bound on SAML XML before any XML parser sees it (issue: a request whose body is deeply nested
 * or huge must be refused quickly, for every non-JSON parser). One linear pass over the text, no
 * recursion, no allocation beyond the start tags it returns:
 *  - at most `maxChars` characters, `maxDepth` open elements and `maxElements` elements;
 *  - no document type or entity declarations (`<!DOCTYPE`, `<!ENTITY`: SAML never needs them, and
 *    they are how entity-expansion attacks start);
 *  - tags, comments, CDATA sections and processing instructions terminated, end tags balanced.
 * The start tags (qualified name, local name, attributes with entities decoded, depth) are handed
 * back, so a caller can read an attribute of the root (the Response's Destination) or of an element
 * inside an assertion node-saml has verified (SubjectConfirmationData's Recipient) without a DOM.
 */

export interface XmlLimits {
  maxChars: number;
  maxDepth: number;
  maxElements: number;
}

/** A SAML Response: real ones are 5–50 KB, about 10 levels deep, a few hundred elements. */
export const SAML_XML_LIMITS: XmlLimits = { maxChars: 512 * 1024, maxDepth: 32, maxElements: 10_000 };

export interface StartTag {
  name: string;
  /** the name without its namespace prefix */
  local: string;
  attrs: Record<string, string>;
  /** 1 for the root element */
  depth: number;
}

export class XmlRefused extends Error {}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(v: string): string {
  if (!v.includes("&")) return v;
  return v.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]{2,4});/g, (m, e: string) => {
    if (e[0] === "#") {
      const cp = e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    return ENTITIES[e] ?? m;
  });
}

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/** The start tags of `xml`, or XmlRefused naming the bound it breaks. */
export function startTags(xml: string, limits: XmlLimits = SAML_XML_LIMITS): StartTag[] {
  if (xml.length > limits.maxChars) throw new XmlRefused(`larger than ${limits.maxChars} characters`);
  const n = xml.length;
  const out: StartTag[] = [];
  const until = (token: string, from: number, what: string) => {
    const at = xml.indexOf(token, from);
    if (at < 0) throw new XmlRefused(`unterminated ${what}`);
    return at + token.length;
  };
  let depth = 0;
  let i = 0;
  for (;;) {
    const lt = xml.indexOf("<", i);
    if (lt < 0) break;
    const c = xml.charCodeAt(lt + 1);
    if (c === 33 /* ! */) {
      if (xml.startsWith("<!--", lt)) i = until("-->", lt + 4, "comment");
      else if (xml.startsWith("<![CDATA[", lt)) i = until("]]>", lt + 9, "CDATA section");
      else throw new XmlRefused("document type and entity declarations are not accepted");
      continue;
    }
    if (c === 63 /* ? */) {
      i = until("?>", lt + 2, "processing instruction");
      continue;
    }
    if (c === 47 /* / */) {
      i = until(">", lt + 2, "end tag");
      if (--depth < 0) throw new XmlRefused("an end tag without its start tag");
      continue;
    }
    let j = lt + 1;
    while (j < n) {
      const d = xml.charCodeAt(j);
      if (isSpace(d) || d === 47 || d === 62) break;
      j++;
    }
    const name = xml.slice(lt + 1, j);
    if (!name) throw new XmlRefused("a tag without a name");
    const attrs: Record<string, string> = Object.create(null);
    let selfClosing = false;
    for (;;) {
      while (j < n && isSpace(xml.charCodeAt(j))) j++;
      if (j >= n) throw new XmlRefused("unterminated start tag");
      if (xml.charCodeAt(j) === 62) {
        j++;
        break;
      }
      if (xml.startsWith("/>", j)) {
        selfClosing = true;
        j += 2;
        break;
      }
      const a = j;
      while (j < n) {
        const d = xml.charCodeAt(j);
        if (isSpace(d) || d === 61 || d === 62 || d === 47) break;
        j++;
      }
      const attr = xml.slice(a, j);
      while (j < n && isSpace(xml.charCodeAt(j))) j++;
      if (!attr || xml.charCodeAt(j) !== 61 /* = */) throw new XmlRefused(`malformed attribute in <${name.slice(0, 50)}>`);
      j++;
      while (j < n && isSpace(xml.charCodeAt(j))) j++;
      const q = xml[j];
      if (q !== '"' && q !== "'") throw new XmlRefused(`unquoted attribute value in <${name.slice(0, 50)}>`);
      const end = xml.indexOf(q, j + 1);
      if (end < 0) throw new XmlRefused("unterminated attribute value");
      attrs[attr] = decode(xml.slice(j + 1, end));
      j = end + 1;
    }
    const at = depth + 1;
    if (at > limits.maxDepth) throw new XmlRefused(`nested deeper than ${limits.maxDepth} elements`);
    if (!selfClosing) depth = at;
    out.push({ name, local: name.slice(name.indexOf(":") + 1), attrs, depth: at });
    if (out.length > limits.maxElements) throw new XmlRefused(`more than ${limits.maxElements} elements`);
    i = j;
  }
  if (depth !== 0) throw new XmlRefused("unclosed elements");
  if (out.length === 0) throw new XmlRefused("no element");
  return out;
}
