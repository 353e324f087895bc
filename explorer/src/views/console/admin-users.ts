// Users and roles: change a user's role (PUT /api/v1/users/{id}/role, confirmed, saying what follows),
// and the role changes so far from the audit log. The API lists no users: a user is found by id
// (on the audit entries of what they did, or from them: GET /api/v1/me answers it).
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace } from '../../ui/dom.ts';
import { labelled, select, textInput } from '../../ui/field.ts';
import { problemBox } from '../../ui/problem-view.ts';
import { toast } from '../../ui/toast.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { auditList } from './audit-log.ts';
import { consolePage, panel } from './frame.ts';

type Role = Schemas['Role'];

const ROLES: Record<Role, string> = {
  player: 'player: holds, trades and crafts',
  studio: 'studio: runs collections, mints, freezes, edits metadata',
  oracle: 'oracle: posts prices',
  admin: 'admin: everything, for every studio, and roles',
};

function isRole(value: string): value is Role {
  return value in ROLES;
}

export function usersView(ctx: ViewContext): Cleanup {
  const changes = auditList(ctx.session, ctx.signal, 10);
  const userId = textInput('user-id', {
    required: true,
    maxlength: 64,
    placeholder: 'usr_…',
    spellcheck: 'false',
    class: 'address-input',
  });
  const role = select('role', Object.entries(ROLES), 'studio');
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'form-grid' },
    labelled('User id', userId, 'As the audit log shows it (usr_ and 26 characters).'),
    labelled('New role', role),
    status,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Change role')),
  );
  const shown = consolePage(
    ctx,
    'admin',
    'Users and roles',
    panel('change-role', 'Change a role', form),
    panel('role-changes', 'Role changes', changes.element),
  );
  if (!shown) return () => undefined;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const id = userId.value.trim();
    if (!isRole(role.value)) return;
    const newRole = role.value;
    const ok = await confirmAction({
      title: `Make ${id} ${newRole === 'admin' ? 'an' : 'a'} ${newRole}?`,
      consequences: [
        h('p', {}, `${id} gets the ${newRole} role: ${ROLES[newRole].split(': ')[1]}.`),
        h(
          'p',
          {},
          'Their API keys act with the new role at once; their refresh tokens are revoked, so they sign in again to get the new role’s scopes.',
        ),
        h('p', { class: 'muted' }, 'Recorded in the audit log. The last admin cannot be demoted.'),
      ],
      confirmLabel: `Make ${newRole}`,
      danger: newRole === 'admin' || newRole === 'player',
    });
    if (!ok) return;
    try {
      const user = unwrap(
        await ctx.session.api.PUT('/api/v1/users/{user_id}/role', {
          params: { path: { user_id: id } },
          body: { role: newRole },
        }),
      );
      replace(
        status,
        h(
          'p',
          { class: 'status completed', 'data-testid': 'role-changed' },
          `${user.username} (${user.id}) is now ${user.role}.`,
        ),
      );
      toast(`${user.username} is now ${user.role}.`);
      void changes.load({ action: 'user.roleChanged' });
    } catch (error) {
      replace(status, problemBox(problemOf(error), { '/path/user_id': 'User id', '/body/role': 'New role' }));
    }
  });
  void changes.load({ action: 'user.roleChanged' });
  return () => undefined;
}
