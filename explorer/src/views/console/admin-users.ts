// Users and roles: the service's users (GET /api/v1/users, filtered by username prefix and role, a
// page at a time), a role change in a user's row (PUT /api/v1/users/{id}/role, confirmed, saying
// what follows), and the role changes so far from the audit log.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { labelled, select, textInput } from '../../ui/field.ts';
import { formatTime } from '../../ui/format.ts';
import { CursorPager } from '../../ui/pager.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import { toast } from '../../ui/toast.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { auditList } from './audit-log.ts';
import { consolePage, panel } from './frame.ts';

type Role = Schemas['Role'];
type User = Schemas['User'];

const ROLES: Record<Role, string> = {
  player: 'holds, trades and crafts',
  studio: 'runs collections: mints, freezes, edits metadata',
  oracle: 'posts prices',
  admin: 'everything, for every studio, and roles',
};

function isRole(value: string): value is Role {
  return value in ROLES;
}

export function usersView(ctx: ViewContext): Cleanup {
  const changes = auditList(ctx.session, ctx.signal, 10);
  const users = h('div', { class: 'table-scroll', 'data-testid': 'users' }, skeleton('row', 3));
  const pager = new CursorPager('users', () => void load());
  const username = textInput('username', { maxlength: 32, placeholder: 'ali', spellcheck: 'false' });
  const roleFilter = select('role-filter', [
    ['', 'Any role'],
    ...Object.keys(ROLES).map((role) => [role, role] as const),
  ]);
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Find users' },
    labelled('Username starts with', username),
    labelled('Role', roleFilter),
    h('div', { class: 'filter-actions' }, h('button', { type: 'submit' }, 'Find')),
  );
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const shown = consolePage(
    ctx,
    'admin',
    'Users and roles',
    panel('users', 'Users', filters, status, users, pager.element),
    panel('role-changes', 'Role changes', changes.element),
  );
  if (!shown) return () => undefined;

  async function changeRole(user: User, newRole: Role): Promise<void> {
    const ok = await confirmAction({
      title: `Make ${user.username} ${newRole === 'admin' ? 'an' : 'a'} ${newRole}?`,
      consequences: [
        h('p', {}, `${user.username} (${user.id}) goes from ${user.role} to ${newRole}: ${ROLES[newRole]}.`),
        h(
          'p',
          {},
          'Their API keys act with the new role at once; their refresh tokens are revoked, so they sign in again to get the new role’s scopes.',
        ),
        h('p', { class: 'muted' }, 'Recorded in the audit log. The last admin cannot be demoted.'),
      ],
      confirmLabel: `Make ${user.username} ${newRole}`,
      danger: newRole === 'admin' || user.role === 'admin',
    });
    if (!ok) return;
    try {
      const changed = unwrap(
        await ctx.session.api.PUT('/api/v1/users/{user_id}/role', {
          params: { path: { user_id: user.id } },
          body: { role: newRole },
        }),
      );
      replace(
        status,
        h(
          'p',
          { class: 'status completed', 'data-testid': 'role-changed' },
          `${changed.username} is now ${changed.role}.`,
        ),
      );
      toast(`${changed.username} is now ${changed.role}.`);
      void load();
      void changes.load({ action: 'user.roleChanged' });
    } catch (error) {
      replace(status, problemBox(problemOf(error)));
    }
  }

  function row(user: User): HTMLElement {
    const role = select(
      `role-${user.id}`,
      Object.keys(ROLES).map((value) => [value, value] as const),
      user.role,
    );
    role.setAttribute('aria-label', `Role of ${user.username}`);
    role.classList.add('role-select');
    const change = h('button', { type: 'button', class: 'small', disabled: true }, 'Change role');
    change.setAttribute('aria-label', `Change the role of ${user.username}`);
    role.addEventListener('change', () => {
      change.disabled = role.value === user.role;
    });
    change.addEventListener('click', () => {
      if (isRole(role.value) && role.value !== user.role) void changeRole(user, role.value);
    });
    return h(
      'tr',
      { 'data-user-id': user.id, 'data-role': user.role },
      h('td', {}, h('strong', {}, user.username), h('div', { class: 'muted small' }, h('code', {}, user.id))),
      h('td', {}, h('div', { class: 'role-change' }, role, change)),
      h('td', { class: 'small' }, formatTime(user.createdAt)),
      h('td', { class: 'number' }, String(user.wallets.length)),
    );
  }

  async function load(): Promise<void> {
    users.setAttribute('aria-busy', 'true');
    try {
      const page = unwrap(
        await ctx.session.api.GET('/api/v1/users', {
          params: {
            query: {
              limit: 20,
              cursor: pager.cursor,
              username: username.value.trim() || undefined,
              role: isRole(roleFilter.value) ? roleFilter.value : undefined,
            },
          },
          signal: ctx.signal,
        }),
      );
      pager.update(page.next_cursor);
      replace(
        users,
        page.data.length === 0
          ? emptyState('No user matches.')
          : h(
              'table',
              {},
              h('caption', { class: 'visually-hidden' }, 'Users, oldest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['User', 'Role', 'Since', 'Wallets'].map((name) => h('th', { scope: 'col' }, name)),
                ),
              ),
              h('tbody', {}, page.data.map(row)),
            ),
      );
    } catch (error) {
      if (!ctx.signal.aborted)
        replace(users, problemBox(problemOf(error), { '/query/username': 'Username starts with' }));
    } finally {
      users.setAttribute('aria-busy', 'false');
    }
  }

  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    pager.reset();
    void load();
  });
  void load();
  void changes.load({ action: 'user.roleChanged' });
  return () => undefined;
}
