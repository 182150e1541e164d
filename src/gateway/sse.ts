/**
 * Incremental parsers for the two streaming wire formats the providers use:
 * Server-Sent Events (OpenAI, Anthropic, Gemini `?alt=sse`) and newline-delimited JSON
 * (the chat style's v1 stream). Chunks are fed as they arrive; complete events come out.
 */

export interface SseEvent {
  event?: string;
  data: string;
}

/** An event's JSON payload, or undefined when it is not JSON (JSON.parse never yields undefined itself). */
export function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class SseParser {
  private buf = "";
  private event: string | undefined;
  private data: string[] = [];

  /** Feed decoded text; returns the events completed by it. */
  push(text: string): SseEvent[] {
    this.buf += text;
    const out: SseEvent[] = [];
    let nl: number;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      let line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (this.data.length > 0 || this.event !== undefined) out.push({ event: this.event, data: this.data.join("\n") });
        this.event = undefined;
        this.data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") this.data.push(value);
      else if (field === "event") this.event = value;
    }
    return out;
  }

  /** Flush an event left without its blank terminator line at end of stream. */
  end(): SseEvent[] {
    const out = this.push("\n\n");
    return out;
  }
}

export class NdjsonParser {
  private buf = "";
  push(text: string): SseEvent[] {
    this.buf += text;
    const out: SseEvent[] = [];
    let nl: number;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, nl).trim();
      this.buf = this.buf.slice(nl + 1);
      if (line) out.push({ data: line });
    }
    return out;
  }
  end(): SseEvent[] {
    const line = this.buf.trim();
    this.buf = "";
    return line ? [{ data: line }] : [];
  }
}

/**
 * The generate-content stream without `?alt=sse`: one JSON array whose elements (response
 * objects) arrive as they are generated — `[{…}\n,\r\n{…}\n]`. Each complete top-level element
 * comes out as one event (its JSON text in `data`); an unfinished element at EOF is dropped.
 */
export class JsonArrayParser {
  private buf = "";
  private pos = 0;
  private depth = 0;
  private inStr = false;
  private esc = false;
  private start = -1;
  push(text: string): SseEvent[] {
    this.buf += text;
    const out: SseEvent[] = [];
    const b = this.buf;
    for (let i = this.pos; i < b.length; i++) {
      const c = b.charCodeAt(i);
      if (this.inStr) {
        if (this.esc) this.esc = false;
        else if (c === 92 /* \ */) this.esc = true;
        else if (c === 34 /* " */) this.inStr = false;
        continue;
      }
      if (c === 34) this.inStr = true;
      else if (c === 123 /* { */ || c === 91 /* [ */) {
        if (this.depth === 1) this.start = i;
        this.depth++;
      } else if (c === 125 /* } */ || c === 93 /* ] */) {
        this.depth--;
        if (this.depth === 1 && this.start >= 0) {
          out.push({ data: b.slice(this.start, i + 1) });
          this.start = -1;
        }
      }
    }
    // keep only an element still being received
    if (this.start >= 0) {
      this.buf = b.slice(this.start);
      this.start = 0;
    } else this.buf = "";
    this.pos = this.buf.length;
    return out;
  }
  end(): SseEvent[] {
    this.buf = "";
    this.pos = 0;
    return [];
  }
}

/** Render one SSE frame. */
export function sseFrame(data: unknown, event?: string): string {
  const payload = typeof data === "string" ? data : JSON.stringify(data);
  return (event ? `event: ${event}\n` : "") + `data: ${payload}\n\n`;
}

/** Split text into chunks of roughly `size` characters at word boundaries (for rebuilt streams). */
export function chunkText(text: string, size = 48): string[] {
  if (text.length <= size) return text ? [text] : [];
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + size);
    if (end < text.length) {
      const space = text.lastIndexOf(" ", end);
      if (space > start) end = space + 1;
    }
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}
