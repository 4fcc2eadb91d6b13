// fakeprog stands in for a program a rule names (git, an interpreter...).
// Built with -DNAME='"git"', it prints "git ran: ARGS" like the shell fakes
// in exec_test.go. Each NAME gives a file with different content, so the
// supervisor's recognition of renamed copies by content does not confuse
// two fakes.
#include <stdio.h>

#ifndef NAME
#define NAME "prog"
#endif

int main(int argc, char **argv) {
	fputs(NAME " ran:", stdout);
	for (int i = 1; i < argc; i++)
		printf(" %s", argv[i]);
	putchar('\n');
	return 0;
}
