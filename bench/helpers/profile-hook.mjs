/**
 * `--cpu-prof DIR`: loaded into every Node process of the run (through NODE_OPTIONS=--import, as
 * `--cpu-prof` itself is not allowed there), so the supervisor is profiled too. Starts the V8
 * profiler and writes DIR/<script>-<pid>.cpuprofile when the process exits normally (a process
 * killed by a signal leaves none). The inspector session of the main thread answers
 * synchronously, so this works inside an 'exit' handler.
 */
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';

const dir = process.env.HEPH_BENCH_PROF_DIR;
if (dir) {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 100 });
  session.post('Profiler.start');
  const script = process.argv[1] ? path.basename(path.dirname(process.argv[1])) + '-' + path.basename(process.argv[1], path.extname(process.argv[1])) : 'eval';
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error) fs.writeFileSync(path.join(dir, `${script}-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
