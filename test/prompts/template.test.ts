import { describe, expect, test } from "bun:test";
import { extractVariables, render, estimateTokens } from "../../src/prompts/template";
import { slugify } from "../../src/prompts/service";
import { ApiError } from "../../src/core/errors";

const err = (fn: () => unknown): ApiError => {
  try {
    fn();
  } catch (e) {
    return e as ApiError;
  }
  throw new Error("expected an error");
};

describe("variable extraction", () => {
  test("bare, typed, defaulted, and typed+defaulted placeholders in order of first use", () => {
    expect(extractVariables("{{a}} {{ b : number }} {{c=hi there}} {{d:boolean=true}} {{a}}")).toEqual([
      { name: "a", varType: "string", defaultValue: null },
      { name: "b", varType: "number", defaultValue: null },
      { name: "c", varType: "string", defaultValue: "hi there" },
      { name: "d", varType: "boolean", defaultValue: "true" },
    ]);
  });
  test("a bare reuse after a declaration keeps the declaration; a bare first use is upgraded by a later declaration", () => {
    expect(extractVariables("{{n:integer=3}} {{n}}")).toEqual([{ name: "n", varType: "integer", defaultValue: "3" }]);
    expect(extractVariables("{{n}} {{n:integer=3}}")).toEqual([{ name: "n", varType: "integer", defaultValue: "3" }]);
  });
  test("escaped \\{{ is not a variable", () => {
    expect(extractVariables("literal \\{{not_a_var}} and {{real}}")).toEqual([{ name: "real", varType: "string", defaultValue: null }]);
  });
  test("conflicting declarations, unknown types and defaults of the wrong type are 400 validation_error naming the variable", () => {
    const e1 = err(() => extractVariables("{{x:number}} {{x:string}}"));
    expect(e1.status).toBe(400);
    expect(e1.type).toBe("validation_error");
    expect(e1.message).toContain("'x'");
    expect(err(() => extractVariables("{{y:date}}")).message).toContain("unknown type 'date'");
    expect(err(() => extractVariables("{{z:integer=1.5}}")).message).toContain("'z'");
    expect(err(() => extractVariables("{{j:json=nope}}")).message).toContain("'j'");
  });
  test("text that is not a placeholder stays text", () => {
    expect(extractVariables("{{ 1bad }} {{}} { {x} } {x}")).toEqual([]);
  });
});

describe("rendering", () => {
  test("substitutes every occurrence, uses defaults, unescapes \\{{", () => {
    expect(render("Hi {{name=World}}, {{name}}! \\{{raw}} {{n:integer}}", { n: 7 })).toBe("Hi World, World! {{raw}} 7");
    expect(render("Hi {{name=World}}", { name: "Ada" })).toBe("Hi Ada");
  });
  test("missing variables without default -> 400 validation_error naming each", () => {
    const e = err(() => render("{{a}} {{b}} {{c=ok}}", { a: "x" }));
    expect(e.type).toBe("validation_error");
    expect(e.message).toBe("missing value for template variable 'b'");
    expect(err(() => render("{{a}} {{b}}", {})).message).toBe("missing value for template variables 'a', 'b'");
  });
  test("typed values are checked and formatted", () => {
    expect(render("{{n:number}}|{{i:integer}}|{{b:boolean}}|{{j:json}}", { n: "2.5", i: "4", b: false, j: { a: [1] } })).toBe('2.5|4|false|{"a":[1]}');
    expect(err(() => render("{{n:number}}", { n: "abc" })).message).toBe("variable 'n' must be of type number");
    expect(err(() => render("{{i:integer}}", { i: 1.5 })).message).toBe("variable 'i' must be of type integer");
    expect(err(() => render("{{b:boolean}}", { b: "yes" })).type).toBe("validation_error");
    expect(err(() => render("{{s}}", { s: { nested: true } })).message).toBe("variable 's' must be of type string");
    // a json variable takes JSON text (which must parse) or any JSON value
    expect(render("{{j:json}}", { j: '{"a": 1}' })).toBe('{"a": 1}');
    expect(render("{{j:json}}", { j: 42 })).toBe("42");
    const bad = err(() => render("{{j:json}}", { j: "not json" }));
    expect(bad.type).toBe("validation_error");
    expect(bad.message).toBe("variable 'j' must be of type json");
  });
  test("values for unknown names are ignored; values are inserted verbatim (no re-expansion)", () => {
    expect(render("A {{x}}", { x: "{{y}}", unused: 1 })).toBe("A {{y}}");
  });
  test("estimated tokens ~ chars/4", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abc")).toBe(1);
    expect(estimateTokens("a".repeat(401))).toBe(101);
  });
});

describe("slugs", () => {
  test("lower-case ascii words joined by dashes, accents folded, fallback 'prompt'", () => {
    expect(slugify("  Hello, Wörld! — Ça va? ")).toBe("hello-world-ca-va");
    expect(slugify("!!!")).toBe("prompt");
    expect(slugify("x".repeat(300)).length).toBe(96);
  });
});
