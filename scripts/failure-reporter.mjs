// A vitest reporter for `npm test`: writes the errors its JSON report leaves out (a failed
// beforeAll or afterAll in a describe, an error at load, an unhandled rejection) to the
// file named by HOWK_TEST_ERRORS_FILE, so the "what failed" list at the end names the cause.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const firstLine = (e) => `${e?.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e?.message || e?.stack || String(e)}`.split('\n')[0].slice(0, 300);

export default class FailureReporter {
  onTestRunEnd(modules, unhandled) {
    const out = process.env.HOWK_TEST_ERRORS_FILE;
    if (!out) return;
    const errors = [];
    for (const m of modules) {
      const file = relative(process.cwd(), m.moduleId);
      for (const e of m.errors()) errors.push({ file, where: 'file', message: firstLine(e) });
      for (const s of m.children.allSuites()) for (const e of s.errors()) errors.push({ file, where: s.fullName, message: firstLine(e) });
    }
    for (const e of unhandled) errors.push({ file: '', where: 'unhandled', message: firstLine(e) });
    writeFileSync(out, JSON.stringify(errors, null, 2));
  }
}
