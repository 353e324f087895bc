// PostgreSQL plans (EXPLAIN (FORMAT JSON)) checked for an index-driven page read: the read-plan tests
// of the outbox (test/integration/events/event-read-plans.test.ts) and of the transfer histories
// (test/integration/ledger/transfer-read-plans.test.ts).

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  /** With EXPLAIN ANALYZE: the rows out, and the times the node ran (0: never executed). */
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

/** Every node of the plan, with its parent. */
export function nodesOf(
  node: PlanNode,
  parent: PlanNode | null = null,
): { node: PlanNode; parent: PlanNode | null }[] {
  return [{ node, parent }, ...(node.Plans ?? []).flatMap((child) => nodesOf(child, node))];
}

/**
 * What is wrong with the plan of a page read of `relation` (empty when nothing): each read of the
 * table is an index scan right under its LIMIT, and nothing is sorted but the merge of branches. A
 * table partitioned by range of its order (the outbox, `outbox_event_p<first id>`:
 * src/db/outbox-partitions.ts) is read by an Append of its partitions' index scans in their order under
 * the LIMIT, which stops in the first partitions that fill the page (a Merge Append, which starts every
 * partition's scan, is a problem).
 */
export function pagePlanProblems(plan: PlanNode, relation: string): string[] {
  const problems: string[] = [];
  const isPartition = (name: string | undefined) =>
    name !== undefined && new RegExp(`^${relation}_p\\d+$`).test(name);
  const parents = new Map<PlanNode, PlanNode | null>(nodesOf(plan).map(({ node, parent }) => [node, parent]));
  for (const { node, parent } of nodesOf(plan)) {
    const name = node['Relation Name'];
    if (name === relation || isPartition(name)) {
      // A partition's scan sits in the Append of the partitions; the Append is what the LIMIT stops.
      const above =
        isPartition(name) && parent?.['Node Type'] === 'Append' ? (parents.get(parent) ?? null) : parent;
      if (node['Node Type'] !== 'Index Scan' && node['Node Type'] !== 'Index Only Scan')
        problems.push(`${node['Node Type']} on ${name}`);
      else if (above?.['Node Type'] !== 'Limit')
        problems.push(
          `${node['Node Type']} using ${node['Index Name']} under ${above?.['Node Type'] ?? 'nothing'}`,
        );
    }
    if (node['Node Type'] === 'Sort' && node.Plans?.[0]['Node Type'] !== 'Append')
      problems.push(`Sort of ${node.Plans?.[0]['Node Type']}`);
  }
  return problems;
}

/** The partitions of `relation` a plan reads (`<relation>_p<first id>`). */
export function partitionsRead(plan: PlanNode, relation: string): string[] {
  const names = nodesOf(plan)
    .map(({ node }) => node['Relation Name'])
    .filter((name): name is string => typeof name === 'string' && name.startsWith(`${relation}_`));
  return [...new Set(names)].sort();
}
