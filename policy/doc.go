// Package policy parses, compiles and evaluates cordon's exec rules, and
// holds the files part of a policy (FilePolicy: what the sandbox may not
// read or change, extra binds, presets, the built-in lists) with the
// matching of paths against it; the runner applies it to the file system.
//
// A Policy is compiled once and is then immutable and safe for concurrent
// use: the supervisor calls Decide for every execve/execveat it intercepts.
// The package is pure: it performs no system calls, starts no processes and
// reads no files of its own. What it needs to know about the executable (the
// resolved path, the file's identity, the content of other files) is passed
// in through Exec and the Files interface, so the package builds and is
// tested on any OS, without cgo.
//
// # Rules
//
// A rule is a decision (allow, ask, deny) and a pattern of words, split like
// a shell would ('...' and "..." quote, \ escapes). The first word names a
// program; the others are matched against the arguments (never against
// argv[0], which the caller chooses freely):
//
//   - A program word without '/' names a program by its executable's name.
//     With Files, it also matches the same file under another name (a
//     symlink or hard link) or a copy of it (same content). A word with '/'
//     is an absolute path, matched against the resolved path. Both may be
//     globs.
//   - The arguments are classified the way the program parses them (see the
//     option tables in tools.go): options before the subcommand that take a
//     value consume it, "--" ends options, --opt=value is one word.
//   - Positional words in a rule match the exec's positional words in
//     order. For programs with subcommands (git, docker, ...) the rule's
//     first word must be the subcommand: "git push" does not match
//     "git log --grep push".
//   - Option words (starting with '-') match anywhere after the program.
//     --opt=value also matches "--opt value"; --opt= requires some value.
//   - KEY= tests for a word KEY=... anywhere (dd if=); KEY=glob tests its
//     value.
//   - * matches any run of characters, ? one character, {a,b} gives
//     alternatives (also for the program), "..." skips any number of
//     positional words.
//
// Deny and ask rules match every spelling the program would accept;
// allow rules match only what is written. So deny and ask rules also match
// abbreviated long options (--forc for --force, for programs that accept
// abbreviations), short options inside clusters (-f in -fu; -rf means both
// -r and -f), abbreviated subcommands (npm publ) and extra positional words
// between theirs. An allow rule that names arguments is strict: every
// option and positional word of the exec must be one it names, so
// "allow: git push origin x" matches neither "git push --force origin x"
// nor "git push origin x y". "..." accepts any words at its place and any
// options after the positional words before it; the word [options]
// accepts any options; a bare program allow rule accepts any arguments.
// A trailing "$" makes any rule exact (no words beyond those it names).
//
// # Meanings
//
// A rule whose only word is @NAME names a meaning instead of a spelling:
// @git-force-push, @block-device-write, @privileged-container, @power-off
// (see Meanings). Each is a predicate written with the programs' real
// semantics, over the programs it lists.
//
// # Option tables, ssh
//
// Config.Tools (policy key programs) gives option tables for programs
// without a built-in one. ssh has its own: the first positional word is the
// destination, matched by host; the words after it are the remote command,
// matched as a rule for the program they name. scp, sftp and rsync are
// decided by the ssh rules of the hosts they connect to. An unknown git
// subcommand is decided as what git's autocorrect could run.
//
// # Decisions
//
// The strictest matching rule wins: deny over ask over allow, and the
// earliest such rule is reported. The policy's default applies when nothing
// matches. Rules imported from a fence config's command.allow are overrides,
// as in fence: they win over deny and ask.
//
// # Programs that run other programs
//
// A dynamic loader run as a program (ld-linux-x86-64.so.2 PROG ARGS, with
// or without loader options) is decided as PROG with ARGS (and the argv[0]
// its --argv0 gives). A multi-call program (busybox, toybox, and systemctl
// started as reboot, poweroff, halt, shutdown, telinit or runlevel) is
// decided as the applet argv[0] names, without a leading dash, since that
// is what it runs; this is the one place argv[0] counts, and only for a
// file proven to be that program. Rules for its other names (reboot is a
// symlink to systemctl) do not follow its identity to every call of it.
// "python -m MOD" is also decided as MOD. An exec that nests more than
// eight such wrappers is denied (UnwrapRule). Git's
// git-NAME argv[0] dispatch and aliases given with -c alias.NAME=... are
// expanded.
package policy
