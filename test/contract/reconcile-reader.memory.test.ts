import { MemoryLog } from '../../core/memory/log';
import { MemoryTopicReader } from '../../core/memory/topic-reader';
import { readerContract } from './reconcile-reader.contract';

readerContract('memory', async () => {
  const log = new MemoryLog();
  let n = 0;
  return {
    reader: new MemoryTopicReader(log),
    topic: async (partitions) => {
      const name = `t${n++}`;
      log.topic(name, partitions);
      return name;
    },
    append: async (records) => log.append(records),
    cleanup: async () => {},
  };
});
