/* The implementation translation unit for tests/header_use.c. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include <stdio.h>

int tc_header_use(void);
int main(void) {
    int r = tc_header_use();
    printf("%d passed, %d failed\n", r == 0, r != 0);
    return r;
}
