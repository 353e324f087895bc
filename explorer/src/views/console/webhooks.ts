// The caller's webhooks: list, add (its signing secret shown once), turn off and on, delete (confirmed),
// and each one's deliveries with their attempts and answers, any of which can be sent again.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { labelled, textInput } from '../../ui/field.ts';
import { formatTime } from '../../ui/format.ts';
import { CursorPager } from '../../ui/pager.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import { showSecretOnce } from '../../ui/secret.ts';
import { toast } from '../../ui/toast.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { consolePage, panel, showList } from './frame.ts';

type Webhook = Schemas['Webhook'];

export function webhooksView(ctx: ViewContext): Cleanup {
  const list = h('div', { class: 'stack' }, skeleton('row', 2));
  const url = textInput('webhook-url', {
    type: 'url',
    required: true,
    maxlength: 2048,
    placeholder: 'https://game.example.com/hooks/gats',
  });
  const types = textInput('webhook-types', {
    maxlength: 500,
    placeholder: 'newNFT, newTransfer (empty: every kind)',
  });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'form-grid' },
    labelled(
      'Endpoint URL',
      url,
      'HTTPS, reachable from the service; each POST is signed (Standard Webhooks).',
    ),
    labelled('Event kinds (comma separated)', types),
    status,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Add webhook')),
  );
  if (
    !consolePage(
      ctx,
      'studio',
      'Webhooks',
      panel('webhooks', 'Your webhooks', list),
      panel('new-webhook', 'New webhook', form),
    )
  )
    return () => undefined;

  const load = () =>
    showList(
      list,
      ctx.signal,
      async () => unwrap(await ctx.session.api.GET('/api/v1/webhooks', { signal: ctx.signal })),
      card,
      'No webhook yet: add one below to hear about changes without polling.',
    );

  function card(webhook: Webhook): HTMLElement {
    const deliveries = h('div', { class: 'table-scroll' });
    const pager = new CursorPager(`deliveries of ${webhook.url}`, () => void loadDeliveries());
    const show = h(
      'button',
      { type: 'button', class: 'secondary small', 'aria-expanded': 'false' },
      'Deliveries',
    );
    const toggle = h(
      'button',
      { type: 'button', class: 'secondary small' },
      webhook.enabled ? 'Turn off' : 'Turn on',
    );
    const remove = h('button', { type: 'button', class: 'danger small' }, 'Delete');
    const problems = h('div', { 'aria-live': 'polite' });
    const path = { params: { path: { webhook_id: webhook.id } } };

    async function loadDeliveries(): Promise<void> {
      try {
        const page = unwrap(
          await ctx.session.api.GET('/api/v1/webhooks/{webhook_id}/deliveries', {
            params: { path: { webhook_id: webhook.id }, query: { limit: 10, cursor: pager.cursor } },
            signal: ctx.signal,
          }),
        );
        pager.update(page.next_cursor);
        replace(
          deliveries,
          page.data.length === 0
            ? emptyState('No delivery yet.')
            : h(
                'table',
                {},
                h(
                  'thead',
                  {},
                  h(
                    'tr',
                    {},
                    ['Event', 'Status', 'Attempts', 'Last answer', ''].map((name) =>
                      h('th', { scope: 'col' }, name),
                    ),
                  ),
                ),
                h(
                  'tbody',
                  {},
                  page.data.map((delivery) => {
                    const again = h(
                      'button',
                      {
                        type: 'button',
                        class: 'secondary small',
                        'aria-label': `Send event ${delivery.eventId} again`,
                      },
                      'Send again',
                    );
                    again.addEventListener('click', async () => {
                      again.disabled = true;
                      try {
                        unwrap(
                          await ctx.session.api.POST(
                            '/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
                            { params: { path: { webhook_id: webhook.id, delivery_id: delivery.id } } },
                          ),
                        );
                        toast(`Event ${delivery.eventId} queued for delivery again.`);
                        void loadDeliveries();
                      } catch (error) {
                        replace(problems, problemBox(problemOf(error)));
                        again.disabled = false;
                      }
                    });
                    return h(
                      'tr',
                      {},
                      h('td', {}, `${delivery.eventType} #${delivery.eventId}`),
                      h(
                        'td',
                        {},
                        h(
                          'span',
                          {
                            class: `status ${delivery.status === 'succeeded' ? 'completed' : delivery.status}`,
                          },
                          delivery.status,
                        ),
                      ),
                      h('td', { class: 'number' }, String(delivery.attempts)),
                      h(
                        'td',
                        {},
                        delivery.lastStatusCode
                          ? `HTTP ${delivery.lastStatusCode}`
                          : (delivery.lastError ?? '—'),
                        delivery.lastAttemptAt
                          ? h('span', { class: 'muted small' }, ` ${formatTime(delivery.lastAttemptAt)}`)
                          : null,
                      ),
                      h('td', { class: 'actions' }, again),
                    );
                  }),
                ),
              ),
        );
      } catch (error) {
        if (!ctx.signal.aborted) replace(deliveries, problemBox(problemOf(error)));
      }
    }

    show.addEventListener('click', () => {
      const open = show.getAttribute('aria-expanded') === 'true';
      show.setAttribute('aria-expanded', String(!open));
      deliveries.hidden = open;
      pager.element.hidden = open;
      if (!open) void loadDeliveries();
    });
    toggle.addEventListener('click', async () => {
      if (
        webhook.enabled &&
        !(await confirmAction({
          title: 'Turn this webhook off?',
          consequences: h(
            'p',
            {},
            `Nothing more is posted to ${webhook.url} until it is turned on again; events meanwhile can be replayed then.`,
          ),
          confirmLabel: 'Turn off',
        }))
      )
        return;
      try {
        unwrap(
          webhook.enabled
            ? await ctx.session.api.POST('/api/v1/webhooks/{webhook_id}/disable', path)
            : await ctx.session.api.POST('/api/v1/webhooks/{webhook_id}/enable', path),
        );
        void load();
      } catch (error) {
        replace(problems, problemBox(problemOf(error)));
      }
    });
    remove.addEventListener('click', async () => {
      if (
        !(await confirmAction({
          title: 'Delete this webhook?',
          consequences: h(
            'p',
            {},
            `${webhook.url} receives nothing more, its pending deliveries are dropped, and its secret stops working. This cannot be undone.`,
          ),
          confirmLabel: 'Delete webhook',
          danger: true,
        }))
      )
        return;
      try {
        unwrap(await ctx.session.api.DELETE('/api/v1/webhooks/{webhook_id}', path));
        toast('Webhook deleted.');
        void load();
      } catch (error) {
        replace(problems, problemBox(problemOf(error)));
      }
    });
    deliveries.hidden = true;
    pager.element.hidden = true;
    return h(
      'article',
      { class: 'record', 'data-webhook-id': webhook.id },
      h('p', {}, h('code', {}, webhook.url), ' ', h('span', { class: 'badge' }, webhook.status)),
      h(
        'p',
        { class: 'muted small' },
        webhook.eventTypes.join(', ') || 'every event kind',
        ` · since ${formatTime(webhook.createdAt)}`,
      ),
      h('div', { class: 'asset-actions' }, show, toggle, remove),
      problems,
      deliveries,
      pager.element,
    );
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const eventTypes = types.value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean) as Schemas['EventType'][];
    try {
      const created = unwrap(
        await ctx.session.api.POST('/api/v1/webhooks', {
          body: { url: url.value.trim(), ...(eventTypes.length ? { eventTypes } : {}) },
        }),
      );
      form.reset();
      replace(status);
      showSecretOnce(
        'Webhook added',
        'Signing secret',
        created.secret,
        'Verify each POST with it (the webhook-signature header, Standard Webhooks).',
      );
      void load();
    } catch (error) {
      replace(
        status,
        problemBox(problemOf(error), { '/body/url': 'Endpoint URL', '/body/eventTypes': 'Event kinds' }),
      );
    }
  });
  void load();
  return () => undefined;
}
