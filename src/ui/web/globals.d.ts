/** Compiled in by src/ui/bundle.ts (`bun build --define`): BENCHMARKS.md's measured operating points of the learned hit decision. */
declare const __SVC_OPERATING_POINTS__: Array<{ threshold: number; label: string; precision: number; recall: number; falseHitRate: number }>;
