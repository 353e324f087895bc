// A secret the service shows once (a client secret, a webhook signing secret): in a dialog that says
// so, selectable and copyable, never stored by the explorer.
import { openDialog } from './dialog.ts';
import { h, uid } from './dom.ts';

export function showSecretOnce(title: string, label: string, secret: string, usage: string): void {
  const input = h('input', {
    id: uid('secret'),
    readonly: true,
    value: secret,
    class: 'address-input',
    'data-testid': 'secret',
  });
  const copy = h('button', { type: 'button', class: 'secondary' }, 'Copy');
  const status = h('span', { class: 'muted small', 'aria-live': 'polite' });
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(secret);
      status.textContent = 'Copied.';
    } catch {
      input.select();
      status.textContent = 'Selected: copy it with Ctrl+C.';
    }
  });
  const done = h('button', { type: 'button' }, 'I have stored it');
  const dialog = openDialog(
    title,
    h(
      'p',
      { class: 'warning' },
      'Shown once: the service keeps only a digest. Store it now; if it is lost, make a new one.',
    ),
    h('div', { class: 'field' }, h('label', { for: input.id }, label), input),
    h('p', { class: 'muted small' }, usage),
    h('div', { class: 'form-actions' }, status, copy, done),
  );
  done.addEventListener('click', () => dialog.close());
  input.focus();
  input.select();
}
