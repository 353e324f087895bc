// A labelled form control (label, control, optional hint wired by aria-describedby), and the small
// builders the console's forms repeat: a text input, a checkbox, a select.
import { h, uid } from './dom.ts';

export function labelled(label: string, control: HTMLElement & { id: string }, hint?: string): HTMLElement {
  const hintId = hint ? `${control.id}-hint` : undefined;
  if (hintId) control.setAttribute('aria-describedby', hintId);
  return h(
    'div',
    { class: 'field' },
    h('label', { for: control.id }, label),
    control,
    hint ? h('p', { id: hintId, class: 'field-hint' }, hint) : null,
  );
}

export function textInput(
  name: string,
  attrs: Record<string, string | number | boolean> = {},
): HTMLInputElement {
  return h('input', { id: uid(name), name, autocomplete: 'off', ...attrs });
}

/** A checkbox with its label after it (clicking the words toggles it). */
export function checkbox(
  label: string,
  name: string,
  checked = false,
): { root: HTMLElement; input: HTMLInputElement } {
  const input = h('input', { id: uid(name), name, type: 'checkbox', checked });
  return { root: h('div', { class: 'field check' }, input, h('label', { for: input.id }, label)), input };
}

export function select(
  name: string,
  options: readonly (readonly [value: string, text: string])[],
  value?: string,
): HTMLSelectElement {
  const element = h(
    'select',
    { id: uid(name), name },
    options.map(([optionValue, text]) => h('option', { value: optionValue }, text)),
  );
  if (value !== undefined) element.value = value;
  return element;
}
