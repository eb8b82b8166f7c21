// Writes docs/openapi.json and docs/API.md from the route table (core/http/route-table.ts), with the default config.
import { writeFileSync } from 'node:fs';
import { ConfigSchema } from '../core/config/schema';
import { apiDocsMarkdown } from '../core/http/api-docs';
import { buildOpenApi } from '../core/http/openapi';
import { ROUTES } from '../core/http/route-table';

const config = ConfigSchema.parse({});
writeFileSync(new URL('../docs/openapi.json', import.meta.url), `${JSON.stringify(buildOpenApi(config, ROUTES), null, 2)}\n`);
writeFileSync(new URL('../docs/API.md', import.meta.url), apiDocsMarkdown(config));
console.log('docs/openapi.json and docs/API.md written');
