import { deliverySuite } from './delivery.suite';

// The embedded default (howk-dev's in-memory log and hot state) passes the same delivery tests.
deliverySuite('memory');
