import { deliverySuite } from './delivery.suite';

deliverySuite('kafka');
