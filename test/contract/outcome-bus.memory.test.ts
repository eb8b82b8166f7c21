import { memoryOutcomeBus } from '../../core/memory/outcome-bus';
import { outcomeBusContract } from './outcome-bus.contract';

outcomeBusContract('memory', () => {
  const bus = memoryOutcomeBus();
  return { publisher: bus, subscriber: bus };
});
