import type { Command } from 'commander';
import { describeStep, topicPlan } from '../../core/pipeline/topic-plan';
import { replicationProblem, resolveReplication, topicSpecs } from '../../core/pipeline/topics';
import { configFromProcess } from '../node/config';
import { applySteps, connectAdmin, describeTopics, knownBrokers } from '../kafka/topic-admin';
import { CliError, err, out, printJson, type GlobalOpts } from './io';

// `howk topics migrate`: brings every howk topic to the config: creates the missing ones,
// raises partitions to kafka.partitions (never lowers: Kafka cannot), sets cleanup.policy and
// retention.ms, raises replicas to kafka.replication_factor and sets min.insync.replicas
// (`auto`: against every broker the cluster knows, down ones included). Raising the partitions of a keyed topic moves keys to other partitions: records
// already written keep their order, new ones of a key may overtake older ones of the same key
// still waiting in the old partition (docs/OPERATIONS.md, CLI).

export const registerTopics = (program: Command, globals: () => GlobalOpts): void => {
  program
    .command('topics')
    .description('Kafka topics of the config')
    .command('migrate')
    .description('Raise partitions and replicas, set retention, cleanup.policy and min.insync.replicas of each topic to the config')
    .option('--dry-run', 'print the plan, change nothing')
    .action(async (o: { dryRun?: boolean }) => {
      const g = globals();
      const config = configFromProcess({ config: g.config });
      const specs = topicSpecs(config);
      let admin;
      try {
        admin = await connectAdmin(config);
      } catch (e) {
        throw new CliError(`Kafka unreachable at ${config.kafka.brokers.join(',')}: ${(e as Error).message}`);
      }
      try {
        const actual = await describeTopics(
          admin,
          specs.map((s) => s.name),
        );
        const brokers = await knownBrokers(admin, actual);
        const resolved = specs.map((s) => resolveReplication(s, brokers.length));
        const problem = resolved.map((s) => replicationProblem(s, brokers.length)).find(Boolean);
        if (problem) throw new CliError(`the config cannot be met: ${problem}`);
        const plan = topicPlan(resolved, actual);
        for (const w of plan.warnings) err(`warning: ${w.topic} ${w.message}`);
        if (!o.dryRun && plan.steps.length) await applySteps(admin, resolved, plan.steps, brokers);
        if (g.json) return printJson({ dry_run: !!o.dryRun, steps: plan.steps, warnings: plan.warnings, applied: !o.dryRun });
        if (!plan.steps.length) return out('every topic matches the config: nothing to do');
        for (const s of plan.steps) out(`${o.dryRun ? 'would ' : ''}${describeStep(s)}`);
        out(o.dryRun ? `dry run: ${plan.steps.length} change(s), none made` : `${plan.steps.length} change(s) made`);
      } finally {
        await admin.disconnect().catch(() => {});
      }
    });
};
