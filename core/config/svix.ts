import { int, section } from './fields';

// Limits of the Svix-compatible API (docs/SVIX-API.md): every api instance keeps the whole
// model in memory, so each count is bounded.

export const svixSection = section({
  max_endpoints_per_app: int(10_000, 'Most endpoints of one application (POST .../endpoint answers 409 limit_reached above)', { min: 1 }),
  max_endpoints: int(
    100_000,
    'Most endpoints of all applications together: every api instance holds them all in memory, up to 64 KB each (POST .../endpoint answers 409 limit_reached above)',
    { min: 1 },
  ),
  max_applications: int(100_000, 'Most applications (POST /api/v1/app answers 409 limit_reached above)', { min: 1 }),
  max_event_types: int(10_000, 'Most event types (POST /api/v1/event-type answers 409 limit_reached above)', { min: 1 }),
  max_description_length: int(1024, 'Longest description of an endpoint or event type, and name of an application', { min: 16 }),
  max_filter_types: int(256, 'Most event types in one endpoint filter (filterTypes) and channels in one endpoint or message', { min: 1 }),
  max_fanout_bytes: int(
    67_108_864,
    'Most bytes one message may become: its payload times the endpoints it reaches (a message over it answers 413, nothing sent), as every webhook carries the payload',
    { min: 1024 },
  ),
  messages_kept_per_app: int(1000, 'Latest messages of each application every api instance keeps in memory for GET .../msg (older ones answer 404)', { min: 1 }),
});
