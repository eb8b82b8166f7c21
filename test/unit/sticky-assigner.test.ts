import { describe, expect, it } from 'vitest';
import { stickyPlan } from '../../workers/kafka/sticky-assigner';

// A member joining or leaving a consumer group moves as few partitions as an even share
// allows (workers/kafka/sticky-assigner.ts): each move is a partition whose batches in flight
// can be sent again by its new owner. kafkajs' round-robin moved nearly all of them.

const parts = (n: number) => Array.from({ length: n }, (_, i) => `t\u0000${i}`);
const moved = (before: Map<string, string[]>, after: Map<string, string[]>) => {
  const owner = new Map<string, string>();
  for (const [m, ps] of before) for (const p of ps) owner.set(p, m);
  let n = 0;
  // Between members of both plans: a leaver's partitions do not count (it holds nothing any more).
  for (const [m, ps] of after) for (const p of ps) if (after.has(owner.get(p) ?? '') && owner.get(p) !== m) n++;
  return n;
};
const sizes = (plan: Map<string, string[]>) => [...plan.values()].map((ps) => ps.length).sort();

describe('sticky partition plan', () => {
  const six = parts(6);
  const three = stickyPlan(six, [
    { id: 'c', owned: [] },
    { id: 'a', owned: [] },
    { id: 'b', owned: [] },
  ]);
  const members = (plan: Map<string, string[]>) => [...plan].map(([id, owned]) => ({ id, owned }));

  it('deals an even share to members that own nothing, every partition once', () => {
    expect(sizes(three)).toEqual([2, 2, 2]);
    expect([...three.values()].flat().sort()).toEqual([...six].sort());
  });

  it('a member joining takes only its share: the others keep the rest', () => {
    const four = stickyPlan(six, [...members(three), { id: 'new', owned: [] }]);
    expect(sizes(four)).toEqual([1, 1, 2, 2]);
    expect(four.get('new')).toHaveLength(1);
    expect(moved(three, four)).toBe(1); // the joiner's one partition; round-robin moves 3 to 6 of the 6, by where the new id sorts
    for (const id of ['a', 'b', 'c']) for (const p of four.get(id)!) expect(three.get(id)).toContain(p);
  });

  it('a member leaving (or dead) gives away only its own partitions', () => {
    const two = stickyPlan(
      six,
      members(three).filter((m) => m.id !== 'b'),
    );
    expect(sizes(two)).toEqual([3, 3]);
    for (const id of ['a', 'c']) for (const p of three.get(id)!) expect(two.get(id)).toContain(p);
  });

  it("a rolling restart (each member replaced in turn) moves only the leaver's partitions and then the joiner's share", () => {
    let plan = three;
    for (const old of ['a', 'b', 'c']) {
      const left = stickyPlan(
        six,
        members(plan).filter((m) => m.id !== old),
      );
      expect(moved(plan, left)).toBe(0);
      const joined = stickyPlan(six, [...members(left), { id: `${old}2`, owned: [] }]);
      expect(moved(left, joined)).toBe(2); // the joiner's share, nothing between the others
      expect(sizes(joined)).toEqual([2, 2, 2]);
      plan = joined;
    }
  });

  it('ignores partitions that no longer exist and a partition claimed twice stays with one member', () => {
    const plan = stickyPlan(parts(2), [
      { id: 'a', owned: ['t\u00000', 't\u00009'] },
      { id: 'b', owned: ['t\u00000'] },
    ]);
    expect(plan.get('a')).toEqual(['t\u00000']);
    expect(plan.get('b')).toEqual(['t\u00001']);
  });
});
