import { incomingReplayCases } from '../helpers/incoming-replay';

// howk-api on real Kafka + Redis: the marks live in Redis, shared by every api process.
incomingReplayCases('kafka');
