// The Markdown the generated docs share: inline code and table cells.

/** `text` as inline code. */
export const code = (text: string) => `\`${text}\``;

/** A table cell: no line breaks, and a literal | escaped. */
export const cell = (text: string) => text.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");
