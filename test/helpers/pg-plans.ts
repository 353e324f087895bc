// PostgreSQL plans (EXPLAIN (FORMAT JSON)) checked for an index-driven page read: the read-plan tests
// of the outbox (test/integration/events/event-read-plans.test.ts) and of the transfer histories
// (test/integration/ledger/transfer-read-plans.test.ts).

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
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
 * table is an index scan right under its LIMIT, and nothing is sorted but the merge of branches.
 */
export function pagePlanProblems(plan: PlanNode, relation: string): string[] {
  const problems: string[] = [];
  for (const { node, parent } of nodesOf(plan)) {
    if (node['Relation Name'] === relation) {
      if (node['Node Type'] !== 'Index Scan' && node['Node Type'] !== 'Index Only Scan')
        problems.push(`${node['Node Type']} on ${relation}`);
      else if (parent?.['Node Type'] !== 'Limit')
        problems.push(
          `${node['Node Type']} using ${node['Index Name']} under ${parent?.['Node Type'] ?? 'nothing'}`,
        );
    }
    if (node['Node Type'] === 'Sort' && node.Plans?.[0]['Node Type'] !== 'Append')
      problems.push(`Sort of ${node.Plans?.[0]['Node Type']}`);
  }
  return problems;
}
