/**
 * Every sentence a model or a person reads from heph-jobs, in one place: the reports' lines, the
 * tools' refusals and errors, the lock table's explanations, the limitations of a containment
 * mode. Code elsewhere decides *what* happened and passes facts here; only this module decides how
 * it is said, so the wording stays consistent and a change of wording is a change of one file.
 *  *
 * Sections: reports · tools · errors · locks · containment. (The tools' descriptions and the
 * descriptions of their input fields are part of the schemas, in src/tools/schema.ts.)
 */
export * from './reports.js';
export * from './tools.js';
export * from './errors.js';
export * from './locks.js';
export * from './containment.js';
export * from './lock-dir.js';
export * from './limits.js';
