// A transfer history: an asset's (GET /api/v1/transfers?assetId=) on its page, or a wallet's
// (?wallet=: what it sent and received, the NFTs minted to it included, each row naming its asset)
// on the wallet's page; newest first, paged with the API's cursors, read again by `reload` when a
// live event says it changed.

import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { PAGE_SIZE } from '../config.ts';
import { paths } from '../router.ts';
import { h, replace, skeleton } from '../ui/dom.ts';
import { formatTime, shortAddress, ZERO_ADDRESS } from '../ui/format.ts';
import { CursorPager } from '../ui/pager.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { isOnChainId } from './asset-card.ts';

type Filter =
  | { assetId: string }
  | {
      wallet: string;
      /** An asset's name for its row (a transfer names its asset by id only). */
      nameOf(assetId: string): Promise<string>;
    };

/** A wallet, linked to its page; the zero address as "minted" (as a sender) or "burned" (as a recipient). */
export function walletLink(address: string, zero: 'minted' | 'burned' = 'minted'): HTMLElement {
  if (address === ZERO_ADDRESS) return h('span', { class: 'muted' }, zero);
  return h('a', { href: paths.wallet(address), title: address }, h('code', {}, shortAddress(address)));
}

export function transferHistory(
  session: Session,
  filter: Filter,
  signal: AbortSignal,
): { list: HTMLElement; pager: HTMLElement; reload(): Promise<void> } {
  const list = h('div', { class: 'transfers' }, skeleton('row', 3));
  const pager = new CursorPager('transfers', () => void reload());
  const perWallet = 'wallet' in filter;

  async function reload(): Promise<void> {
    try {
      const query =
        'wallet' in filter
          ? { wallet: filter.wallet, cursor: pager.cursor, limit: PAGE_SIZE.transfers }
          : { assetId: filter.assetId, cursor: pager.cursor, limit: PAGE_SIZE.transfers };
      const page = unwrap(await session.api.GET('/api/v1/transfers', { params: { query }, signal }));
      pager.update(page.next_cursor);
      replace(
        list,
        page.data.length === 0
          ? emptyState('No transfer yet.')
          : h(
              'table',
              {},
              h('caption', { class: 'visually-hidden' }, 'Transfers, newest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  [...(perWallet ? ['Asset'] : []), 'When', 'From', 'To', 'Amount', 'Status'].map((name) =>
                    h('th', { scope: 'col' }, name),
                  ),
                ),
              ),
              h(
                'tbody',
                {},
                page.data.map((transfer) => {
                  const assetCell = perWallet
                    ? h('td', {}, h('a', { href: paths.asset(transfer.assetId) }, transfer.assetId))
                    : null;
                  if (assetCell && 'nameOf' in filter) {
                    void filter.nameOf(transfer.assetId).then((name) => {
                      const link = assetCell.firstElementChild;
                      if (link) link.textContent = name;
                    });
                  }
                  return h(
                    'tr',
                    { 'data-transfer-id': transfer.id },
                    assetCell,
                    h('td', {}, h('time', { datetime: transfer.createdAt }, formatTime(transfer.createdAt))),
                    h('td', {}, walletLink(transfer.from)),
                    h('td', {}, walletLink(transfer.to, 'burned')),
                    h('td', { class: 'number' }, transfer.amount),
                    h(
                      'td',
                      {},
                      h('span', { class: `status ${transfer.status}` }, transfer.status),
                      isOnChainId(transfer.assetId) ? ' ' : null,
                      isOnChainId(transfer.assetId)
                        ? h('span', { class: 'badge chain-badge' }, 'on chain')
                        : null,
                    ),
                  );
                }),
              ),
            ),
      );
    } catch (error) {
      if (!signal.aborted) replace(list, problemBox(problemOf(error)));
    }
  }

  return { list, pager: pager.element, reload };
}
