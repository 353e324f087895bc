// Shows an API problem in words: its title, its detail, and each invalid field by its label.
import type { Problem } from '../api/problem.ts';
import { h } from './dom.ts';

/** `fieldLabels` maps a problem pointer (`/body/to`) to the label the user sees (`Recipient`). */
export function problemBox(problem: Problem, fieldLabels: Record<string, string> = {}): HTMLElement {
  const fields = problem.errors ?? [];
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('p', { class: 'problem-title' }, problem.title),
    problem.detail ? h('p', {}, problem.detail) : null,
    fields.length > 0
      ? h(
          'ul',
          {},
          fields.map((field) =>
            h('li', {}, h('strong', {}, `${fieldLabels[field.pointer] ?? field.pointer}: `), field.detail),
          ),
        )
      : null,
    problem.requestId ? h('p', { class: 'muted small' }, `Request id ${problem.requestId}`) : null,
  );
}

/** A section's empty state: says plainly that there is nothing, and why that is fine. */
export function emptyState(text: string): HTMLElement {
  return h('p', { class: 'empty' }, text);
}
