import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { ConfigSchema } from '../../core/config/schema';
import { apiDocsMarkdown } from '../../core/http/api-docs';
import { createApiApp } from '../../core/http/app';
import { buildOpenApi } from '../../core/http/openapi';
import { ROUTES } from '../../core/http/route-table';
import { silentLogger } from '../../core/ports/logger';

const read = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8');

describe('OpenAPI document', () => {
  const defaults = ConfigSchema.parse({});

  it('docs/openapi.json and docs/API.md are the generated ones (run `npm run docs:api` after changing a schema)', () => {
    expect(JSON.parse(read('docs/openapi.json'))).toEqual(buildOpenApi(defaults, ROUTES));
    expect(read('docs/API.md')).toBe(apiDocsMarkdown(defaults));
  });

  it('is OpenAPI 3.1 with bearer auth, open health routes, and the limits of the running config', async () => {
    const config = loadConfig({ env: {}, overrides: { 'api.max_batch_size': 7, 'api.auth.enabled': true } });
    const app = createApiApp({ config, enqueue: async () => [], hot: {} as never, log: silentLogger, dependencies: [], clock: { now: () => 0 } });
    const res = await app.request('/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/health'].get.security).toEqual([]);
    expect(doc.paths['/webhooks/{config}/enqueue/batch'].post.requestBody.content['application/json'].schema.properties.webhooks.maxItems).toBe(7);
    expect(doc.paths['/webhooks/{config}/enqueue'].post.requestBody.content['application/json'].schema.properties.endpoint.maxLength).toBe(config.api.max_endpoint_length);
  });
});
