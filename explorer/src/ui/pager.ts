// Cursor paging (`limit` + opaque `cursor` -> `next_cursor`): remembers the cursors of the pages
// already visited, so "Previous" works although the API only links forward.
import { h } from './dom.ts';

export class CursorPager {
  private readonly cursors: (string | undefined)[] = [undefined];
  private index = 0;
  private nextCursor: string | null = null;
  readonly element: HTMLElement;
  private readonly previousButton: HTMLButtonElement;
  private readonly nextButton: HTMLButtonElement;
  private readonly label: HTMLElement;

  constructor(name: string, onChange: () => void) {
    this.previousButton = h(
      'button',
      { type: 'button', class: 'secondary', 'aria-label': `Previous page of ${name}` },
      '← Previous',
    );
    this.nextButton = h(
      'button',
      { type: 'button', class: 'secondary', 'aria-label': `Next page of ${name}` },
      'Next →',
    );
    this.label = h('span', { class: 'muted' });
    this.previousButton.addEventListener('click', () => {
      if (this.index === 0) return;
      this.index -= 1;
      onChange();
    });
    this.nextButton.addEventListener('click', () => {
      if (this.nextCursor === null) return;
      this.cursors[this.index + 1] = this.nextCursor;
      this.index += 1;
      onChange();
    });
    this.element = h(
      'nav',
      { class: 'pager', 'aria-label': `Pages of ${name}` },
      this.previousButton,
      this.label,
      this.nextButton,
    );
    this.update(null);
  }

  /** Back to the first page (the filters changed). */
  reset(): void {
    this.cursors.length = 1;
    this.index = 0;
  }

  /** The cursor of the page to show. */
  get cursor(): string | undefined {
    return this.cursors[this.index];
  }

  /** Records the `next_cursor` of the page just shown. */
  update(nextCursor: string | null): void {
    this.nextCursor = nextCursor;
    this.previousButton.disabled = this.index === 0;
    this.nextButton.disabled = nextCursor === null;
    this.label.textContent = `Page ${this.index + 1}`;
    // One page only: the controls would be noise.
    this.element.hidden = this.index === 0 && nextCursor === null;
  }
}
