import { runRole } from '../node/main';

await runRole('worker');
