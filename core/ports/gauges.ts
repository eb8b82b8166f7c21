// GET /stats/gauges (the console's Overview): each gauge as far as this process can read it
// cheaply, null where it cannot. A port type, so the API's dependencies name it without
// importing a route; the route's schema (core/http/routes/overview.ts) is checked against it.

export type Gauges = Record<'retry_queue' | 'in_flight' | 'slow_lane' | 'consumer_lag' | 'open_circuits', number | null>;
