// Asks before an action that destroys, freezes or changes who may do what: the dialog says what will
// happen, in words, and the action runs only on the explicit confirm button (Escape or Cancel: nothing).
import { openDialog } from './dialog.ts';
import { type Child, h } from './dom.ts';

export interface ConfirmOptions {
  title: string;
  /** What will happen, and what it means for whom. */
  consequences: Child;
  /** The confirm button's words: the action itself ("Freeze Sword of Dawn"), never "OK". */
  confirmLabel: string;
  /** Styles the confirm button as destructive. */
  danger?: boolean;
}

export function confirmAction(options: ConfirmOptions): Promise<boolean> {
  return new Promise((resolve) => {
    let confirmed = false;
    const cancel = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
    const confirm = h(
      'button',
      { type: 'button', class: options.danger ? 'danger' : '' },
      options.confirmLabel,
    );
    const dialog = openDialog(
      options.title,
      h('div', { class: 'stack confirm-text' }, options.consequences),
      h('div', { class: 'form-actions' }, cancel, confirm),
    );
    dialog.element.setAttribute('role', 'alertdialog');
    cancel.addEventListener('click', () => dialog.close());
    confirm.addEventListener('click', () => {
      confirmed = true;
      dialog.close();
    });
    dialog.element.addEventListener('close', () => resolve(confirmed));
    // The safe choice has the focus: Enter does not confirm by accident.
    cancel.focus();
  });
}
