// Writes docs/CONFIG.md and .env.example from the one config schema (core/config/schema.ts).
import { writeFileSync } from 'node:fs';
import { configDocsMarkdown } from '../core/config/docs';
import { envExampleText } from '../core/config/env-example';

writeFileSync(new URL('../docs/CONFIG.md', import.meta.url), configDocsMarkdown());
console.log('docs/CONFIG.md written');
writeFileSync(new URL('../.env.example', import.meta.url), envExampleText());
console.log('.env.example written');
