#!/usr/bin/env bash
# A short tour of cordon's main job on the built-in default policy.
set -u
cordon=./bin/cordon
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say "cordon -- sh -c 'echo hello from the sandbox; ls / | head -3'"
$cordon -- sh -c 'echo hello from the sandbox; ls / | head -3'
echo "(exit $?)"

say "cordon -- bash -c 'echo a nested exec of the built-in deny list:; reboot'"
$cordon -- bash -c 'echo a nested exec of the built-in deny list:; reboot'
echo "(exit $? — reboot never started)"

say "cordon --deny 'git push' -- sh -c 'env git push origin main'"
$cordon --deny 'git push' -- sh -c 'env git push origin main'
echo "(exit $? — the denial names the rule)"

say "cordon --default deny --allow sh --allow echo -- sh -c 'echo allowed; cat /etc/hostname'"
$cordon --default deny --allow sh --allow echo -- sh -c 'echo allowed; cat /etc/hostname'
echo "(exit $? — allowlist mode)"
exit 0
