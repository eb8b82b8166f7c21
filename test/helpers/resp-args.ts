import { RespArgs } from '../../workers/redis/resp';

/** RespArgs holding `values` in order: numbers as numbers, the rest as text. */
export const argsOf = (values: readonly (string | number)[]): RespArgs => {
  const w = new RespArgs();
  for (const v of values) {
    if (typeof v === 'number') w.num(v);
    else w.str(v);
  }
  return w;
};
