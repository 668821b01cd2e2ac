/**
 * Small helpers every section of the wording uses: counts, sentences, values shown as JSON.
 */

/** `3 lines`, `1 line`. */
export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/** Ends a clause from elsewhere (an error message) as a sentence. */
export function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/** An error's message, or the thrown value as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A value someone handed us, as JSON when it has a JSON form. */
export function asJson(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** `{"id": 0}`: a job's id as the tools take it. */
export function idArg(id: number): string {
  return `{"id": ${id}}`;
}

/** `is gone` / `are gone`, agreeing with `count`. */
export function gone(count: number): string {
  return count === 1 ? 'is gone' : 'are gone';
}

/** Plain text of the verb a refused call did not do. */
export function didNot(tool: string): string {
  if (tool === 'background') return 'started';
  if (tool === 'job_kill' || tool === '/job-kill') return 'stopped';
  if (tool === 'job_input') return 'written';
  if (tool === 'job_restart') return 'restarted';
  return 'read';
}

/**
 * `820 KB`, `12 MB`, `1.2 GB`: binary units (1 KB = 1024 bytes, as ps and top count), one decimal
 * below 10 of the unit, whole numbers from 10 on.
 */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let unit = 0;
  let value = Math.max(0, bytes);
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${Math.round(value)} B`;
  let text = value < 10 ? value.toFixed(1) : String(Math.round(value));
  // 1023.7 KB rounds to 1024 KB: show it as the next unit instead.
  if (Number(text) >= 1024 && unit < units.length - 1) {
    unit++;
    text = (value / 1024).toFixed(1);
  }
  return `${text} ${units[unit]}`;
}
