// The scale benchmark's statement view (`--pg-statements`) must print what a load ran between two
// readings of pg_stat_statements, per answer: a statement run before only is not in it, the one that
// read the most blocks in the window comes first (not the one with the most blocks since the server
// started), and a nested statement says so.
import { describe, expect, it } from 'vitest';
import { type StatementCounters, statementsPerAnswer } from '../../../scripts/bench/lib/pg-statements.ts';

const statement = (
  text: string,
  calls: number,
  blocksHit: number,
  extra: Partial<{ plans: number }> = {},
) => ({
  text,
  calls,
  plans: extra.plans ?? 0,
  blocksHit,
  blocksRead: 0,
  execMs: calls * 0.5,
  planMs: 0,
  jitMs: 0,
});

describe('statementsPerAnswer', () => {
  it('prints the window’s statements per answer, most blocks in the window first', () => {
    const before: StatementCounters = new Map([
      ['1:true', statement('select old', 1000, 1_000_000)],
      ['2:true', statement('select page', 10, 100)],
    ]);
    const after: StatementCounters = new Map([
      ['1:true', statement('select old', 1000, 1_000_000)],
      ['2:true', statement('select page', 110, 2100, { plans: 100 })],
      ['3:false', statement('(nested) insert into outbox_event', 50, 500)],
    ]);
    const lines = statementsPerAnswer(before, after, 100);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^ {2}20\.0 blocks an answer .*1\.00 calls and 1\.00 plans an answer, 20\.0 blocks/,
    );
    expect(lines[0]).toMatch(/select page$/);
    expect(lines[1]).toMatch(
      /^ {2}5\.0 blocks an answer .*0\.50 calls .*\(nested\) insert into outbox_event$/,
    );
  });

  it('prints nothing for a load without answers', () => {
    const after: StatementCounters = new Map([['2:true', statement('select page', 5, 50)]]);
    expect(statementsPerAnswer(new Map(), after, 0)).toEqual([]);
  });
});
