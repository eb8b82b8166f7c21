import { startTestFleet } from '../helpers/fleet';
import { useRedisDb } from '../helpers/redis-db';
import { BACKPRESSURE_OVERRIDES, backpressureSuite } from './backpressure.suite';

const redisDb = useRedisDb();

backpressureSuite('kafka', () => startTestFleet('kafka', { overrides: BACKPRESSURE_OVERRIDES, redisDb: redisDb() }));
