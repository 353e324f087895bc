// A tiny element builder: enough to write views as plain functions without a framework. Strings
// become text nodes (never HTML), so data from the API cannot inject markup.

export type Child = Node | string | number | null | undefined | false | Child[];
type AttrValue = string | number | boolean | null | undefined;
type Listener = (event: Event) => void;
export type Attrs = Record<string, AttrValue | Listener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined)
      element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else if (child !== null && child !== undefined && child !== false)
      parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let idCounter = 0;
/** A unique element id, for label/aria wiring. */
export function uid(prefix: string): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

/** Grey placeholder blocks of a fixed size, so the layout does not jump when data arrives. */
export function skeleton(className: string, count = 1): HTMLElement[] {
  return Array.from({ length: count }, () =>
    h('div', { class: `skeleton ${className}`, 'aria-hidden': 'true' }),
  );
}
