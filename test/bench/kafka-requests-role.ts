// One Howk role (KREQ_ROLE: api, worker, scheduler) with its Kafka requests counted
// (kafka-request-counter.ts); started by kafka-requests.bench.ts.
import './kafka-request-counter';
import { runRole, type Role } from '../../workers/node/main';

await runRole((process.env.KREQ_ROLE ?? 'api') as Role);
