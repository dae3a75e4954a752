/* The implementation translation unit for tests/header_use.c.  With
 * TCOMPILE_STATIC every function is private to one translation unit, so the
 * user code is included here instead of linked. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include <stdio.h>
#ifdef TCOMPILE_STATIC
#include "header_use.c"
#else
int tc_header_use(void);
#endif

int main(void) {
    int r = tc_header_use();
    printf("%d passed, %d failed\n", r == 0, r != 0);
    return r;
}
