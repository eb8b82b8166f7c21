import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configDocsMarkdown } from '../../core/config/docs';

describe('docs/CONFIG.md', () => {
  it('is the table generated from the config schema (run `npm run docs:config` after changing it)', () => {
    expect(readFileSync(new URL('../../docs/CONFIG.md', import.meta.url), 'utf8')).toBe(configDocsMarkdown());
  });
});
