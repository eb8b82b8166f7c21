import { runRole } from '../node/main';

await runRole('api');
