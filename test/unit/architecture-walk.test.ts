import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/ARCHITECTURE.md, "The path of one webhook, file by file", names the code a webhook
// goes through. Its references have one form, which this test reads (the section says so too):
//
//   `core/http/app.ts` `createApiApp` `mountedRoutes`
//
// a path in backticks (it has a `/` and ends in .ts, .mjs, .lua or `/`), then the names
// defined in that file, each in backticks, with only spaces, line breaks or commas between
// them. A name may be `Class.method`. A Redis script is named by its file alone
// (`claimIdempotency-2.lua`): it must be in workers/redis/commands/ or its includes/.
// Anything else in backticks (config keys, stage names, topics, prose) is not checked.

const ROOT = new URL('../../', import.meta.url).pathname;
const DOC = 'docs/ARCHITECTURE.md';
const HEADING = '## The path of one webhook, file by file';
const SCRIPT_DIRS = ['workers/redis/commands', 'workers/redis/commands/includes'];

const isPath = (t: string) => t.includes('/') && !/\s/.test(t) && /(\.ts|\.mjs|\.lua|\/)$/.test(t) && !t.startsWith('/');
const isScript = (t: string) => /^[\w-]+\.lua$/.test(t);
const isName = (t: string) => /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(t);

type Ref = { path: string; names: string[]; step: string };

/** The walk's text: from its heading to the next `## ` heading. */
const walkSection = (doc: string): string => {
  const start = doc.indexOf(`${HEADING}\n`);
  if (start < 0) throw new Error(`${DOC} has no "${HEADING}" section`);
  const end = doc.indexOf('\n## ', start + HEADING.length);
  return doc.slice(start, end < 0 ? undefined : end);
};

/** The step a position is in: the last `12. ` or `**Heading**` line before it. */
const stepAt = (section: string, at: number): string => {
  let step = 'intro';
  for (const m of section.slice(0, at).matchAll(/^(?:(\d+)\. |\*\*([^*\n]+)\*\*)/gm)) step = m[1] ?? m[2]!;
  return step;
};

