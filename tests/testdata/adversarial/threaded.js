// threaded.js GIT: node with a worker thread spinning and a timer running
// execs "GIT status" (allowed) and "GIT push" (denied), synchronously and
// asynchronously.
'use strict';
const { execFileSync, execFile } = require('child_process');
const { Worker } = require('worker_threads');

const git = process.argv[2];
const workers = [0, 1].map(() => new Worker('let x = 0; for (;;) x++;', { eval: true }));
let ticks = 0;
const timer = setInterval(() => { ticks++; }, 1);

let ok = 0;
for (let i = 0; i < 10; i++) {
  try {
    if (execFileSync(git, ['status']).toString() === 'git ran: status\n') ok++;
  } catch (e) {
    console.log('allowed error:', e.code || e.message);
  }
}
console.log(`allowed ok=${ok}/10`);

let refused = 0;
for (let i = 0; i < 10; i++) {
  try {
    console.log('denied ran:', execFileSync(git, ['push'], { stdio: 'pipe' }).toString().trim());
  } catch (e) {
    if (e.code === 'EPERM') refused++;
    else console.log('denied error:', e.code, e.message);
  }
}
console.log(`denied refused=${refused}/10`);

execFile(git, ['status'], (err, stdout) => {
  console.log('async allowed:', err ? err.code : stdout.trim());
  const finish = () => {
    clearInterval(timer);
    console.log(`timer ticked=${ticks > 0}`);
    Promise.all(workers.map((w) => w.terminate())).then(() => process.exit(0));
  };
  // Node throws spawn errors other than EACCES/ENOENT/... synchronously.
  try {
    execFile(git, ['push'], (err2, stdout2) => {
      console.log('async denied:', err2 ? err2.code : 'ran ' + stdout2.trim());
      finish();
    });
  } catch (e) {
    console.log('async denied:', e.code);
    finish();
  }
});
