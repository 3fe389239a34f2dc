// @ts-check
/** Small DOM helpers: build a node in one call, and write text only when it changed. */

/**
 * `el("td", { class: "num", "data-field": "inflight" }, "0")`.
 * @param {string} tag
 * @param {Record<string, string | undefined>} [attrs]
 * @param {...(Node | string)} children
 * @returns {HTMLElement}
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) if (value !== undefined) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

/**
 * Sets `node.textContent` when it differs (a write per second per number would otherwise restyle
 * every cell, and screen readers re-announce live regions on any write).
 * @param {Element | null | undefined} node
 * @param {string} text
 */
export function setText(node, text) {
  if (node && node.textContent !== text) node.textContent = text;
}

/**
 * Sets an attribute when it differs.
 * @param {Element | null | undefined} node
 * @param {string} name
 * @param {string} value
 */
export function setAttr(node, name, value) {
  if (node && node.getAttribute(name) !== value) node.setAttribute(name, value);
}

/**
 * A bar segment's width as a share of `of` (0–100 %), through the CSSOM (the page's CSP allows no
 * inline style attributes).
 * @param {HTMLElement | null | undefined} node
 * @param {number} value
 * @param {number} of
 */
export function setShare(node, value, of) {
  if (!node) return;
  const pct = of > 0 ? Math.max(0, Math.min(100, (value / of) * 100)) : 0;
  const width = `${pct.toFixed(1)}%`;
  if (node.style.width !== width) node.style.width = width;
}

/**
 * The element under `root` with `data-field="name"`.
 * @param {ParentNode} root
 * @param {string} name
 * @returns {HTMLElement | null}
 */
export function field(root, name) {
  return root.querySelector(`[data-field="${name}"]`);
}

/** Seconds with one decimal, e.g. `3.2 s`. @param {number} s */
export const secs = (s) => `${s.toFixed(s >= 100 ? 0 : 1)} s`;

/** A count, or `–` when there is none. @param {number | null | undefined} n */
export const count = (n) => (n === null || n === undefined ? "–" : String(n));
