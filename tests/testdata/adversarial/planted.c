// planted: a program of the workload's own, copied under names that
// wrappers have (python3, ld-linux-x86-64.so.2). It says that it ran.
#include <stdio.h>

int main(void) {
	puts("PLANTED program ran");
	return 0;
}
