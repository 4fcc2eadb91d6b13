// preload: a library whose constructor says it was loaded, for
// ld.so --preload.
#include <stdio.h>

__attribute__((constructor)) static void loaded(void) {
	fputs("PRELOADED\n", stderr);
}
