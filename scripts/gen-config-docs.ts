// Writes docs/CONFIG.md from the one config schema (core/config/schema.ts).
import { writeFileSync } from 'node:fs';
import { configDocsMarkdown } from '../core/config/docs';

writeFileSync(new URL('../docs/CONFIG.md', import.meta.url), configDocsMarkdown());
console.log('docs/CONFIG.md written');
