/* A second translation unit that only includes the header (twice, to check
 * the include guard) and calls into the implementation compiled elsewhere:
 * proves the declarations and the implementation agree and link. */
#include "../tcompile.h"
#include "../tcompile.h"

int tc_header_use(void);
int tc_header_use(void) {
    tc_ctx *ctx = tc_ctx_create(NULL);
    int64_t shape[1] = {4};
    tc_tensor *x = tc_ones(ctx, TC_F32, 1, shape);
    int ok = tc_status(x) == TC_OK && tc_numel(x) == 4 && tc_item(tc_sum(ctx, x, 0, NULL, 0)) == 4.0;
    tc_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
