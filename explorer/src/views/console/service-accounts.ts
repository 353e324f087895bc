// The caller's service accounts (machines using the client credentials grant): list, create (its
// first client secret shown once), a new secret (shown once), revoke a secret and delete an account
// (each confirmed, saying what stops working).
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { labelled, select, textInput } from '../../ui/field.ts';
import { formatTime } from '../../ui/format.ts';
import { problemBox } from '../../ui/problem-view.ts';
import { showSecretOnce } from '../../ui/secret.ts';
import { toast } from '../../ui/toast.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { consolePage, panel, showList } from './frame.ts';

type ServiceAccount = Schemas['ServiceAccount'];

const USAGE =
  'POST /token with grant_type=client_credentials, authenticating with the client id and this secret (HTTP Basic).';

export function serviceAccountsView(ctx: ViewContext): Cleanup {
  const list = h('div', { class: 'stack' }, skeleton('row', 2));
  const name = textInput('account-name', { required: true, maxlength: 100, placeholder: 'game-server' });
  const role = select(
    'account-role',
    [
      ['studio', 'studio'],
      ['player', 'player'],
      ['oracle', 'oracle'],
    ],
    'studio',
  );
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'form-grid' },
    labelled('Name', name),
    labelled('Role', role, 'At most your own role; its tokens never carry more.'),
    status,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Create service account')),
  );
  if (
    !consolePage(
      ctx,
      'studio',
      'Service accounts',
      panel('accounts', 'Your service accounts', list),
      panel('new-account', 'New service account', form),
    )
  )
    return () => undefined;

  const load = () =>
    showList(
      list,
      ctx.signal,
      async () => unwrap(await ctx.session.api.GET('/api/v1/service-accounts', { signal: ctx.signal })),
      card,
      'No service account yet: a game server would use one.',
    );

  function card(account: ServiceAccount): HTMLElement {
    const problems = h('div', { 'aria-live': 'polite' });
    const path = { params: { path: { service_account_id: account.id } } };
    const newSecret = h('button', { type: 'button', class: 'secondary small' }, 'New secret');
    const remove = h('button', { type: 'button', class: 'danger small' }, 'Delete account');
    newSecret.addEventListener('click', async () => {
      try {
        const secret = unwrap(
          await ctx.session.api.POST('/api/v1/service-accounts/{service_account_id}/secrets', path),
        );
        showSecretOnce(
          `New secret for ${account.name}`,
          `Client secret (${secret.prefix}…)`,
          secret.secret,
          `Client id ${account.id}. ${USAGE} The older secrets keep working until you revoke them.`,
        );
        void load();
      } catch (error) {
        replace(problems, problemBox(problemOf(error)));
      }
    });
    remove.addEventListener('click', async () => {
      if (
        !(await confirmAction({
          title: `Delete ${account.name}?`,
          consequences: h(
            'p',
            {},
            `Its secrets stop working and its tokens are refused: whatever runs as ${account.id} loses access now. This cannot be undone.`,
          ),
          confirmLabel: `Delete ${account.name}`,
          danger: true,
        }))
      )
        return;
      try {
        unwrap(await ctx.session.api.DELETE('/api/v1/service-accounts/{service_account_id}', path));
        toast(`${account.name} deleted.`);
        void load();
      } catch (error) {
        replace(problems, problemBox(problemOf(error)));
      }
    });
    return h(
      'article',
      { class: 'record', 'data-service-account-id': account.id },
      h(
        'p',
        {},
        h('strong', {}, account.name),
        ' ',
        h('span', { class: 'badge' }, account.role),
        ' ',
        h('code', { class: 'small' }, account.id),
      ),
      h(
        'p',
        { class: 'muted small' },
        `Scopes: ${account.scopes.join(', ') || 'none'} · created ${formatTime(account.createdAt)}`,
      ),
      h(
        'ul',
        { class: 'secret-list' },
        account.clientSecrets.map((secret) => {
          const revoke = h(
            'button',
            { type: 'button', class: 'secondary small', 'aria-label': `Revoke secret ${secret.prefix}` },
            'Revoke',
          );
          revoke.addEventListener('click', async () => {
            if (
              !(await confirmAction({
                title: `Revoke secret ${secret.prefix}…?`,
                consequences: h(
                  'p',
                  {},
                  `${account.name} can no longer get tokens with this secret; tokens it already has run until they expire.`,
                ),
                confirmLabel: 'Revoke secret',
                danger: true,
              }))
            )
              return;
            try {
              unwrap(
                await ctx.session.api.DELETE(
                  '/api/v1/service-accounts/{service_account_id}/secrets/{secret_id}',
                  { params: { path: { service_account_id: account.id, secret_id: secret.id } } },
                ),
              );
              toast('Secret revoked.');
              void load();
            } catch (error) {
              replace(problems, problemBox(problemOf(error)));
            }
          });
          return h(
            'li',
            {},
            h('code', {}, `${secret.prefix}…`),
            h('span', { class: 'muted small' }, ` created ${formatTime(secret.createdAt)} `),
            revoke,
          );
        }),
      ),
      h('div', { class: 'asset-actions' }, newSecret, remove),
      problems,
    );
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const created = unwrap(
        await ctx.session.api.POST('/api/v1/service-accounts', {
          body: {
            name: name.value.trim(),
            role: role.value as Schemas['Role'],
            tokenEndpointAuthMethod: 'client_secret_basic',
          },
        }),
      );
      form.reset();
      replace(status);
      if (created.clientSecret)
        showSecretOnce(
          `${created.name} created`,
          'Client secret',
          created.clientSecret,
          `Client id ${created.id}. ${USAGE}`,
        );
      void load();
    } catch (error) {
      replace(status, problemBox(problemOf(error), { '/body/name': 'Name', '/body/role': 'Role' }));
    }
  });
  void load();
  return () => undefined;
}
