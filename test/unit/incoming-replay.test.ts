import { incomingReplayCases } from '../helpers/incoming-replay';

// howk-dev's adapters: the marks live in the process's memory.
incomingReplayCases('memory');
