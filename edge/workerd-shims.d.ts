// Only for `npm run typecheck:edge` (edge/tsconfig.json; the root tsconfig excludes it).
// workers-types declares clearTimeout(number | null); at run time workerd, like every JS
// runtime, also takes undefined, which core/ passes for a timer that was never set.
declare function clearTimeout(timeoutId?: number): void;
