import { memoryKv } from '../../core/memory/lua-kv';
import { luaKvContract } from './lua-kv.contract';

luaKvContract('memory', () => memoryKv());
