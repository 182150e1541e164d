/** Stream parsers: the generate-content JSON array form fed in arbitrary pieces. */
import { describe, test, expect } from "bun:test";
import { JsonArrayParser } from "../../src/gateway/sse";

describe("JsonArrayParser", () => {
  const elements = [
    { candidates: [{ content: { parts: [{ text: 'brackets ] } [ { and "quotes" \\ backslashes' }] } }] },
    { candidates: [{ content: { parts: [{ text: "second, with a comma" }] }, finishReason: "STOP" }], usageMetadata: { promptTokenCount: 3 } },
  ];
  const wire = "[" + elements.map((e) => JSON.stringify(e, null, 2)).join("\n,\r\n") + "\n]";

  test("every split point yields the same elements", () => {
    for (let cut = 0; cut <= wire.length; cut++) {
      const p = new JsonArrayParser();
      const out = [...p.push(wire.slice(0, cut)), ...p.push(wire.slice(cut)), ...p.end()];
      expect(out.map((e) => JSON.parse(e.data))).toEqual(elements);
    }
  });

  test("one character at a time; an unfinished element at EOF is dropped", () => {
    const p = new JsonArrayParser();
    const out = [];
    const truncated = wire.slice(0, wire.length - 20);
    for (const ch of truncated) out.push(...p.push(ch));
    out.push(...p.end());
    expect(out.map((e) => JSON.parse(e.data))).toEqual([elements[0]]);
  });
});
