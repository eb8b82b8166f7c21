import { startTestFleet } from '../helpers/fleet';
import { BACKPRESSURE_OVERRIDES, backpressureSuite } from './backpressure.suite';

// howk-dev's shape: the in-memory hot state counts outstanding webhooks as Redis does.
backpressureSuite('memory', () => startTestFleet('memory', { overrides: BACKPRESSURE_OVERRIDES }));