/** Every path reference of the walk with the names right after it, and the step it is in. */
const walkRefs = (section: string): { refs: Ref[]; scripts: { name: string; step: string }[] } => {
  const refs: Ref[] = [];
  const scripts: { name: string; step: string }[] = [];
  const tick = /`([^`\n]+)`/g;
  let current: Ref | undefined;
  let lastEnd = 0;
  for (let m = tick.exec(section); m; m = tick.exec(section)) {
    const token = m[1]!;
    const gap = section.slice(lastEnd, m.index);
    lastEnd = m.index + m[0].length;
    const step = stepAt(section, m.index);
    if (isPath(token)) {
      refs.push((current = { path: token, names: [], step }));
      continue;
    }
    if (isScript(token)) scripts.push({ name: token, step });
    if (current && /^[\s,]*$/.test(gap) && isName(token)) current.names.push(token);
    else current = undefined;
  }
  return { refs, scripts };
};

const esc = (s: string) => s.replace(/[$]/g, '\\$');
const MODIFIERS = '(?:(?:export|public|private|protected|static|readonly|async|get|set|declare|abstract)\\s+)*';

/** Whether `source` declares `name`: a function, variable, class, type, method or member, or an export of it. */
const declares = (source: string, name: string): boolean => {
  const n = esc(name);
  return [
    new RegExp(`\\b(?:function\\*?|const|let|var|class|interface|type|enum)\\s+${n}\\b`),
    new RegExp(`^\\s*${MODIFIERS}${n}\\s*(?:<[^>\\n]*>)?\\s*\\(`, 'm'), // method
    new RegExp(`^\\s*${MODIFIERS}${n}\\??\\s*[:=]`, 'm'), // member of an object, class or type
    new RegExp(`export\\s*(?:type\\s*)?\\{[^}]*\\b${n}\\b`), // export list
  ].some((r) => r.test(source));
};

const sourcesOf = (path: string): string[] => {
  const full = join(ROOT, path);
  if (!statSync(full).isDirectory()) return [readFileSync(full, 'utf8')];
  return readdirSync(full, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|mjs)$/.test(f))
    .map((f) => readFileSync(join(full, f), 'utf8'));
};

const mentions = (source: string, word: string): number => source.match(new RegExp(`(?<![\\w$])${esc(word)}(?![\\w$])`, 'g'))?.length ?? 0;

/**
 * Whether a step's name is part of its story: called or imported by another file the step
 * names, used in its own file beyond its definition, or (wiring such as `startFleet`) in a
 * file that itself uses a name of another file of the step. A function left defined but no
 * longer on this path (a replaced signer, a check moved to another file) fails it. The
 * first name of a step is where the step starts and needs no caller in it.
 */
const usedInStep = (name: string, r: Ref, refs: Ref[]): boolean => {
  const word = (n: string) => n.split('.').at(-1)!;
  const others = refs.filter((o) => o.step === r.step && o.path !== r.path && existsSync(join(ROOT, o.path)));
  const own = sourcesOf(r.path);
  if (others.some((o) => sourcesOf(o.path).some((s) => mentions(s, word(name)) > 0))) return true;
  if (own.some((s) => mentions(s, word(name)) > 1)) return true;
  return others.some((o) => o.names.some((n) => own.some((s) => mentions(s, word(n)) > 0)));
};

/** What is wrong with the walk's references: a path that does not exist, a name its file does not define. */
const walkProblems = (doc: string): string[] => {
  const { refs, scripts } = walkRefs(walkSection(doc));
  const problems: string[] = [];
  const firstOfStep = new Map<string, Ref>();
  for (const r of refs) if (r.names.length && !firstOfStep.has(r.step)) firstOfStep.set(r.step, r);
  for (const r of refs) {
    if (!existsSync(join(ROOT, r.path))) {
      problems.push(`step ${r.step}: ${r.path} does not exist`);
      continue;
    }
    const sources = sourcesOf(r.path);
    for (const name of r.names) {
      const [head, ...members] = name.split('.');
      const ok = sources.some((s) => declares(s, head!) && members.every((m) => declares(s, m)));
      if (!ok) problems.push(`step ${r.step}: ${r.path} does not define ${name}`);
      else if (!(r === firstOfStep.get(r.step) && name === r.names[0]) && !usedInStep(name, r, refs))
        problems.push(`step ${r.step}: ${name} is used by no other file of the step, nor in ${r.path} beyond its definition`);
    }
  }
  for (const s of scripts) if (!SCRIPT_DIRS.some((d) => existsSync(join(ROOT, d, s.name)))) problems.push(`step ${s.step}: script ${s.name} is not in ${SCRIPT_DIRS.join(' or ')}`);
  return problems;
};

describe(`${DOC}, the path of one webhook`, () => {
  const doc = readFileSync(join(ROOT, DOC), 'utf8');

  it('names only files that exist and functions those files define', () => {
    expect(walkProblems(doc)).toEqual([]);
  });

  it('is written in the checked form: every numbered step names code as `path` `name`', () => {
    const { refs } = walkRefs(walkSection(doc));
    const steps = [...walkSection(doc).matchAll(/^(\d+)\. /gm)].map((m) => m[1]!);
    expect(steps.length).toBeGreaterThanOrEqual(15);
    const named = new Set(refs.filter((r) => r.names.length).map((r) => r.step));
    expect(steps.filter((s) => !named.has(s))).toEqual([]);
    expect(refs.reduce((n, r) => n + r.names.length, 0)).toBeGreaterThanOrEqual(60);
  });

  it('catches a renamed function and a moved file', () => {
    const walk = walkSection(doc);
    expect(walkProblems(doc.replace(walk, `${HEADING}\n\n1. \`core/http/app.ts\` \`createApiAppRenamed\`; \`core/http/gone.ts\` \`x\`.\n`))).toEqual([
      'step 1: core/http/app.ts does not define createApiAppRenamed',
      'step 1: core/http/gone.ts does not exist',
    ]);
  });
});
