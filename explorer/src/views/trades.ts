// The Trades panel (issue 21): the signed-in player's trades, newest first, with Accept (for trades
// addressed to one of their wallets) and Refuse / Cancel (either party, while open). Each action is
// one API call; the list reloads after it, and a refused action shows its problem.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import { PAGE_SIZE } from '../config.ts';
import { paths } from '../router.ts';
import { h, replace, skeleton } from '../ui/dom.ts';
import { formatTime, shortAddress } from '../ui/format.ts';
import { CursorPager } from '../ui/pager.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';
import { toast } from '../ui/toast.ts';
import { assetImage } from './asset-card.ts';
import type { Cleanup, ViewContext } from './context.ts';

type Trade = Schemas['Trade'];
type TradeItem = Schemas['TradeItem'];
type Asset = Schemas['Asset'];

/** What a trade's line says after its status: when an open trade expires, or when it closed. */
function tradeTime(trade: Trade): string {
  if (trade.status === 'open') return ` · expires ${formatTime(trade.expiresAt)}`;
  if (trade.status === 'expired') return ` · expired ${formatTime(trade.expiresAt)}`;
  return ` · ${trade.status} ${formatTime(trade.updatedAt)}`;
}

export function tradesView(ctx: ViewContext): Cleanup {
  // Each item named by its asset (name and picture), read once per view; its id until then, or if
  // the read fails.
  const assets = new Map<string, Promise<Asset | null>>();
  const assetOf = (assetId: string) => {
    let asset = assets.get(assetId);
    if (!asset) {
      asset = ctx.session.api
        .GET('/assets/{asset_id}', { params: { path: { asset_id: assetId } }, signal: ctx.signal })
        .then(
          (result) => result.data ?? null,
          () => null,
        );
      assets.set(assetId, asset);
    }
    return asset;
  };

  function items(list: TradeItem[]): HTMLElement {
    return h(
      'ul',
      { class: 'trade-items' },
      list.map((item) => {
        const link = h('a', { href: paths.asset(item.assetId), 'data-asset-id': item.assetId }, item.assetId);
        const entry = h('li', {}, `${item.amount} × `, link);
        void assetOf(item.assetId).then((asset) => {
          if (!asset) return;
          link.textContent = asset.name;
          entry.prepend(assetImage(asset, 'trade-item-image'));
        });
        return entry;
      }),
    );
  }

  const body = h('div', { class: 'trade-list', 'aria-busy': 'true', 'data-testid': 'trades' });
  const status = h('div', { role: 'status' });
  const pager = new CursorPager('trades', () => void load());
  replace(
    ctx.root,
    h('h1', {}, 'Trades'),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'trades-heading' },
      h('h2', { id: 'trades-heading' }, 'Your trades'),
      status,
      body,
      pager.element,
    ),
  );
  body.append(...skeleton('row', 2));

  function actionButton(trade: Trade, action: 'accept' | 'cancel', label: string): HTMLButtonElement {
    const button = h(
      'button',
      { type: 'button', class: action === 'accept' ? 'small' : 'secondary small' },
      label,
    );
    button.setAttribute('aria-label', `${label} trade ${trade.id}`);
    const guard = new SubmissionGuard();
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        if (action === 'accept') {
          await guard.run({ id: trade.id }, async (key) =>
            unwrap(
              await ctx.session.api.POST('/api/v1/trades/{trade_id}/accept', {
                params: { path: { trade_id: trade.id }, header: { 'Idempotency-Key': key } },
              }),
            ),
          );
          toast('Trade accepted: both sides moved.');
        } else {
          unwrap(
            await ctx.session.api.POST('/api/v1/trades/{trade_id}/cancel', {
              params: { path: { trade_id: trade.id } },
            }),
          );
          toast(label === 'Refuse' ? 'Trade refused.' : 'Trade cancelled.');
        }
        replace(status);
        await load();
      } catch (error) {
        replace(status, problemBox(problemOf(error)));
        button.disabled = false;
      }
    });
    return button;
  }

  function row(trade: Trade): HTMLElement {
    const toMe = ctx.session.controls(trade.toWallet);
    const open = trade.status === 'open';
    return h(
      'article',
      { class: 'trade', 'data-trade-id': trade.id, 'data-status': trade.status },
      h(
        'p',
        {},
        h('span', { class: 'badge' }, trade.status),
        ' ',
        shortAddress(trade.fromWallet),
        ' offers ',
        toMe ? 'you' : shortAddress(trade.toWallet),
        tradeTime(trade),
      ),
      h(
        'div',
        { class: 'trade-sides' },
        h('div', {}, h('h3', {}, 'Gives'), items(trade.offer)),
        h('div', {}, h('h3', {}, 'For'), items(trade.request)),
      ),
      open
        ? h(
            'p',
            { class: 'actions' },
            toMe ? actionButton(trade, 'accept', 'Accept') : null,
            ' ',
            actionButton(trade, 'cancel', toMe ? 'Refuse' : 'Cancel'),
          )
        : null,
    );
  }

  async function load(): Promise<void> {
    body.setAttribute('aria-busy', 'true');
    try {
      const page = unwrap(
        await ctx.session.api.GET('/api/v1/trades', {
          params: { query: { cursor: pager.cursor, limit: PAGE_SIZE.transfers } },
          signal: ctx.signal,
        }),
      );
      replace(
        body,
        page.data.length ? page.data.map(row) : emptyState('No trades yet: none proposed by you or to you.'),
      );
      pager.update(page.next_cursor);
    } catch (error) {
      if (!ctx.signal.aborted) replace(body, problemBox(problemOf(error)));
    } finally {
      body.setAttribute('aria-busy', 'false');
    }
  }

  void load();
  return () => undefined;
}
