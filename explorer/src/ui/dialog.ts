// A modal built on <dialog>: the browser traps focus inside it, Escape closes it, and focus returns
// to the control that opened it.
import { type Child, h } from './dom.ts';

export interface Dialog {
  element: HTMLDialogElement;
  close(): void;
}

export function openDialog(title: string, ...content: Child[]): Dialog {
  const opener = document.activeElement as HTMLElement | null;
  const heading = h('h2', { id: `dialog-title-${Date.now()}` }, title);
  const closeButton = h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Close' }, '×');
  const element = h(
    'dialog',
    { 'aria-labelledby': heading.id },
    h('div', { class: 'dialog-header' }, heading, closeButton),
    content,
  );
  closeButton.addEventListener('click', () => element.close());
  element.addEventListener('close', () => {
    element.remove();
    opener?.focus();
  });
  document.body.append(element);
  element.showModal();
  return { element, close: () => element.close() };
}
