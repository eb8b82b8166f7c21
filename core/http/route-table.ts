import type { Route } from './route';
import { configRoutes } from './routes/configs';
import { deadLetterRoutes } from './routes/deadletter';
import { endpointRoutes } from './routes/endpoints';
import { enqueueRoutes } from './routes/enqueue';
import { healthRoutes } from './routes/health';
import { incomingRoutes } from './routes/incoming';
import { keyRoutes } from './routes/keys';
import { metricsRoutes } from './routes/metrics';
import { openApiRoutes } from './routes/openapi';
import { scriptRoutes } from './routes/scripts';
import { secretRoutes } from './routes/secrets';
import { statusRoutes } from './routes/status';
import { webhookRoutes } from './routes/webhooks';
import { eventRoutes } from './routes/events';
import { overviewRoutes } from './routes/overview';

/** Every HTTP route, in the order of the OpenAPI document; one file per concept under routes/. */
export const ROUTES: readonly Route[] = [
  ...healthRoutes,
  ...openApiRoutes,
  ...metricsRoutes,
  ...enqueueRoutes,
  ...statusRoutes,
  ...webhookRoutes,
  ...deadLetterRoutes,
  ...endpointRoutes,
  ...configRoutes,
  ...keyRoutes,
  ...secretRoutes,
  ...scriptRoutes,
  ...incomingRoutes,
  ...eventRoutes,
  ...overviewRoutes,
];
