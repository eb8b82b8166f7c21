import type { Route } from './route';
import { configRoutes } from './routes/configs';
import { deadLetterRoutes } from './routes/deadletter';
import { deadLetterReplayRoutes } from './routes/deadletter-replay';
import { endpointRoutes } from './routes/endpoints';
import { endpointListRoutes } from './routes/endpoint-list';
import { enqueueRoutes } from './routes/enqueue';
import { healthRoutes } from './routes/health';
import { incomingRoutes } from './routes/incoming';
import { transformerListRoutes } from './routes/transformer-list';
import { keyRoutes } from './routes/keys';
import { metricsRoutes } from './routes/metrics';
import { openApiRoutes } from './routes/openapi';
import { scriptRoutes } from './routes/scripts';
import { scriptListRoutes } from './routes/script-list';
import { secretRoutes } from './routes/secrets';
import { statusRoutes } from './routes/status';
import { webhookRoutes } from './routes/webhooks';
import { eventRoutes } from './routes/events';
import { overviewRoutes } from './routes/overview';
import { svixAppRoutes } from './routes/svix-apps';
import { svixEndpointRoutes } from './routes/svix-endpoints';
import { svixEventTypeRoutes } from './routes/svix-event-types';
import { svixMessageRoutes } from './routes/svix-messages';
import { hookRoutes } from './routes/hooks';
import { svixWebhookRoutes } from './routes/svix-webhook';

/** Every HTTP route, in the order of the OpenAPI document; one file per concept under routes/. */
export const ROUTES: readonly Route[] = [
  ...healthRoutes,
  ...openApiRoutes,
  ...metricsRoutes,
  ...enqueueRoutes,
  ...statusRoutes,
  ...webhookRoutes,
  ...deadLetterRoutes,
  ...deadLetterReplayRoutes,
  ...endpointRoutes,
  ...configRoutes,
  ...endpointListRoutes,
  ...keyRoutes,
  ...secretRoutes,
  ...scriptRoutes,
  ...scriptListRoutes,
  ...incomingRoutes,
  ...eventRoutes,
  ...overviewRoutes,
  ...transformerListRoutes,
  ...svixAppRoutes,
  ...svixEndpointRoutes,
  ...svixEventTypeRoutes,
  ...svixMessageRoutes,
  ...hookRoutes,
  ...svixWebhookRoutes,
];
