// The chain indexer's state: per chain from GET /readyz (this instance's indexer: state, head,
// indexed block, lag), per contract from GET /api/v1/collections/{id}/contracts (status, since
// which block, why suspended), for every collection.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { formatTime, shortAddress } from '../../ui/format.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { allCollections } from './collections.ts';
import { consolePage, panel } from './frame.ts';

type ChainContract = Schemas['ChainContract'];

const STATES: Record<string, string> = {
  starting: 'starting',
  standby: 'standby: another instance holds the indexer lease',
  backfilling: 'backfilling: a contract is behind',
  following: 'following the head',
  paused: 'paused: the node errs or times out (retried)',
  stopped: 'stopped',
};

export function chainsView(ctx: ViewContext): Cleanup {
  const chains = h('div', { class: 'table-scroll' }, skeleton('row', 2));
  const contracts = h('div', { class: 'table-scroll' }, skeleton('row', 3));
  if (
    !consolePage(
      ctx,
      'admin',
      'Chain indexer',
      panel('chains', 'Chains (this instance)', chains),
      panel('contracts', 'Contracts', contracts),
    )
  )
    return () => undefined;

  void (async () => {
    try {
      const result = await ctx.session.api.GET('/readyz', { signal: ctx.signal });
      const list = (result.data ?? (result.error as unknown as typeof result.data))?.chains ?? [];
      replace(
        chains,
        list.length === 0
          ? emptyState('No chain is configured (CHAINS): every asset lives on the ledger.')
          : h(
              'table',
              {},
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Chain', 'State', 'Head', 'Indexed', 'Behind'].map((name) =>
                    h('th', { scope: 'col' }, name),
                  ),
                ),
              ),
              h(
                'tbody',
                {},
                list.map((chain) =>
                  h(
                    'tr',
                    { 'data-chain-id': String(chain.chainId) },
                    h('td', {}, String(chain.chainId)),
                    h('td', {}, STATES[chain.state] ?? chain.state),
                    h('td', { class: 'number' }, chain.head === null ? '—' : String(chain.head)),
                    h(
                      'td',
                      { class: 'number' },
                      chain.indexedBlock === null ? '—' : String(chain.indexedBlock),
                    ),
                    h(
                      'td',
                      { class: 'number' },
                      chain.lag === null ? '—' : `${chain.lag} block${chain.lag === 1 ? '' : 's'}`,
                    ),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(chains, problemBox(problemOf(error)));
    }
  })();

  void (async () => {
    try {
      const collections = await allCollections(ctx.session, ctx.signal);
      const lists = await Promise.all(
        collections.map(
          async (collection) =>
            unwrap(
              await ctx.session.api.GET('/api/v1/collections/{collection_id}/contracts', {
                params: { path: { collection_id: collection.id } },
                signal: ctx.signal,
              }),
            ).data,
        ),
      );
      const all: ChainContract[] = lists.flat();
      replace(
        contracts,
        all.length === 0
          ? emptyState('No contract is registered to any collection.')
          : h(
              'table',
              {},
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Chain', 'Contract', 'Collection', 'Status', 'From block'].map((name) =>
                    h('th', { scope: 'col' }, name),
                  ),
                ),
              ),
              h(
                'tbody',
                {},
                all.map((contract) =>
                  h(
                    'tr',
                    {},
                    h('td', {}, String(contract.chainId)),
                    h(
                      'td',
                      {},
                      `${contract.standard.toUpperCase()} ${contract.name ?? ''} `,
                      h('code', { title: contract.address }, shortAddress(contract.address)),
                    ),
                    h('td', {}, contract.collection),
                    h(
                      'td',
                      {},
                      contract.status === 'active'
                        ? 'indexed'
                        : `suspended${contract.suspendedAt ? ` ${formatTime(contract.suspendedAt)}` : ''}${contract.suspendedReason ? `: ${contract.suspendedReason}` : ''}`,
                    ),
                    h('td', { class: 'number' }, String(contract.fromBlock)),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(contracts, problemBox(problemOf(error)));
    }
  })();
  return () => undefined;
}
