/**
 * `npm test`'s import rules (.dependency-cruiser.cjs): runs dependency-cruiser over src/ and
 * exits with its status. Its notice that TypeScript 7 has no compiler API yet is dropped (the swc
 * parser reads the sources, type-only imports included).
 */
// under Node (CI has Node 20): under bun, dependency-cruiser 17's swc visitor is not found
const proc = Bun.spawnSync(["node", "node_modules/dependency-cruiser/bin/dependency-cruise.mjs", "src", "--config", ".dependency-cruiser.cjs", "--no-progress"], {
  cwd: `${import.meta.dir}/..`,
  stdout: "pipe",
  stderr: "pipe",
});
const notice = /missing-tsc-transpiler|TypeScript environment|compatible TypeScript|typescript@|missed TypeScript|Install typescript|Support for typescript/;
const out = (proc.stdout.toString() + proc.stderr.toString())
  .split("\n")
  .filter((l) => !notice.test(l))
  .join("\n")
  .replace(/\n{3,}/g, "\n\n")
  .trim();
console.log(out);
process.exit(proc.exitCode ?? 1);
