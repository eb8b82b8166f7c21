import { z } from 'zod';
import { CONFIG_ID } from '../domain/config-id';

// Path parameters shared by several routes (their OpenAPI description; the routes check them).

export const ConfigParam = z.object({ config: z.string().regex(CONFIG_ID) });
export const IdParam = z.object({ id: z.string() });
