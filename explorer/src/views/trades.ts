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
import type { Cleanup, ViewContext } from './context.ts';

type Trade = Schemas['Trade'];
type TradeItem = Schemas['TradeItem'];

function items(list: TradeItem[]): HTMLElement {
  return h(
    'ul',
    { class: 'trade-items' },
    list.map((item) =>
      h('li', {}, `${item.amount} × `, h('a', { href: paths.asset(item.assetId) }, item.assetId)),
    ),
  );
}

export function tradesView(ctx: ViewContext): Cleanup {
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
        ` · expires ${formatTime(trade.expiresAt)}`,
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
