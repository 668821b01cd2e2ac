/**
 * The window of the pseudo-terminal a `tty: true` job runs on (TIOCSWINSZ; `stty size` says
 * "40 120"). Both sides read it: the supervisor sets it, the tools tell the model. 120 columns:
 * wide enough that tables and compiler messages are not wrapped, narrow enough that a progress
 * bar drawn across the width stays a short line. It never changes: nobody resizes this terminal.
 */
export const TERMINAL_COLUMNS = 120;
export const TERMINAL_ROWS = 40;
