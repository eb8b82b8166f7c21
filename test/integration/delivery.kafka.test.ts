import { deliverySuite } from './delivery.suite';

deliverySuite('kafka', 3);
