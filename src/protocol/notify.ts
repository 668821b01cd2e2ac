/** Bounds of notify watches (supervisor/requests/notify.ts), shared by the runtime and the supervisor. */

/** Watches one job may have: each is a scan of every new line, so they are few. */
export const MAX_NOTIFY_WATCHES = 8;
/** After a watch tells a match, later matches within this window go as one event with a count. */
export const NOTIFY_FOLD_MS = 500;
/** A told line is cut to this many characters: a notice carries the matching line, nothing more. */
export const NOTIFY_LINE_CHARS = 500;
