import { runRole } from '../node/main';

await runRole('scheduler');
